"""`--finish pr`: push the run's branch and open (or update) its pull request on the forge."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kilo_loop.finish.commits import FinishError, push_branch, remote_url
from kilo_loop.finish.pr_body import pr_body, pr_title
from kilo_loop.forge.api import ChangeRequest, Forge, ForgeError, RateLimited
from kilo_loop.forge.remote import ForgeUnknown, forge_target
from kilo_loop.goal.issue import IssueRef
from kilo_loop.run.state import RunState

T = TypeVar("T")
MAX_RATE_WAIT_S = 15 * 60  # past this, the run ends and a resume publishes


@dataclass(frozen=True)
class ForgeOptions:
    remote: str = "origin"
    kind: str = "auto"
    api: str | None = None
    repo: str | None = None


@dataclass
class PullRequester:
    project: Path
    remote: str
    branch: str
    forge: Forge
    closes: str | None = None  # `#12` or `owner/repo#12`: the issue the goal came from

    def push(self) -> None:
        push_branch(self.project, self.remote, self.branch)

    def publish(self, state: RunState, wait: Callable[[float, str], None] = lambda _s, _why: None) -> ChangeRequest:
        """Push, then open or update the pull request: a draft while any stage is left."""
        base = self._call(self.forge.default_branch, wait)
        if base == self.branch:
            raise FinishError(f"the run's branch {self.branch} is {self.remote}'s default branch: refusing to push to it")
        self.push()
        draft = any(stage.status != "done" for stage in state.stages)
        return self._call(lambda: self.forge.open(self.branch, base, pr_title(state), pr_body(state, self.closes),
                                                  draft), wait)

    def _call(self, call: Callable[[], T], wait: Callable[[float, str], None]) -> T:
        """One call; after a rate limit that resets soon, wait for it (saying so) and try once more."""
        try:
            return call()
        except RateLimited as exc:
            delay = (exc.reset_at or 0) - time.time()
            if exc.reset_at is None or delay > MAX_RATE_WAIT_S:
                raise
            wait(max(0.0, delay), str(exc))
            return call()


def build_pull_requester(project: Path, branch: str, options: ForgeOptions, issue: IssueRef | None = None,
                         env: Mapping[str, str] | None = None) -> PullRequester:
    """Checked at the run's start, before anything is paid for: the remote, the forge, the token."""
    environ = os.environ if env is None else env
    url = remote_url(project, options.remote)
    try:
        target = forge_target(url, environ, options.kind, options.api, options.repo)
    except ForgeUnknown as exc:
        raise FinishError(str(exc)) from None
    token = environ.get(target.token_variable, "").strip()
    if not token:
        raise FinishError(f"--finish pr needs a {target.kind} token: set {target.token_variable} (it is read from the "
                          "environment and never written anywhere)")
    closes = None if issue is None else (f"#{issue.number}" if issue.repo == target.repo else issue.label.split(":", 1)[1])
    return PullRequester(project, options.remote, branch, Forge(target, token), closes)


__all__ = ["ForgeError", "ForgeOptions", "PullRequester", "build_pull_requester"]
