"""The three forges' REST APIs for the hand-over: open or update the run's pull (merge) request, comment on
an issue, read an issue. Each answers in its own shapes; `Forge` gives the loop one set of calls.

Errors say what happened and what to do: a refused token, a repository the token cannot see, no right to
open a pull request, a rate limit (with when it resets). The token comes from the environment and is
sent only in the Authorization header; it is never written anywhere."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from kilo_loop.errors import KiloLoopError
from kilo_loop.forge.remote import ForgeTarget

MAX_PAGES = 20  # of a list; past it the open pull request is taken as not there (a new one is opened)
DRAFT_PREFIX = {"gitlab": "Draft: ", "gitea": "WIP: "}  # GitHub has a real draft flag


class ForgeError(KiloLoopError):
    """The forge refused or could not be reached; the message says why and what to do."""


class RateLimited(ForgeError):
    def __init__(self, message: str, reset_at: float | None) -> None:
        super().__init__(message)
        self.reset_at = reset_at


@dataclass(frozen=True)
class ChangeRequest:
    number: int
    url: str
    draft: bool
    node_id: str = ""  # GitHub's GraphQL id (to mark a draft ready)


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str
    state: str  # open | closed
    url: str


class Forge:
    def __init__(self, target: ForgeTarget, token: str, client: httpx.Client | None = None) -> None:
        self.target = target
        self._client = client or httpx.Client(timeout=30.0)
        self._auth = _auth_header(target.kind, token)

    # ------------------------------------------------------------------ calls
    def default_branch(self) -> str:
        return str(self._call("GET", self._repo_path()).get("default_branch") or "main")

    def issue(self, number: int) -> Issue:
        path = f"{self._repo_path()}/issues/{number}"
        data = self._call("GET", path, what=f"issue #{number}")
        body = data.get("description" if self.target.kind == "gitlab" else "body") or ""
        state = "open" if str(data.get("state")) in ("open", "opened") else "closed"
        return Issue(int(data.get("iid") or data.get("number") or number), str(data.get("title") or ""), str(body),
                     state, str(data.get("web_url") or data.get("html_url") or ""))

    def comment(self, number: int, text: str) -> None:
        kind = "notes" if self.target.kind == "gitlab" else "comments"
        self._call("POST", f"{self._repo_path()}/issues/{number}/{kind}", {"body": text}, what=f"a comment on #{number}")

    def find_open(self, branch: str) -> ChangeRequest | None:
        for item in self._list_open(branch):
            return self._change(item)
        return None

    def open(self, branch: str, base: str, title: str, body: str, draft: bool) -> ChangeRequest:
        """Open the pull request of `branch` into `base`, or update the one already open."""
        existing = self.find_open(branch)
        if existing is not None:
            return self.update(existing, title, body, draft)
        return self._change(self._call("POST", self._changes_path(), self._open_body(branch, base, title, body, draft),
                                       what="opening the pull request"))

    def update(self, change: ChangeRequest, title: str, body: str, draft: bool) -> ChangeRequest:
        shown = DRAFT_PREFIX.get(self.target.kind, "") + title if draft else title
        key = "description" if self.target.kind == "gitlab" else "body"
        method = "PUT" if self.target.kind == "gitlab" else "PATCH"
        updated = self._change(self._call(method, f"{self._changes_path()}/{change.number}",
                                          {"title": shown, key: body}, what="updating the pull request"))
        if self.target.kind == "github" and change.draft and not draft:
            self._ready(change)
            updated = ChangeRequest(updated.number, updated.url, False, updated.node_id)
        return updated

    # ------------------------------------------------------------------ dialects
    def _repo_path(self) -> str:
        if self.target.kind == "gitlab":
            return f"/projects/{quote(self.target.repo, safe='')}"
        return f"/repos/{self.target.repo}"

    def _changes_path(self) -> str:
        return self._repo_path() + ("/merge_requests" if self.target.kind == "gitlab" else "/pulls")

    def _list_open(self, branch: str) -> list[dict[str, Any]]:
        kind, owner = self.target.kind, self.target.repo.split("/")[0]
        params = {"github": {"head": f"{owner}:{branch}", "state": "open"},
                  "gitlab": {"source_branch": branch, "state": "opened"},
                  "gitea": {"state": "open", "limit": "50"}}[kind]
        found: list[dict[str, Any]] = []
        for page in self._pages(self._changes_path(), params, what="listing open pull requests"):
            if kind == "gitea":  # Gitea filters by state only
                page = [item for item in page if (item.get("head") or {}).get("ref") == branch]
            found += page
            if found:
                break
        return found

    def _open_body(self, branch: str, base: str, title: str, body: str, draft: bool) -> dict[str, Any]:
        if self.target.kind == "github":
            return {"title": title, "head": branch, "base": base, "body": body, "draft": draft}
        shown = DRAFT_PREFIX[self.target.kind] + title if draft else title
        if self.target.kind == "gitlab":
            return {"title": shown, "source_branch": branch, "target_branch": base, "description": body}
        return {"title": shown, "head": branch, "base": base, "body": body}

    def _change(self, data: Any) -> ChangeRequest:
        title = str(data.get("title") or "")
        draft = bool(data.get("draft")) or any(title.startswith(p) for p in DRAFT_PREFIX.values())
        number = int(data.get("iid") or data.get("number") or 0)
        return ChangeRequest(number, str(data.get("web_url") or data.get("html_url") or ""), draft,
                             str(data.get("node_id") or ""))

    def _ready(self, change: ChangeRequest) -> None:
        """GitHub turns a draft into a ready pull request through GraphQL only."""
        graphql = self.target.api.removesuffix("/api/v3") + ("/api/graphql" if "/api/v3" in self.target.api else "/graphql")
        mutation = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }"
        self._call("POST", graphql, {"query": mutation, "variables": {"id": change.node_id}},
                   what="marking the pull request ready", absolute=True)

    # ------------------------------------------------------------------ HTTP
    def _call(self, method: str, path: str, json: Any = None, *, params: dict[str, str] | None = None,
              what: str | None = None, absolute: bool = False) -> Any:
        response = self._send(method, path if absolute else self.target.api + path, json, params, what)
        return response.json() if response.content else {}

    def _pages(self, path: str, params: dict[str, str], what: str) -> Iterator[list[dict[str, Any]]]:
        """Each page of a list, following the `Link: <…>; rel="next"` all three forges send."""
        url: str | None = self.target.api + path
        query: dict[str, str] | None = params
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._send("GET", url, None, query, what)
            items = response.json() if response.content else []
            yield [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
            url, query = response.links.get("next", {}).get("url"), None  # the next link carries the query

    def _send(self, method: str, url: str, json: Any, params: dict[str, str] | None, what: str | None
              ) -> httpx.Response:
        try:
            response = self._client.request(method, url, json=json, params=params, headers=self._auth)
        except httpx.HTTPError as exc:
            raise ForgeError(f"cannot reach {self.target.kind} at {self.target.api}: {exc}") from exc
        if response.is_success:
            return response
        raise _error(self.target, response, what or f"{method} {url}")


def _auth_header(kind: str, token: str) -> dict[str, str]:
    if not token:  # a public repository's issue can be read without one
        return {"Accept": "application/vnd.github+json"} if kind == "github" else {}
    if kind == "gitlab":
        return {"PRIVATE-TOKEN": token}
    if kind == "github":
        return {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28"}
    return {"Authorization": f"token {token}"}


def _error(target: ForgeTarget, response: httpx.Response, what: str) -> ForgeError:
    status, detail = response.status_code, _detail(response)
    reset = _reset_at(response)
    if status == 429 or (status == 403 and (reset is not None or "rate limit" in detail.lower())):
        when = f"; it resets in {max(0, round(reset - time.time()))} s" if reset else ""
        return RateLimited(f"{target.kind} rate limit reached while {what}{when}", reset)
    if status == 401:
        return ForgeError(f"{target.kind} refused the token in {target.token_variable} (401) while {what}: "
                          "check the token is valid and not expired")
    if status == 403:
        return ForgeError(f"the token in {target.token_variable} has no right to do this on {target.repo} (403) "
                          f"while {what}: {detail}")
    if status == 404:
        return ForgeError(f"{target.repo} was not found at {target.api} (404) while {what}: check --forge-repo, "
                          f"--forge-url, and that the token can see the repository")
    return ForgeError(f"{target.kind} answered {status} while {what}: {detail}")


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(data, dict):
        return str(data.get("message") or data.get("error") or data)[:300]
    return str(data)[:300]


def _reset_at(response: httpx.Response) -> float | None:
    headers = response.headers
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset", "").isdigit():
        return float(headers["x-ratelimit-reset"])
    retry = headers.get("retry-after", "")
    return time.time() + float(retry) if retry.isdigit() else None
