"""publish: the agent never publishes packages or releases (a dry run publishes nothing)."""

from __future__ import annotations

from kilo_loop.safety.packs.rules import Pack, Rule

_REASON = "the agent never publishes packages; the operator releases"
_JS = ("npm", "pnpm", "yarn", "bun")
PACK = Pack(
    name="publish",
    title="publish: npm/pnpm/yarn/bun, cargo, PyPI, gems, lerna, changesets, releases",
    rules=(
        Rule("npm-publish", _REASON, _JS, words=("publish",), unless=("--dry-run",)),
        Rule("npm-publish", _REASON, _JS, words=("unpublish",)),
        Rule("npm-publish", _REASON, ("yarn",), words=("npm", "publish"), unless=("--dry-run",)),
        Rule("npm-publish", "deprecating a published version changes the registry", ("npm",), words=("deprecate",)),
        Rule("npm-publish", "moving a dist-tag changes what users install", ("npm", "pnpm"),
             words=("dist-tag", "add")),
        Rule("package-publish", _REASON, ("cargo",), words=("publish",), unless=("--dry-run", "-n")),
        Rule("package-publish", _REASON, ("cargo",), words=("yank",)),
        Rule("package-publish", _REASON, ("twine",), words=("upload",)),
        Rule("package-publish", _REASON, ("poetry", "uv", "flit", "hatch", "pdm"), words=("publish",),
             unless=("--dry-run",)),
        Rule("package-publish", _REASON, ("gem",), words=("push",)),
        Rule("package-publish", _REASON, ("gem",), words=("yank",)),
        Rule("package-publish", _REASON, ("lerna",), words=("publish",)),
        Rule("package-publish", _REASON, ("changeset", "changesets"), words=("publish",)),
        Rule("package-publish", _REASON, ("pnpm", "yarn", "npx", "bun"), words=("changeset", "publish")),
        Rule("package-publish", _REASON, ("mvn", "./mvnw", "mvnw"), words=("deploy",)),
        Rule("package-publish", _REASON, ("gradle", "gradlew"), words=("publish",)),
        Rule("package-publish", _REASON, ("dotnet",), words=("nuget", "push")),
        Rule("package-publish", _REASON, ("go",), words=("publish",)),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "create")),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "upload")),
        Rule("release-publish", "the agent never creates or changes releases", ("gh",), words=("release", "delete")),
        Rule("release-publish", "merging a pull request publishes the work", ("gh",), words=("pr", "merge")),
        Rule("release-publish", "deleting a repository is irreversible", ("gh",), words=("repo", "delete")),
    ),
)
