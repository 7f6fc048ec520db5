"""publish: the agent never publishes packages or releases (a dry run publishes nothing)."""

from __future__ import annotations

from kilo_loop.guard.packs.paths import PathPolicy
from kilo_loop.guard.packs.rules import Pack, Rule, operands
from kilo_loop.guard.shell.model import SimpleCommand, has_option

_REASON = "the agent never publishes packages; the operator releases"
_JS = ("npm", "pnpm", "yarn", "bun")
_JS_VALUE = ("-w", "--workspace", "--filter", "-F", "-C", "--dir", "--prefix", "--tag", "--access", "--otp",
             "--registry", "--cwd")
_FALSE = ("false", "0", "no")


def _not_dry_run(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """Publishes unless the last word on dry running says so: `--dry-run`, not `--dry-run=false`,
    `--dry-run false` or a later `--no-dry-run`."""
    dry = False
    args = cmd.args
    for index, arg in enumerate(args):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        short = {"semantic-release": "-d", "release-it": "-d"}.get(cmd.name, "-n" if cmd.name != "npm" else "")
        # npm reads a long option from any unique prefix (`--no-dry` is `--no-dry-run`)
        abbreviates = cmd.name in _JS and len(name) >= 5
        if name == "--no-dry-run" or (abbreviates and "--no-dry-run".startswith(name) and name.startswith("--no-")):
            dry = False
        elif name == "--dry-run" or (short and name == short) or (abbreviates and "--dry-run".startswith(name)):
            following = args[index + 1] if index + 1 < len(args) else ""
            dry = not ((eq and value.lower() in _FALSE) or (not eq and following.lower() in _FALSE))
    return None if dry else ""


_NPM_COMMANDS = (
    "access", "adduser", "audit", "bugs", "cache", "ci", "completion", "config", "dedupe", "deprecate", "diff",
    "dist-tag", "docs", "doctor", "edit", "exec", "explain", "explore", "find-dupes", "fund", "get", "help",
    "help-search", "hook", "init", "install", "install-ci-test", "install-test", "link", "ll", "login", "logout",
    "ls", "org", "outdated", "owner", "pack", "ping", "pkg", "prefix", "profile", "prune", "publish", "query",
    "rebuild", "repo", "restart", "root", "run-script", "sbom", "search", "set", "shrinkwrap", "star", "stars",
    "start", "stop", "team", "test", "token", "undeprecate", "uninstall", "unpublish", "unstar", "update", "version",
    "view", "whoami", "author", "home", "issues", "info", "show", "find", "add", "unlink", "remove", "rm", "r", "un",
    "rb", "list", "ln", "create", "i", "it", "cit", "up", "c", "s", "se", "tst", "t", "ddp", "v", "run", "x")


def _npm_abbreviation(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """npm takes any unique prefix of a command (`npm publ` is `npm publish`, `npm unpub` is `unpublish`)."""
    found = operands(cmd.args, _JS_VALUE)
    word = found[0] if found else ""
    if len(word) < 2 or word in _NPM_COMMANDS:
        return None
    hits = [c for c in _NPM_COMMANDS if c.startswith(word)]
    if hits not in (["publish"], ["unpublish"], ["deprecate"]):
        return None
    return f"`npm {word}` is npm's abbreviation of `npm {hits[0]}`" if hits[0] != "publish" or \
        _not_dry_run(cmd, paths) is not None else None


def _gradle_publish(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    tasks = [t.rsplit(":", 1)[-1] for t in operands(cmd.args)]
    return "" if any(t.startswith("publish") and "MavenLocal" not in t for t in tasks) else None


def _api_writes(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    args = list(cmd.args)
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("-X", "--method"):
            method = value if eq else (args[index + 1] if index + 1 < len(args) else "")
            if method.upper() == "DELETE":
                return "a DELETE through the GitHub API removes what it names"
            if method.upper() in ("PUT", "POST") and any(a.rstrip("/").endswith("/merge") for a in args):
                return "the GitHub API call merges a pull request"
        elif arg.startswith("-X") and len(arg) > 2 and arg[2:].upper() == "DELETE":
            return "a DELETE through the GitHub API removes what it names"
    return None
PACK = Pack(
    name="publish",
    title="publish: npm/pnpm/yarn/bun, cargo, PyPI, gems, lerna, changesets, releases",
    rules=(
        Rule("npm-publish", _REASON, _JS, words=("publish",), check=_not_dry_run),
        Rule("npm-publish", _REASON, _JS, words=("unpublish",)),
        Rule("npm-publish", _REASON, ("npm",), check=_npm_abbreviation),
        Rule("npm-publish", _REASON, ("yarn",), words=("npm", "publish"), check=_not_dry_run),
        Rule("npm-publish", "deprecating a published version changes the registry", ("npm",), words=("deprecate",)),
        Rule("npm-publish", "moving a dist-tag changes what users install", ("npm", "pnpm"),
             words=("dist-tag", "add")),
        Rule("package-publish", _REASON, ("cargo",), words=("publish",), unless=("--dry-run", "-n")),
        Rule("package-publish", _REASON, ("cargo",), words=("yank",)),
        Rule("package-publish", _REASON, ("cargo",), check=lambda c, p: "" if operands(c.args)[:1] in (
            ["ws"], ["workspaces"]) and "publish" in operands(c.args)[1:2] and not has_option(
            c.args, "--dry-run") else None),
        Rule("package-publish", _REASON, ("python", "python3", "setup.py"), check=lambda c, p: "" if (
            c.name == "setup.py" or (operands(c.args)[:1] and operands(c.args)[0].endswith("setup.py"))) and
            {"upload", "register"} & set(c.args) else None),
        Rule("package-publish", _REASON, ("helm",), words=("cm-push",)),
        Rule("release-publish", "creating a public repository with --push publishes the work", ("gh",),
             words=("repo", "create"), flags=("--push",)),
        Rule("package-publish", _REASON, ("twine",), words=("upload",)),
        Rule("package-publish", _REASON, ("poetry", "uv", "flit", "hatch", "pdm", "maturin", "deno", "jsr", "vsce",
                                          "ovsx"), words=("publish",), check=_not_dry_run),
        Rule("package-publish", _REASON, ("maturin",), words=("upload",)),
        Rule("package-publish", _REASON, ("python", "python3"), words=("twine", "upload")),
        Rule("package-publish", _REASON, ("dart", "flutter"), words=("pub", "publish"), check=_not_dry_run),
        Rule("package-publish", _REASON, ("semantic-release", "release-it", "np", "changeset-release"),
             check=_not_dry_run),
        Rule("package-publish", _REASON, ("goreleaser",), words=("release",),
             unless=("--snapshot", "--skip-publish")),
        Rule("package-publish", "lerna version commits, tags and pushes", ("lerna",), words=("version",),
             unless=("--no-push", "--no-git-tag-version")),
        Rule("package-publish", _REASON, ("nx",), words=("release",), check=_not_dry_run),
        Rule("package-publish", _REASON, ("mix",), words=("hex.publish",)),
        Rule("package-publish", _REASON, ("cabal",), words=("upload",)),
        Rule("package-publish", _REASON, ("nuget",), words=("push",)),
        Rule("package-publish", _REASON, ("helm",), words=("push",)),
        Rule("package-publish", _REASON, ("gradle", "gradlew"), check=_gradle_publish),
        Rule("package-publish", _REASON, ("mvn", "./mvnw", "mvnw"), check=lambda c, p: "" if any(
            t in ("release:perform", "deploy:deploy") for t in operands(c.args)) else None),
        Rule("package-publish", _REASON, ("gem",), words=("push",)),
        Rule("package-publish", _REASON, ("gem",), words=("yank",)),
        Rule("package-publish", _REASON, ("lerna",), words=("publish",)),
        Rule("package-publish", _REASON, ("changeset", "changesets"), words=("publish",)),
        Rule("package-publish", _REASON, ("pnpm", "yarn", "npx", "bun"), words=("changeset", "publish")),
        Rule("package-publish", _REASON, ("mvn", "./mvnw", "mvnw"), words=("deploy",)),
        Rule("package-publish", _REASON, ("gradle", "gradlew"), words=("publish",)),
        Rule("package-publish", _REASON, ("dotnet",), words=("nuget", "push")),
        Rule("package-publish", _REASON, ("sbt", "mill", "lein", "boot"), check=lambda c, p: "" if any(
            t.rsplit("/", 1)[-1].startswith(("publish", "deploy", "release", "sonatype")) and "Local" not in t
            for t in operands(c.args)) else None),
        Rule("package-publish", _REASON, ("go",), words=("publish",)),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "create")),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "upload")),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "delete")),
        Rule("release-publish", "merging a pull request publishes the work", ("gh",), words=("pr", "merge")),
        Rule("release-publish", "deleting a repository is irreversible", ("gh",), words=("repo", "delete")),
        Rule("release-publish", "changing a repository's visibility publishes (or hides) it", ("gh",),
             words=("repo", "edit"), check=lambda c, p: "" if any(a.startswith("--visibility") for a in c.args)
             else None),
        Rule("release-publish", "the GitHub API call deletes or merges", ("gh",), words=("api",), check=_api_writes),
        Rule("release-publish", "editing a release can publish it", ("gh",), words=("release", "edit")),
        Rule("release-publish", "the agent never creates or changes releases", ("glab",), words=("release", "create")),
        Rule("release-publish", "the agent never creates or changes releases", ("glab",), words=("release", "delete")),
        Rule("release-publish", "merging a merge request publishes the work", ("glab",), words=("mr", "merge")),
        Rule("package-publish", _REASON, ("cargo",), words=("release",), flags=("--execute", "-x")),
        Rule("package-publish", _REASON, ("rake", "bundle"), check=lambda c, p: "" if "release" in [
            a.split("[", 1)[0] for a in operands(c.args)] else None),
        Rule("package-publish", _REASON, ("pod",), words=("trunk", "push")),
        Rule("package-publish", _REASON, ("stack",), words=("upload",)),
        Rule("package-publish", _REASON, ("anaconda",), words=("upload",)),
        Rule("package-publish", _REASON, ("snapcraft",), check=lambda c, p: "" if operands(c.args)[:1] in (
            ["upload"], ["release"], ["push"]) else None),
    ),
    value_options={name: _JS_VALUE for name in _JS},
)
