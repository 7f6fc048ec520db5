"""containers: pruning images/volumes, containers that mount the host's root or home, pushing images."""

from __future__ import annotations

from kilo_loop.guard.packs.paths import PathPolicy, system_path
from kilo_loop.guard.packs.rules import Pack, Rule
from kilo_loop.guard.shell.model import HOME, UNKNOWN, SimpleCommand, normalize_path

_ENGINES = ("docker", "podman", "nerdctl")
_VALUE = ("-v", "--volume", "--mount", "-e", "--env", "--name", "-p", "--publish", "-w", "--workdir", "-u",
          "--user", "--network", "--entrypoint", "-H", "--host", "--context", "-f", "--file", "--filter",
          "--platform", "-l", "--label")


def _host_mount(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    args = list(cmd.args)
    for index, arg in enumerate(args):
        spec = None
        if arg in ("-v", "--volume", "--mount") and index + 1 < len(args):
            spec = args[index + 1]
        elif arg.startswith(("--volume=", "--mount=", "-v")) and len(arg) > 2:
            spec = arg.split("=", 1)[1] if "=" in arg and arg.startswith("--") else arg[2:].removeprefix("=")
        if spec is None:
            continue
        source = _mount_source(spec)
        if source is not None and _broad_host_path(source):
            return f"it mounts the host's {source.replace(HOME, '~')} into the container"
    if "--privileged" in args or any(a.startswith("--pid=host") for a in args):
        return "a privileged container can change the host"
    if any(a == "--rootfs" or a.startswith("--rootfs=") for a in args):
        return "--rootfs runs the container on a host directory tree"
    caps = [v.upper() for i, a in enumerate(args) for v in ([args[i + 1]] if a == "--cap-add" and i + 1 < len(args)
                                                            else [a.split("=", 1)[1]] if a.startswith("--cap-add=")
                                                            else [])]
    if set(caps) & {"ALL", "SYS_ADMIN", "CAP_SYS_ADMIN", "SYS_MODULE", "SYS_RAWIO"}:
        return "a container with host-level capabilities can change the host"
    return None


def _mount_source(spec: str) -> str | None:
    if "source=" in spec or "src=" in spec:
        for part in spec.split(","):
            key, _, value = part.partition("=")
            if key in ("source", "src"):
                return value
        return None
    return spec.split(":", 1)[0] if ":" in spec else None


def _broad_host_path(source: str) -> bool:
    if source.startswith(HOME):
        return source.rstrip("/") in (HOME,) or "/." in source
    if UNKNOWN in source:
        return True
    path = normalize_path(source) if source.startswith("/") else None
    if path is None:
        return False
    # the engine's socket gives the container the whole host (it can start a privileged container)
    socket = path.endswith(("/docker.sock", "/podman.sock", "/containerd.sock"))
    return socket or system_path(path) or path in ("/home", "/root", "/Users", "/run", "/var/run")


def _listed_at_run_time(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`docker rm -f $(docker ps -aq)`: which containers or images go is only known when it runs."""
    return "it removes containers or images listed only when it runs (every one, as written)" if any(
        UNKNOWN in a for a in cmd.args) else None


def _pushes(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    pushed = any(a == "--push" or (a.startswith("--push=") and a != "--push=false") or
                 (a.startswith("--output=") and "push=true" in a) for a in cmd.args)
    return "it pushes the image it builds" if pushed else None


_PRUNE = "deletes images, containers, volumes or build cache for good"
PACK = Pack(
    name="containers",
    title="containers: docker/podman prune and volume removal, host-root mounts, image pushes",
    rules=(
        Rule("container-prune", _PRUNE, _ENGINES, words=("system", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("volume", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("volume", "rm")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("image", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("container", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("builder", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("network", "prune")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("buildx", "prune")),
        Rule("container-prune", "deletes every image, container, volume and network", _ENGINES,
             words=("system", "reset")),
        Rule("container-prune", _PRUNE, _ENGINES, words=("rm",), check=_listed_at_run_time),
        Rule("container-prune", _PRUNE, _ENGINES, words=("rmi",), check=_listed_at_run_time),
        Rule("container-prune", _PRUNE, _ENGINES, words=("container", "rm"), check=_listed_at_run_time),
        Rule("container-prune", _PRUNE, _ENGINES, words=("image", "rm"), check=_listed_at_run_time),
        Rule("container-prune", "removes the container's volumes with it", _ENGINES, words=("rm",),
             flags=("-v", "--volumes")),
        Rule("container-prune", "removes the container's volumes with it", _ENGINES, words=("container", "rm"),
             flags=("-v", "--volumes")),
        Rule("container-prune", "removes every container or image", _ENGINES, words=("rm",), flags=("-a", "--all")),
        Rule("container-prune", "removes every container or image", _ENGINES, words=("rmi",),
             flags=("-a", "--all")),
        Rule("container-prune", "removes the services' volumes with them", _ENGINES, words=("compose", "rm"),
             flags=("-v", "--volumes")),
        Rule("container-prune", "removes the services' volumes with them", ("docker-compose",), words=("rm",),
             flags=("-v", "--volumes")),
        Rule("container-prune", "removes every pod", _ENGINES, words=("pod", "rm"), flags=("-a", "--all")),
        Rule("container-prune", "deletes the container VM and everything in it", _ENGINES, words=("machine", "rm")),
        Rule("container-prune", "deletes the container VM and everything in it", _ENGINES,
             words=("machine", "reset")),
        Rule("container-prune", "removes a running stack or service", _ENGINES, words=("stack", "rm")),
        Rule("container-prune", "removes a running stack or service", _ENGINES, words=("stack", "down")),
        Rule("container-prune", "removes a running stack or service", _ENGINES, words=("service", "rm")),
        Rule("container-prune", "takes the node out of the swarm", _ENGINES, words=("swarm", "leave")),
        Rule("container-prune", "removes the compose project's volumes", ("docker-compose",), words=("down",),
             flags=("-v", "--volumes")),
        Rule("container-prune", "removes the compose project's volumes", _ENGINES, words=("compose", "down"),
             flags=("-v", "--volumes")),
        Rule("container-host-mount", "a container with the host's root or home mounted", _ENGINES,
             words=("run",), check=_host_mount),
        Rule("container-host-mount", "a container with the host's root or home mounted", _ENGINES,
             words=("create",), check=_host_mount),
        Rule("container-host-mount", "a container with the host's root or home mounted", _ENGINES,
             words=("container", "run"), check=_host_mount),
        Rule("container-host-mount", "a container with the host's root or home mounted", _ENGINES,
             words=("compose", "run"), check=_host_mount),
        Rule("container-host-mount", "a container with the host's root or home mounted", ("docker-compose",),
             words=("run",), check=_host_mount),
        Rule("container-push", "the agent never publishes images", ("skopeo",), words=("copy",),
             check=lambda c, p: "" if any(a.startswith("docker://") for a in c.args[-1:]) else None),
        Rule("container-push", "the agent never publishes images", ("crane", "gcrane", "oras"),
             check=lambda c, p: "" if c.args[:1] and c.args[0] in ("push", "copy", "cp", "append", "mutate",
                                                                   "delete", "tag") else None),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("push",)),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("image", "push")),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("manifest", "push")),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("buildx", "build"),
             check=_pushes),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("buildx", "bake"),
             check=_pushes),
        Rule("container-push", "the agent never publishes images", _ENGINES, words=("build",), check=_pushes),
    ),
    value_options={name: _VALUE for name in (*_ENGINES, "docker-compose")},
)
