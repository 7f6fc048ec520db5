"""kubernetes: deleting or draining cluster resources, uninstalling releases."""

from __future__ import annotations

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs.paths import PathPolicy
from kilo_loop.guard.packs.rules import Pack, Rule
from kilo_loop.guard.shell.model import SimpleCommand

_ZERO_REPLICAS = LazyRegex(r"[\"']?replicas[\"']?\s*:\s*0\b")

_VALUE = ("-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-l", "--selector", "-o",
          "--output", "-f", "--filename", "-c", "--container", "-s", "--server", "--as", "--token")
_DELETES = "changes a cluster: deletes or evicts resources"


def dry_run(args: tuple[str, ...]) -> bool:
    """`--dry-run`, `--dry-run=client|server` (kubectl, helm): nothing is changed; `--dry-run=none` is a real run."""
    dry = False
    for arg in args:  # the last one given wins
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name == "--dry-run":
            dry = not (eq and value.lower() in ("none", "false", "0"))
    return dry


def _real(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    return None if dry_run(cmd.args) else ""
PACK = Pack(
    name="kubernetes",
    title="kubernetes: kubectl delete/drain/replace --force, helm uninstall",
    rules=(
        Rule("kubectl-delete", _DELETES, ("kubectl", "oc", "k"), words=("delete",), check=_real),
        Rule("kubectl-delete", _DELETES, ("kubectl", "oc", "k"), words=("drain",), check=_real),
        Rule("kubectl-delete", _DELETES, ("kubectl", "oc", "k"), words=("replace",), flags=("--force",)),
        Rule("kubectl-delete", _DELETES, ("kubectl", "oc", "k"), words=("apply",), flags=("--prune",)),
        Rule("kubectl-delete", _DELETES, ("kubectl", "oc", "k"), words=("scale",),
             check=lambda c, p: "" if any(a in ("--replicas=0",) for a in c.args) or
             ("--replicas" in c.args and c.args[c.args.index("--replicas") + 1:][:1] == ("0",)) else None),
        Rule("helm-uninstall", "uninstalls a release and its resources", ("helm",), words=("uninstall",), check=_real),
        Rule("helm-uninstall", "uninstalls a release and its resources", ("helm",), words=("delete",), check=_real),
        Rule("helm-uninstall", "uninstalls a release and its resources", ("helm",), words=("del",), check=_real),
        Rule("helm-uninstall", "uninstalls a release and its resources", ("helm",), words=("un",), check=_real),
        Rule("helm-uninstall", "uninstalls a release and its resources", ("helm",), words=("uninstall",), check=_real),
        Rule("kubectl-delete", "deletes what Flux manages", ("flux",), words=("delete",), check=_real),
        Rule("kubectl-delete", "deletes backups or restores", ("velero",), words=("delete",), check=_real),
        Rule("kubectl-delete", "deletes backups or restores", ("velero",), words=("backup", "delete")),
        Rule("kubectl-delete", "uninstalls the mesh from the cluster", ("istioctl", "linkerd", "cilium"),
             words=("uninstall",), check=_real),
        Rule("kubectl-delete", "uninstalls the mesh from the cluster", ("istioctl",), words=("x", "uninstall")),
        Rule("kubectl-delete", "scales a workload to zero", ("kubectl", "oc", "k"), words=("patch",),
             check=lambda c, p: "" if any(_ZERO_REPLICAS.search(a) for a in c.args) else None),
        Rule("kubectl-delete", "a NoExecute taint evicts every pod from the node", ("kubectl", "oc", "k"),
             words=("taint",), check=lambda c, p: "" if any(a.endswith(":NoExecute") for a in c.args) else None),
        Rule("kubectl-delete", "deletes an application and its resources", ("argocd",), words=("app", "delete")),
        Rule("kubectl-delete", "uninstalls Flux and what it manages", ("flux",), words=("uninstall",), check=_real),
        Rule("cluster-delete", "deletes a whole cluster", ("eksctl",), words=("delete",), check=_real),
        Rule("cluster-delete", "wipes the node's cluster state", ("kubeadm",), words=("reset",)),
        Rule("helm-uninstall", "uninstalls every release of the helmfile", ("helmfile",), words=("destroy",)),
        Rule("helm-uninstall", "uninstalls every release of the helmfile", ("helmfile",), words=("delete",), check=_real),
        Rule("cluster-delete", "deletes a whole cluster", ("kind", "k3d", "ctlptl"), words=("delete",), check=_real),
        Rule("cluster-delete", "deletes a whole cluster", ("k3d",), words=("cluster", "delete")),
        Rule("cluster-delete", "deletes a whole cluster", ("minikube",), words=("delete",), check=_real),
    ),
    value_options={"kubectl": _VALUE, "oc": _VALUE, "k": _VALUE, "helm": _VALUE},
)
