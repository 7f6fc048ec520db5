"""A scripted GitHub REST API on 127.0.0.1 for the hand-over tests: it answers the calls `--finish pr`
makes in GitHub's own shapes, keeps the pull requests it was asked to open, and records every request."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class ScriptedGitHub:
    repo: str = "acme/app"
    default_branch: str = "main"
    pulls: list[dict[str, Any]] = field(default_factory=list)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # number -> {"title", "body", "state"}
    comments: list[tuple[int, str]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refuse_with: int | None = None  # answer every call with this status (401, 403, 404, …)
    url: str = ""

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        self.requests.append({"method": method, "path": path, "query": query, "body": body})
        if self.refuse_with is not None:
            return self.refuse_with, {"message": "Bad credentials", "documentation_url": "https://docs.github.com"}
        base = f"/repos/{self.repo}"
        if method == "GET" and path == base:
            return 200, {"full_name": self.repo, "default_branch": self.default_branch}
        if method == "GET" and path == f"{base}/pulls":
            head = query.get("head", [""])[0]
            return 200, [p for p in self.pulls if f"{self.repo.split('/')[0]}:{p['head']['ref']}" == head
                         and p["state"] == "open"]
        if method == "POST" and path == f"{base}/pulls":
            if any(p["head"]["ref"] == body["head"] for p in self.pulls):
                return 422, {"message": "Validation Failed", "errors": [{"message": "A pull request already exists"}]}
            number = len(self.pulls) + 1
            pull = {"number": number, "html_url": f"https://github.example/{self.repo}/pull/{number}",
                    "node_id": f"PR_node{number}", "state": "open", "draft": bool(body.get("draft")),
                    "title": body["title"], "body": body["body"], "head": {"ref": body["head"]},
                    "base": {"ref": body["base"]}}
            self.pulls.append(pull)
            return 201, pull
        if method == "PATCH" and path.startswith(f"{base}/pulls/"):
            pull = self.pulls[int(path.rsplit("/", 1)[1]) - 1]
            pull.update({key: body[key] for key in ("title", "body") if key in body})
            return 200, pull
        if path.startswith(f"{base}/issues/"):
            number = int(path.split("/")[5])
            if number not in self.issues:
                return 404, {"message": "Not Found"}
            if method == "POST" and path.endswith("/comments"):
                self.comments.append((number, body["body"]))
                return 201, {"id": len(self.comments), "body": body["body"]}
            issue = self.issues[number]
            return 200, {"number": number, "html_url": f"https://github.example/{self.repo}/issues/{number}", **issue}
        if method == "POST" and path == "/graphql":
            node = body["variables"]["id"]
            for pull in self.pulls:
                if pull["node_id"] == node:
                    pull["draft"] = False
            return 200, {"data": {"markPullRequestReadyForReview": {"clientMutationId": None}}}
        return 404, {"message": "Not Found"}


@contextmanager
def scripted_github(**options: Any) -> Iterator[ScriptedGitHub]:
    forge = ScriptedGitHub(**options)
    with _serve(forge):
        yield forge


@contextmanager
def _serve(forge: Any) -> Iterator[None]:
    """Answer HTTP on a free port of 127.0.0.1 with `forge.answer`; its address goes into `forge.url`."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            raw_path = parsed.path  # GitLab's project path stays encoded (%2F), as GitLab reads it
            status, answer = forge.answer(self.command, raw_path, parse_qs(parsed.query), body)
            forge.requests[-1]["authorization"] = self.headers.get("Authorization") or self.headers.get("PRIVATE-TOKEN", "")
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    forge.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class ScriptedGitLab:
    """GitLab's REST API v4 for a project `group/app`: merge requests (a draft is a `Draft: ` title)."""

    repo: str = "group/app"
    default_branch: str = "main"
    pulls: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        self.requests.append({"method": method, "path": path, "query": query, "body": body})
        base = "/projects/" + self.repo.replace("/", "%2F")
        if method == "GET" and path == base:
            return 200, {"path_with_namespace": self.repo, "default_branch": self.default_branch}
        if method == "GET" and path == f"{base}/merge_requests":
            branch = query.get("source_branch", [""])[0]
            return 200, [p for p in self.pulls if p["source_branch"] == branch and p["state"] == "opened"]
        if method == "POST" and path == f"{base}/merge_requests":
            iid = len(self.pulls) + 1
            pull = {"iid": iid, "web_url": f"https://gitlab.example/{self.repo}/-/merge_requests/{iid}",
                    "state": "opened", "title": body["title"], "description": body["description"],
                    "source_branch": body["source_branch"], "target_branch": body["target_branch"]}
            self.pulls.append(pull)
            return 201, pull
        if method == "PUT" and path.startswith(f"{base}/merge_requests/"):
            pull = self.pulls[int(path.rsplit("/", 1)[1]) - 1]
            pull.update({key: body[key] for key in ("title", "description") if key in body})
            return 200, pull
        return 404, {"message": "404 Not Found"}


@dataclass
class ScriptedGitea:
    """Gitea's REST API v1 (also Forgejo's) under /api/v1: pull requests (a draft is a `WIP: ` title)."""

    repo: str = "acme/app"
    default_branch: str = "main"
    pulls: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        self.requests.append({"method": method, "path": path, "query": query, "body": body})
        base = f"/api/v1/repos/{self.repo}"
        if method == "GET" and path == base:
            return 200, {"full_name": self.repo, "default_branch": self.default_branch}
        if method == "GET" and path == f"{base}/pulls":
            return 200, [p for p in self.pulls if p["state"] == "open"]
        if method == "POST" and path == f"{base}/pulls":
            number = len(self.pulls) + 1
            pull = {"number": number, "html_url": f"https://gitea.example/{self.repo}/pulls/{number}",
                    "state": "open", "title": body["title"], "body": body["body"], "head": {"ref": body["head"]},
                    "base": {"ref": body["base"]}}
            self.pulls.append(pull)
            return 201, pull
        if method == "PATCH" and path.startswith(f"{base}/pulls/"):
            pull = self.pulls[int(path.rsplit("/", 1)[1]) - 1]
            pull.update({key: body[key] for key in ("title", "body") if key in body})
            return 200, pull
        return 404, {"message": "not found"}


@contextmanager
def scripted_forge(kind: str, **options: Any) -> Iterator[Any]:
    """A scripted GitLab or Gitea on 127.0.0.1, served like `scripted_github`."""
    forge: Any = ScriptedGitLab(**options) if kind == "gitlab" else ScriptedGitea(**options)
    with _serve(forge):
        yield forge
