"""The jail's policy → bubblewrap argv, without running anything: every backend's declared paths,
worktree layouts (plain, linked worktree, submodule refused), protect globs, reviewer mode, the
verify role, network modes, HOME replaced, environment filtered, mount order."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kilo_loop.agent.claude.backend import ClaudeBackend
from kilo_loop.agent.codex.backend import CodexBackend
from kilo_loop.agent.codex.backend import build_command as codex_command
from kilo_loop.agent.cursor.backend import CursorBackend
from kilo_loop.agent.gemini.backend import GeminiBackend
from kilo_loop.agent.kilo.backend import kilo_backend, opencode_backend
from kilo_loop.agent.protocol import AgentRequest
from kilo_loop.agent.serve import ServeBackend
from kilo_loop.sandbox.bwrap import bwrap_argv
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.layout import expand_protect, git_dirs, project_facts, static_prefix
from kilo_loop.sandbox.policy import (
    JailPaths,
    JailPolicy,
    ProjectFacts,
    SandboxError,
    describe,
    filter_env,
    resolve_home_path,
)
from kilo_loop.sandbox.refusals import refused_paths
from kilo_loop.sandbox.setup import backend_paths


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init")
    return project


def mounts(argv: list[str]) -> list[tuple[str, str]]:
    """(flag, path) of every mount option, in order."""
    out = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag in ("--bind", "--ro-bind"):
            out.append((flag, argv[i + 2]))
            i += 3
        elif flag in ("--tmpfs", "--dev", "--proc", "--chdir"):
            out.append((flag, argv[i + 1]))
            i += 2
        elif flag == "--cap-drop":
            i += 2
        else:
            i += 1
    return out


def last_mount_over(argv: list[str], path: Path) -> str:
    """The flag of the last mount that covers `path` (the one that wins)."""
    covering = [flag for flag, where in mounts(argv)
                if flag in ("--bind", "--ro-bind", "--tmpfs") and (path == Path(where) or Path(where) in path.parents)]
    return covering[-1]


def facts(project: Path, **kw: tuple[Path, ...]) -> ProjectFacts:
    base: dict[str, tuple[Path, ...]] = {"git_dirs": (project / ".git",), "loop_readonly": (), "loop_writable": (),
                                         "protected": (), "agent_configs": ()}
    base.update(kw)
    return ProjectFacts(project=project, **base)


# --------------------------------------------------------------------------- argv


def test_agent_jail_project_rw_git_ro_private_tmp_and_namespaces(tmp_path: Path) -> None:
    project = tmp_path / "p"
    argv = bwrap_argv(JailPolicy(facts(project)), ["kilo", "run"], "/usr/bin/bwrap")
    assert argv[0] == "/usr/bin/bwrap" and argv[-3:] == ["--", "kilo", "run"]
    assert argv[1:4] == ["--ro-bind", "/", "/"]
    for flag in ("--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--unshare-net" not in argv
    assert ("--tmpfs", "/tmp") in mounts(argv) and ("--proc", "/proc") in mounts(argv)
    assert last_mount_over(argv, project / "src" / "a.py") == "--bind"
    assert last_mount_over(argv, project / ".git" / "HEAD") == "--ro-bind"
    assert last_mount_over(argv, Path("/etc/passwd")) == "--ro-bind"
    assert ("--chdir", str(project)) in mounts(argv)


def test_project_under_tmp_is_bound_after_the_private_tmp(tmp_path: Path) -> None:
    project = Path("/tmp/x/project")
    argv = bwrap_argv(JailPolicy(facts(project)), ["true"])
    order = mounts(argv)
    assert order.index(("--tmpfs", "/tmp")) < order.index(("--bind", str(project)))


def test_programs_under_the_private_tmp_stay_visible_read_only_and_the_project_writable_over_them() -> None:
    """A clone or a venv under /tmp (CI's fresh clone, the CLIs installed into it) must still run in the
    jail: the directory below /tmp that holds each program is bound read-only over the private /tmp."""
    project = Path("/tmp/clone/work/project")
    programs = (Path("/tmp/clone/.tools/node_modules/.bin/kilo"), Path("/tmp/clone/.venv/bin/python"),
                Path("/var/tmp/tools/bin"), Path("/usr/bin/node"), Path("/tmp"))
    argv = bwrap_argv(JailPolicy(facts(project), programs=programs), ["kilo", "run"])
    assert last_mount_over(argv, programs[0]) == "--ro-bind"
    assert last_mount_over(argv, Path("/var/tmp/tools/bin/x")) == "--ro-bind"
    assert last_mount_over(argv, Path("/tmp/elsewhere/x")) == "--tmpfs"
    assert last_mount_over(argv, project / "src" / "a.py") == "--bind"
    assert [where for flag, where in mounts(argv) if flag == "--ro-bind"].count("/tmp/clone") == 1


@pytest.mark.parametrize("network, unshared", [("full", False), ("none", True), ("model", True)])
def test_network_modes(tmp_path: Path, network: str, unshared: bool) -> None:
    argv = bwrap_argv(JailPolicy(facts(tmp_path), network=network), ["true"])  # type: ignore[arg-type]
    assert ("--unshare-net" in argv) is unshared


def test_loop_files_protected_and_agent_config_are_read_only_contract_files_writable(tmp_path: Path) -> None:
    project = tmp_path / "p"
    loop = project / ".kilocode-loop"
    f = facts(project, loop_readonly=(loop / "runs", loop / "config.json"), loop_writable=(loop / "progress.json",),
              protected=(project / "tests",), agent_configs=(project / ".kilo",))
    argv = bwrap_argv(JailPolicy(f), ["true"])
    for path in (loop / "runs" / "r1" / "state.json", loop / "config.json", project / "tests" / "new_test.py",
                 project / ".kilo" / "kilo.jsonc"):
        assert last_mount_over(argv, path) == "--ro-bind", path
    assert last_mount_over(argv, loop / "progress.json") == "--bind"


def test_reviewer_project_read_only_except_its_review_file(tmp_path: Path) -> None:
    project = tmp_path / "p"
    review = project / "review-code.json"
    argv = bwrap_argv(JailPolicy(facts(project), role="reviewer", review_file=review), ["true"])
    assert last_mount_over(argv, project / "src" / "a.py") == "--ro-bind"
    assert last_mount_over(argv, review) == "--bind"
    assert describe(JailPolicy(facts(project), role="reviewer")).startswith("bwrap — project ro")


def test_home_replaced_by_a_private_one_with_the_declared_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "p"
    state = home / ".local" / "share" / "kilo"
    gitconfig = home / ".gitconfig"
    policy = JailPolicy(facts(project), home=home, home_rw=(state,), home_ro=(gitconfig,))
    argv = bwrap_argv(policy, ["true"])
    assert last_mount_over(argv, home / ".ssh" / "id_rsa") == "--tmpfs"
    assert last_mount_over(argv, home / ".bashrc") == "--tmpfs"
    assert last_mount_over(argv, state / "kilo.db") == "--bind"
    assert last_mount_over(argv, gitconfig) == "--ro-bind"


def test_a_home_that_holds_the_project_is_replaced_before_the_project_is_bound(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "code" / "p"
    argv = bwrap_argv(JailPolicy(facts(project), home=home), ["true"])
    assert last_mount_over(argv, project / "a.py") == "--bind"
    assert last_mount_over(argv, home / ".bashrc") == "--tmpfs"


def test_a_home_inside_the_project_isolate_home_is_replaced_after_it(tmp_path: Path) -> None:
    project = tmp_path / "p"
    home = project / ".kilocode-loop" / "runs" / "r" / "agent-home"
    f = facts(project, loop_readonly=(project / ".kilocode-loop" / "runs",))
    state = home / ".local" / "share" / "kilo"
    argv = bwrap_argv(JailPolicy(f, home=home, home_rw=(state,)), ["true"])
    assert last_mount_over(argv, home / ".bashrc") == "--tmpfs"
    assert last_mount_over(argv, state / "kilo.db") == "--bind"


def test_empty_command_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        bwrap_argv(JailPolicy(facts(tmp_path)), [])


# --------------------------------------------------------------------------- layout


def test_plain_repository_git_dir(repo: Path) -> None:
    assert git_dirs(repo) == ((repo / ".git").resolve(),)
    assert git_dirs(repo / "nonexistent") == ()


def test_linked_worktree_binds_its_gitdir_and_the_common_dir(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    found = git_dirs(linked)
    common = (repo / ".git").resolve()
    assert common in found
    assert any(p.parent == common / "worktrees" for p in found)
    argv = bwrap_argv(JailPolicy(facts(linked, git_dirs=found)), ["true"])
    # The common dir lies outside the worktree: read-only through the root bind.
    assert last_mount_over(argv, common / "refs" / "heads" / "main") == "--ro-bind"


def test_submodule_refused_with_a_message(repo: Path, tmp_path: Path) -> None:
    sub_source = tmp_path / "sub-src"
    sub_source.mkdir()
    git(sub_source, "init", "-q", "-b", "main")
    git(sub_source, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "s")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_source), "sub")
    with pytest.raises(SandboxError, match="submodule"):
        git_dirs(repo / "sub")


def test_protect_globs_expand_to_existing_paths(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("x")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("x")
    (tmp_path / "docs" / "b.txt").write_text("x")
    (tmp_path / "LICENSE").write_text("x")
    found = expand_protect(tmp_path, ["tests/**", "docs/*.md", "LICENSE", "missing/**", "nothing.txt", ""])
    assert set(found) == {tmp_path / "LICENSE", tmp_path / "tests", tmp_path / "docs" / "a.md"}
    assert static_prefix("src/**/x.py") == "src"


def test_project_facts_names_loop_files_and_agent_config(repo: Path) -> None:
    loop = repo / ".kilocode-loop"
    (loop / "runs").mkdir(parents=True)
    (loop / "config.json").write_text("{}")
    (loop / "progress.json").write_text("{}")
    (repo / ".kilo").mkdir()
    (repo / "plan.md").write_text("# p\n")
    found = project_facts(repo, ["plan.md"], [".kilo", "kilo.json"], repo / "plan.md")
    assert loop / "runs" in found.loop_readonly and loop / "config.json" in found.loop_readonly
    assert (repo / "plan.md").resolve() in found.loop_readonly
    assert found.loop_writable == (loop / "progress.json",)
    assert found.agent_configs == (repo / ".kilo",)


# --------------------------------------------------------------------------- backends


@pytest.mark.parametrize("backend, home_entry, config", [
    (kilo_backend("kilo"), "$XDG_DATA_HOME/kilo", ".kilo"),
    (opencode_backend("opencode"), "$XDG_DATA_HOME/opencode", "opencode.json"),
    (ClaudeBackend("claude"), "~/.claude", ".claude"),
    (CodexBackend("codex"), "$CODEX_HOME|~/.codex", ".codex"),
    (GeminiBackend("gemini"), "~/.gemini", ".gemini"),
    (CursorBackend("cursor-agent"), "~/.cursor", ".cursor"),
])
def test_every_backend_declares_its_state_and_project_config(backend: object, home_entry: str, config: str) -> None:
    paths = backend_paths(backend)
    assert home_entry in paths.home_rw
    assert config in paths.project_config


def test_serve_transport_declares_its_fallbacks_paths() -> None:
    serve = ServeBackend("kilo", "kilo", kilo_backend("kilo"))
    assert "$XDG_DATA_HOME/kilo" in backend_paths(serve).home_rw


def test_home_paths_follow_the_childs_environment() -> None:
    env = {"HOME": "/h", "CODEX_HOME": "/c"}
    assert resolve_home_path("$XDG_DATA_HOME/kilo", env) == Path("/h/.local/share/kilo")
    assert resolve_home_path("$XDG_DATA_HOME/kilo", {**env, "XDG_DATA_HOME": "/x"}) == Path("/x/kilo")
    assert resolve_home_path("$CODEX_HOME|~/.codex", env) == Path("/c")
    assert resolve_home_path("$CODEX_HOME|~/.codex", {"HOME": "/h"}) == Path("/h/.codex")
    assert resolve_home_path("~/.claude", {}) is None


def test_environment_is_an_allow_list() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "KILO_CONFIG": "/c", "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "t",
           "DATABASE_URL": "postgres://", "FAKE_CODEX_API_KEY": "k", "LC_ALL": "C"}
    kept = filter_env(env, ("PATH", "HOME"), ("LC_", "KILO_"))
    assert set(kept) == {"PATH", "HOME", "KILO_CONFIG", "FAKE_CODEX_API_KEY", "LC_ALL"}


def test_jail_wrap_filters_env_for_agents_and_keeps_it_for_verify(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    jail = Jail("bwrap", facts(tmp_path / "p"), JailPaths(home_rw=("$XDG_DATA_HOME/kilo",), env_prefixes=("KILO_",)))
    env = {"HOME": str(home), "PATH": "/bin", "DATABASE_URL": "x", "KILO_X": "1"}
    argv, agent_env = jail.wrap(["kilo"], env)
    assert "DATABASE_URL" not in agent_env and agent_env["KILO_X"] == "1"
    assert (home / ".local" / "share" / "kilo").is_dir()  # created so it can be bound and kept
    assert ("--bind", str(home / ".local" / "share" / "kilo")) in mounts(argv)
    _, verify_env = jail.wrap(["/bin/sh", "-c", "pytest"], env, "verify")
    assert verify_env == env
    _, tmp_env = jail.wrap(["kilo"], {**env, "TMPDIR": "/tmp/pytest-of-root"})
    assert tmp_env["TMPDIR"] == "/tmp"  # the private /tmp does not hold the caller's TMPDIR


def test_codex_sandbox_off_only_inside_the_jail() -> None:
    request = AgentRequest(prompt="p", cwd=Path("/p"), title="t")
    assert 'sandbox_mode="danger-full-access"' in codex_command("codex", request, None, jailed=True)
    bare = codex_command("codex", request, None)
    assert 'sandbox_mode="workspace-write"' in bare and 'sandbox_mode="danger-full-access"' not in bare


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("output, paths", [
    ("rm: cannot remove '.git/HEAD': Read-only file system", [".git/HEAD"]),
    ("/bin/sh: 1: cannot create guarded.txt: Read-only file system", ["guarded.txt"]),
    ("fatal: Unable to create '/p/.git/index.lock': Read-only file system", ["/p/.git/index.lock"]),
    ("sed: couldn't open temporary file ./sedAb12: Read-only file system", ["./sedAb12"]),
    ("rm: cannot remove \u2018.git\u2019: Device or resource busy", [".git"]),
    ("/bin/bash: line 1: guarded.txt: Read-only file system", ["guarded.txt"]),
    ("sed: cannot rename ./sedNLuGsJ: Device or resource busy", ["./sedNLuGsJ"]),
    ("Read-only file system", ["?"]),
    ("all good\n", []),
])
def test_refused_paths(output: str, paths: list[str]) -> None:
    assert refused_paths(output) == paths


def test_prompt_says_in_one_line_what_the_jail_allows() -> None:
    from kilo_loop.goal.parse import goal_from_text
    from kilo_loop.loop.prompt import PromptInput, build_prompt
    from kilo_loop.sandbox.policy import PROMPT_LINE

    goal = goal_from_text("make a.txt")
    base = PromptInput(goal=goal, stage=goal.stages[0], iteration=1, max_iterations=3, completed=set())
    assert PROMPT_LINE not in build_prompt(base)
    jailed = build_prompt(PromptInput(goal=goal, stage=goal.stages[0], iteration=1, max_iterations=3,
                                      completed=set(), jailed=True))
    assert PROMPT_LINE in jailed and "git is read-only here" in jailed


def test_doctor_and_preflight_codex_sandbox_checks() -> None:
    from kilo_loop.doctor import checks
    from kilo_loop.doctor.preflight import cli_sandbox_failures

    assert checks.codex_sandbox("bwrap: execvp codex-linux-sandbox", False, "fix").status == "fail"
    assert checks.codex_sandbox(None, False, "fix").status == "ok"
    assert checks.codex_sandbox("anything", True, "fix").status == "ok"
    assert cli_sandbox_failures([("codex", "/nonexistent/codex")], {}, jailed=True) == []
    failed = cli_sandbox_failures([("codex", "/nonexistent/codex"), ("kilo", "kilo")], {}, jailed=False)
    assert [c.check for c in failed] == ["codex sandbox"]
    assert checks.sandbox(False, "bubblewrap (bwrap) is not installed", "install it", "bwrap").status == "fail"
    assert checks.sandbox(False, "bubblewrap (bwrap) is not installed", "install it").status == "warn"
    assert checks.sandbox(True, "bubblewrap works", "").status == "ok"
    assert checks.sandbox_network(None, "model").status == "ok"
    assert checks.sandbox_network("the proxy round trip failed", "model").status == "fail"
    assert checks.sandbox_network("the proxy round trip failed").status == "warn"


def test_server_config_files_snapshot_and_restore(tmp_path: Path) -> None:
    from kilo_loop.agent.kilo.config_files import config_files, restore, snapshot

    (tmp_path / "kilo.json").write_text('{"user": 1}')
    files = config_files(tmp_path, "kilo")
    assert tmp_path / ".kilo" / "kilo.jsonc" in files and all("opencode" not in p.name for p in files)
    taken = snapshot(files)
    (tmp_path / ".kilo").mkdir()
    (tmp_path / ".kilo" / "kilo.jsonc").write_text('{"permission": {"bash": "allow"}}')
    (tmp_path / "kilo.json").write_text('{"permission": "allow"}')
    changed = restore(taken)
    assert set(changed) == {tmp_path / ".kilo" / "kilo.jsonc", tmp_path / "kilo.json"}
    assert not (tmp_path / ".kilo" / "kilo.jsonc").exists()
    assert (tmp_path / "kilo.json").read_text() == '{"user": 1}'
    assert restore(taken) == []


def test_sandbox_modes_without_bubblewrap() -> None:
    from kilo_loop.errors import EXIT_USAGE
    from kilo_loop.sandbox.setup import SandboxUnavailable, decide

    no_bwrap = {"PATH": "/nonexistent", "HOME": "/nonexistent"}
    with pytest.raises(SandboxUnavailable) as refused:
        decide("bwrap", no_bwrap)
    assert refused.value.exit_code == EXIT_USAGE and "apt-get install bubblewrap" in str(refused.value)
    status, warning = decide("auto", no_bwrap)
    assert status is None and warning is not None and "apt-get install bubblewrap" in warning
    assert decide("off", no_bwrap) == (None, None)


def test_the_probe_runs_once_per_bwrap_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from kilo_loop.sandbox import probe

    if shutil.which("bwrap") is None:
        pytest.skip("no bwrap on this machine")
    calls: list[str] = []
    monkeypatch.setattr(probe, "run_probe", lambda binary: calls.append(binary))
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path)}
    assert probe.probe_bwrap(env).usable and probe.probe_bwrap(env).usable
    assert len(calls) == 1
    monkeypatch.setattr(probe, "run_probe", lambda binary: "setting up uid map: Permission denied")
    failed = probe.probe_bwrap(env, use_cache=False)
    assert not failed.usable and "user namespaces" in failed.fix


def test_run_transport_puts_the_clis_project_config_back_before_a_session(tmp_path: Path) -> None:
    from kilo_loop.agent.protocol import AgentPolicy, GuardRejected

    backend = kilo_backend("kilo")
    backend.prepare(AgentPolicy(project=tmp_path, environ={"HOME": str(tmp_path)}))
    request = AgentRequest(prompt="p", cwd=tmp_path, title="t")
    assert backend.invocation(request).preface == ()
    (tmp_path / ".kilo").mkdir()
    (tmp_path / ".kilo" / "kilo.jsonc").write_text('{"permission": {"bash": "allow"}}')
    preface = backend.invocation(request).preface
    assert len(preface) == 1 and isinstance(preface[0], GuardRejected) and preface[0].rule == "agent-config"
    assert ".kilo/kilo.jsonc" in preface[0].reason
    assert not (tmp_path / ".kilo" / "kilo.jsonc").exists()
