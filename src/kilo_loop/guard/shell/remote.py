"""Remote runners: commands whose code runs on another machine or in a container.

`ssh host CMD`, `kubectl exec POD -- CMD`, `docker exec C CMD`, `gcloud compute ssh VM -- CMD`,
`ansible HOSTS -m shell -a CMD`, …; each result names where the code runs (`remote`).
"""

from __future__ import annotations

import shlex

from kilo_loop.guard.shell.model import UNKNOWN, parse_options
from kilo_loop.guard.shell.script_options import option_script
from kilo_loop.guard.shell.unwrapped import NOEXEC, Unwrap, Unwrapped

_SSH_VALUE = "BbcDEeFIiJLlmOoPpQRSWw"


def _ssh(args: list[str]) -> Unwrapped:
    _opts, i = parse_options(args, _SSH_VALUE)
    local = tuple(v.split("=", 1)[1] for k, v in _ssh_options(args) if k in ("proxycommand", "localcommand"))
    remote_command = [v.split("=", 1)[1] for k, v in _ssh_options(args) if k == "remotecommand"]
    if i >= len(args):
        return Unwrapped([], noexec=True, local_scripts=local)
    host, command = args[i], args[i + 1:]
    command = command[1:] if command[:1] == ["--"] else command
    command = command or remote_command
    if not command:  # the remote login shell reads its commands from stdin
        return Unwrapped([], reads_stdin=True, remote=f"ssh {host}", local_scripts=local)
    return Unwrapped([], script=" ".join(command), remote=f"ssh {host}", local_scripts=local)


def _ssh_options(args: list[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for index, arg in enumerate(args):
        value = arg[2:] if arg.startswith("-o") and len(arg) > 2 else (
            args[index + 1] if arg == "-o" and index + 1 < len(args) else None)
        if value and "=" in value:
            found.append((value.split("=", 1)[0].strip().lower(), value))
        elif value and " " in value:
            key, _, rest = value.partition(" ")
            found.append((key.lower(), f"{key}={rest}"))
    return found


_KUBECTL_GLOBAL = frozenset({"namespace", "context", "kubeconfig", "cluster", "user", "server", "as", "token"})


def _kubectl_exec(args: list[str]) -> Unwrapped | None:
    """`kubectl [-n NS] exec POD -- CMD…` (also `oc`, and `debug … -- CMD`), and `oc rsh POD CMD…`."""
    _, i = parse_options(args, "ns", _KUBECTL_GLOBAL)
    verb = args[i] if i < len(args) else ""
    if verb == "rsh" and len(args) > i + 2:
        return Unwrapped([], script=" ".join(args[i + 2:]), remote="oc rsh")
    if verb not in ("exec", "debug") or "--" not in args:
        return None
    command = args[args.index("--") + 1:]
    # an argv the container runs as it is (no shell joins it): quoted back into one shell string
    return Unwrapped([], script=shlex.join(command), remote="kubectl exec") if command else NOEXEC


def _container_exec(args: list[str]) -> Unwrapped | None:
    """`docker exec [opts] CONTAINER CMD…` (also `docker container exec`, `docker compose exec SERVICE CMD…`,
    podman, nerdctl)."""
    rest = args[1:] if args[:1] in (["container"], ["compose"]) else args
    if rest[:1] != ["exec"]:
        return None
    _, i = parse_options(rest[1:], "euwp", frozenset({"env", "env-file", "user", "workdir", "detach-keys",
                                                      "index", "project-name", "file"}))
    command = rest[1 + i + 1:]
    return Unwrapped([], script=shlex.join(command), remote="container exec") if command else NOEXEC


_RUN_VALUE_SHORT = "acehlmpuvw"
_RUN_VALUE_LONG = frozenset({
    "add-host", "annotation", "attach", "blkio-weight", "blkio-weight-device", "cap-add", "cap-drop", "cgroup-parent",
    "cgroupns", "cidfile", "cpu-period", "cpu-quota", "cpu-rt-period", "cpu-rt-runtime", "cpu-shares", "cpus",
    "cpuset-cpus", "cpuset-mems", "detach-keys", "device", "device-cgroup-rule", "device-read-bps",
    "device-read-iops", "device-write-bps", "device-write-iops", "dns", "dns-option", "dns-search", "domainname",
    "entrypoint", "env", "env-file", "expose", "gpus", "group-add", "health-cmd", "health-interval",
    "health-retries", "health-start-period", "health-timeout", "hostname", "ip", "ip6", "ipc", "isolation",
    "kernel-memory", "label", "label-file", "link", "link-local-ip", "log-driver", "log-opt", "mac-address",
    "memory", "memory-reservation", "memory-swap", "memory-swappiness", "mount", "name", "network", "network-alias",
    "oom-score-adj", "pid", "pids-limit", "platform", "publish", "pull", "restart", "runtime", "security-opt",
    "shm-size", "stop-signal", "stop-timeout", "storage-opt", "sysctl", "tmpfs", "ulimit", "user", "userns", "uts",
    "volume", "volume-driver", "volumes-from", "workdir", "service-ports", "project-name", "file", "profile"})
_MOUNTS = ("-v", "--volume", "--mount", "--volumes-from")


def _container_run(args: list[str]) -> Unwrapped | None:
    """`docker run [opts] IMAGE CMD…` (also `container run`, `compose run SERVICE CMD…`): with a host path or a
    volume mounted, what the command deletes there is the host's, so it is judged like `docker exec`'s."""
    rest = args[1:] if args[:1] in (["container"], ["compose"]) else args
    if rest[:1] != ["run"]:
        return None
    opts, i = parse_options(rest[1:], _RUN_VALUE_SHORT, _RUN_VALUE_LONG)
    mounted = any(k in opts for k in _MOUNTS) or args[:1] == ["compose"]
    command = rest[1 + i + 1:]
    entrypoint = opts.get("--entrypoint")
    if entrypoint:
        command = [entrypoint, *command]
    if not mounted or not command:
        return None
    return Unwrapped([], script=shlex.join(command), remote="container run")


def _container(args: list[str]) -> Unwrapped | None:
    return _container_exec(args) or _container_run(args)


def _remote_runner(host_opts: str, host_long: frozenset[str], label: str) -> Unwrap:
    """`mosh [opts] HOST -- CMD…`: the command after the host runs on that host."""
    def unwrap(args: list[str]) -> Unwrapped:
        _, i = parse_options(args, host_opts, host_long)
        command = args[i + 1:]
        command = command[1:] if command[:1] == ["--"] else command
        if i >= len(args) or not command:
            return NOEXEC
        return Unwrapped([], script=" ".join(command), remote=f"{label} {args[i]}")
    return unwrap


def _parallel_ssh(args: list[str]) -> Unwrapped:
    """`pssh -h HOSTS [opts] CMD`: the command runs through each host's shell."""
    _, i = parse_options(args, "hHlpoetxXOP", frozenset({"hosts", "host", "user", "par", "outdir", "errdir",
                                                        "timeout", "extra-args", "extra-arg", "option"}))
    return Unwrapped([], script=" ".join(args[i:]), remote="pssh") if args[i:] else NOEXEC


def _after_double_dash(label: str) -> Unwrap:
    """`fab -H host -- CMD`, `vagrant ssh -- CMD`: what follows `--` runs through the remote shell."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        if "--" not in args:
            return None
        command = args[args.index("--") + 1:]
        return Unwrapped([], script=" ".join(command), remote=label) if command else NOEXEC
    return unwrap


def _vagrant(args: list[str]) -> Unwrapped | None:
    if args[:1] == ["ssh"] and "--" in args:
        return _after_double_dash("vagrant ssh")(args)
    return option_script(("-c", "--command"), remote="vagrant ssh", verbs=("ssh",))(args)


def _remote_runner_after(verbs: tuple[str, ...], keys: tuple[str, ...], label: str) -> Unwrap:
    """`heroku run CMD`, `fly ssh console -C CMD`, `gcloud compute ssh VM -- CMD`: a command on another machine."""
    def unwrap(args: list[str]) -> Unwrapped | None:
        if args[:len(verbs)] != list(verbs):
            return None
        rest = args[len(verbs):]
        if "--" in rest:
            command = rest[rest.index("--") + 1:]
            return Unwrapped([], script=" ".join(command), remote=label) if command else NOEXEC
        for index, arg in enumerate(rest):
            name, eq, value = arg.partition("=")
            if name in keys:
                return Unwrapped([], script=value if eq else (rest[index + 1] if index + 1 < len(rest) else ""),
                                 remote=label)
        if not keys:
            operands = [a for a in rest if not a.startswith("-")]
            return Unwrapped([], script=operands[0], remote=label) if operands else NOEXEC
        return NOEXEC
    return unwrap


def _ansible(args: list[str]) -> Unwrapped:
    """`ansible HOSTS -m shell -a 'CMD'`: the command, shell and raw modules run their argument."""
    values: dict[str, str] = {}
    hosts = "hosts"
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("-m", "--module-name", "-a", "--args"):
            values[name.lstrip("-")[:1]] = value if eq else (args[index + 1] if index + 1 < len(args) else "")
        elif index == 0 and not arg.startswith("-"):
            hosts = arg
    module = values.get("m", "command")
    command = values.get("a")
    if command is not None and module.rsplit(".", 1)[-1] == "file" and "state=absent" in command:
        path = next((w.split("=", 1)[1] for w in command.split() if w.startswith(("path=", "dest=", "name="))), "")
        return Unwrapped([], script=f"rm -rf {path or UNKNOWN}", remote=f"ansible {hosts}")
    if command is None or module.rsplit(".", 1)[-1] not in ("command", "shell", "raw", "script"):
        return NOEXEC
    return Unwrapped([], script=command, remote=f"ansible {hosts}")


def _scp(args: list[str]) -> Unwrapped | None:
    """scp (and sftp) hand `-o ProxyCommand=CMD` to ssh, which runs CMD here."""
    local = tuple(v.split("=", 1)[1] for k, v in _ssh_options(args) if k in ("proxycommand", "localcommand"))
    return Unwrapped([], noexec=True, local_scripts=local) if local else None


REMOTE_RUNNERS: dict[str, Unwrap] = {
    "scp": _scp,
    "sftp": _scp,
    "ssh": _ssh,
    "kubectl": _kubectl_exec,
    "oc": _kubectl_exec,
    "k": _kubectl_exec,
    "docker": _container,
    "podman": _container,
    "nerdctl": _container,
    "docker-compose": lambda args: _container_run(["compose", *args]),
    "gcloud": lambda args: _remote_runner_after(("compute", "ssh"), ("--command",), "gcloud compute ssh")(
        [*args[:2], *args[3:]] if args[:2] == ["compute", "ssh"] else args),
    "heroku": _remote_runner_after(("run",), (), "heroku run"),
    "az": lambda args: option_script(("--scripts",), remote="az vm run-command")(args) if args[:2] == [
        "vm", "run-command"] else None,
    "fly": _remote_runner_after(("ssh", "console"), ("-C", "--command"), "fly ssh"),
    "flyctl": _remote_runner_after(("ssh", "console"), ("-C", "--command"), "fly ssh"),
    "pdsh": lambda args: Unwrapped([], script=" ".join(args[parse_options(args, "wxlRfuNtS")[1]:]),
                                   remote="pdsh") if args else NOEXEC,
    "clush": lambda args: Unwrapped([], script=" ".join(args[parse_options(args, "wxgXlRfut")[1]:]),
                                    remote="clush") if args else NOEXEC,
    "salt": lambda args: Unwrapped([], script=" ".join(args[2:]), remote="salt") if len(args) > 2 and args[1] in (
        "cmd.run", "cmd.shell", "cmd.script") else None,
    "mosh": _remote_runner("p", frozenset({"ssh", "port", "predict", "server", "family", "bind-server"}), "mosh"),
    "autossh": _remote_runner("M" + _SSH_VALUE, frozenset(), "ssh"),
    "vagrant": _vagrant,
    "rsh": _ssh,
    "rlogin": _ssh,
    "remsh": _ssh,
    "tsh": lambda args: _ssh(args[1:]) if args[:1] == ["ssh"] else None,
    "pssh": _parallel_ssh,
    "parallel-ssh": _parallel_ssh,
    "fab": _after_double_dash("fab"),
    "ansible": _ansible,
}
