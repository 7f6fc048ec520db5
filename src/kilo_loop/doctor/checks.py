"""`kilo-loop doctor`'s checks as pure functions: facts gathered by `doctor.probe` in, `Check`s out.

A check is one line: its name, ✓ / ! / ✗, what was found, and the fix. The exit code is 0 when
nothing failed, 1 when something did, and 2 when only warnings remain and `--strict` asked for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail"]
MARKS: dict[Status, str] = {"ok": "✓", "warn": "!", "fail": "✗"}

# The flags the loop passes, per backend, and the help text that lists them (the subcommand's).
# `A|B`: the loop passes A; a help text showing only B means A is hidden or renamed (a warning).
LOOP_FLAGS: dict[str, tuple[str, ...]] = {
    "kilo": ("--format", "--auto", "--agent", "--model", "--variant", "--thinking", "--title", "--session"),
    "opencode": ("--format", "--auto", "--agent", "--model", "--variant", "--thinking",
                 "--title", "--session"),
    "claude": ("--print", "--output-format", "--verbose", "--settings", "--dangerously-skip-permissions",
               "--model", "--resume"),
    "codex": ("--json", "--config", "--model", "--dangerously-bypass-hook-trust"),
    "gemini": ("--output-format", "--yolo", "--model", "--resume", "--prompt", "--skip-trust"),
    "cursor": ("--print", "--output-format", "--force", "--model", "--resume"),
}
HELP_ARGS: dict[str, tuple[str, ...]] = {
    "kilo": ("run", "--help"), "opencode": ("run", "--help"), "codex": ("exec", "--help"),
    "claude": ("--help",), "gemini": ("--help",), "cursor": ("--help",),
}


@dataclass(frozen=True)
class Check:
    check: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def line(check: Check) -> str:
    text = f"{MARKS[check.status]} {check.check}: {check.detail}"
    return f"{text} — fix: {check.fix}" if check.fix and check.status != "ok" else text


def exit_code(checks: Iterable[Check], strict: bool) -> int:
    statuses = {check.status for check in checks}
    if "fail" in statuses:
        return 1
    return 2 if strict and "warn" in statuses else 0


# ----------------------------------------------------------------------------- agent CLIs
def binary(runtime: str, path: str | None, version: str | None, install: str, variable: str,
           requested: str | None = None) -> Check:
    """`requested`: what `variable` names, when it is set (then that path is the one not found)."""
    name = f"{runtime}: binary"
    if path is None and requested:
        return Check(name, "fail", f"not found: {variable} names {requested}",
                     f"point {variable} at the installed binary, or unset it ({install})")
    if path is None:
        return Check(name, "fail", "not found", f"{install}, or point {variable} at it")
    if not version:
        return Check(name, "warn", f"{path} (its --version printed nothing)", f"check that {path} runs")
    return Check(name, "ok", f"{path} {version}")


def agent_clis(installed: Iterable[str], missing: Iterable[str], picked: str, install: str) -> Check:
    """The summary `doctor` shows when it checks every backend: one installed CLI is enough; which one a
    run would use. Missing CLIs are not failures of their own then."""
    installed, missing = list(installed), list(missing)
    absent = f"; not installed: {', '.join(missing)}" if missing else ""
    if not installed:
        return Check("agent CLIs", "fail", f"none installed; one is enough, and a run would use {picked}",
                     f"{install} (or another: kilo-loop init shows each one's install command)")
    uses = f"a run would use {picked}" if picked in installed else f"a run would use {picked}, which is not installed"
    status: Status = "ok" if picked in installed else "fail"
    return Check("agent CLIs", status, f"{', '.join(installed)} installed (one is enough); {uses}{absent}",
                 "" if status == "ok" else f"{install}, or pass --runtime / set runtime in config.json")


def _mentions(help_text: str, flag: str) -> bool:
    """As a whole word: `--model` is not `--models`."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text) is not None


def missing_flags(help_text: str, flags: Iterable[str]) -> list[str]:
    """The flags (`A|B`: neither name) a help text does not mention."""
    return [flag.split("|")[0] for flag in flags if not any(_mentions(help_text, f) for f in flag.split("|"))]


def renamed_flags(help_text: str, flags: Iterable[str]) -> list[str]:
    """`A|B` entries whose help shows B but not A (A is hidden or on its way out)."""
    return [flag for flag in flags if "|" in flag and not _mentions(help_text, flag.split("|")[0])
            and any(_mentions(help_text, f) for f in flag.split("|")[1:])]


def flags(runtime: str, help_text: str | None, version: str | None) -> Check:
    name = f"{runtime}: flags the loop uses"
    command = " ".join((runtime, *HELP_ARGS[runtime]))
    if help_text is None:
        return Check(name, "fail", f"`{command}` failed", f"reinstall {runtime}")
    missing = missing_flags(help_text, LOOP_FLAGS[runtime])
    label = f"{runtime} {version}" if version else runtime
    if missing:
        return Check(name, "fail", f"{label} does not accept {', '.join(missing)}",
                     f"upgrade {runtime} (the loop passes {', '.join(missing)})")
    renamed = renamed_flags(help_text, LOOP_FLAGS[runtime])
    if renamed:
        pairs = ", ".join(f"{f.split('|')[0]} (documented: {f.split('|')[1]})" for f in renamed)
        return Check(name, "warn", f"{label} hides {pairs}", "none needed today; the loop may need the new name")
    return Check(name, "ok", f"all {len(LOOP_FLAGS[runtime])} accepted by `{command}`")


ProviderView = Literal["unavailable", "leaked", "missing", "unresolved", "ok"]


def provider(runtime: str, view: ProviderView, provider_id: str = "loop") -> Check:
    """What the CLI's own `debug config` showed with the injected config and a probe key in its env."""
    name = f"{runtime}: provider injection"
    if view == "unavailable":
        return Check(name, "warn", f"`{runtime} debug config` is not available", "upgrade the CLI to verify it")
    if view == "leaked":
        return Check(name, "fail", "the API key is in the injected config JSON",
                     "report this: the key must only be in the child's environment")
    if view == "missing":
        return Check(name, "fail", f"the injected provider `{provider_id}` is not in the CLI's resolved config",
                     "set providerConfigMode legacy_env for an older CLI")
    if view == "unresolved":
        return Check(name, "fail", f"the CLI did not resolve `{{env:}}` references in provider `{provider_id}`",
                     "set providerConfigMode legacy_env for an older CLI")
    return Check(name, "ok", f"provider `{provider_id}` resolved by `{runtime} debug config`; "
                 "the key comes from the environment only")


def usage_db(runtime: str, path: str, problem: str | None) -> Check:
    name = f"{runtime}: usage database"
    if problem is not None:
        return Check(name, "warn", problem, "set KILO_LOOP_USAGE_DB_PATH to kilo's database (`kilo db path`)")
    return Check(name, "ok", f"{path} readable")


def server(runtime: str, help_ok: bool) -> Check:
    name = f"{runtime}: server transport"
    if not help_ok:
        return Check(name, "warn", f"`{runtime} serve --help` failed", "use --transport run, or upgrade the CLI")
    return Check(name, "ok", f"`{runtime} serve` available")


# ----------------------------------------------------------------------------- the machine
def git(version: str | None) -> Check:
    if not version:
        return Check("git", "fail", "git not found", "install git (apt-get install git)")
    return Check("git", "ok", version)


def port(number: int, free: bool) -> Check:
    name = "dashboard port"
    if not free:
        return Check(name, "warn", f"127.0.0.1:{number} is in use", "pass --port <another> or stop what holds it")
    return Check(name, "ok", f"127.0.0.1:{number} free")


def python(version: tuple[int, int, int]) -> Check:
    text = ".".join(map(str, version))
    if version[:2] < (3, 11):
        return Check("python", "fail", f"Python {text}", "use Python 3.11 or newer")
    return Check("python", "ok", f"Python {text}")


def dependencies(versions: Mapping[str, str | None]) -> Check:
    missing = sorted(name for name, version in versions.items() if not version)
    if missing:
        return Check("dependencies", "fail", f"missing: {', '.join(missing)}", "reinstall kilo-loop (./kilo-loop)")
    return Check("dependencies", "ok", ", ".join(f"{name} {version}" for name, version in versions.items()))


def sandbox(usable: bool, detail: str, fix: str, mode: str = "auto") -> Check:
    """bubblewrap and user namespaces: the jail (`--sandbox`); required with `--sandbox bwrap`."""
    if mode == "off":
        return Check("sandbox", "warn", "--sandbox off: only the guard stands between the agent and this machine",
                     "use --sandbox auto")
    if usable:
        return Check("sandbox", "ok", f"{detail}: agents and verify run in the jail")
    return Check("sandbox", "fail" if mode == "bwrap" else "warn", f"no jail: {detail}", fix)


def sandbox_network(complaint: str | None, mode: str = "full") -> Check:
    """`--sandbox-network model|none`: the loop's proxy reached from a jail with its own network."""
    if complaint is None:
        return Check("sandbox network", "ok", f"the jail's own network reaches the loop's proxy (network {mode})")
    return Check("sandbox network", "fail" if mode != "full" else "warn", complaint,
                 "use --sandbox-network full, or report the message")


def codex_sandbox(complaint: str | None, jailed: bool, fix: str) -> Check:
    """Codex's own sandbox: switched off inside the loop's jail, required to work without it."""
    name = "codex sandbox"
    if jailed:
        return Check(name, "ok", "switched off inside the loop's jail (danger-full-access there, never outside)")
    if complaint is None:
        return Check(name, "ok", "`codex sandbox -- true` runs")
    return Check(name, "fail", f"`codex sandbox -- true` failed: {complaint}", fix)
