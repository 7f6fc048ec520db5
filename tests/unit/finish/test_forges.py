"""Which forge a remote is, and each forge's REST dialect, answered by httpx's mock transport in each
API's own shapes; every refusal says what happened and what to do."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from kilo_loop.forge.api import Forge, ForgeError, RateLimited
from kilo_loop.forge.remote import ForgeTarget, ForgeUnknown, forge_target, parse_remote


@pytest.mark.parametrize(("url", "expected"), [
    ("https://github.com/acme/app.git", ("github.com", "acme/app")),
    ("git@github.com:acme/app.git", ("github.com", "acme/app")),
    ("ssh://git@gitlab.example.com:2222/group/sub/app.git", ("gitlab.example.com", "group/sub/app")),
    ("https://codeberg.org/acme/app", ("codeberg.org", "acme/app")),
    ("/srv/git/app.git", None),
    ("../app.git", None),
])
def test_parse_remote(url: str, expected: tuple[str, str] | None) -> None:
    assert parse_remote(url) == expected


def test_forge_target_from_the_remote_and_the_environment() -> None:
    assert forge_target("git@github.com:acme/app.git", {}) == ForgeTarget("github", "https://api.github.com", "acme/app")
    enterprise = forge_target("https://github.corp.example/acme/app", {})
    assert enterprise.api == "https://github.corp.example/api/v3"
    ci = forge_target("https://gitlab.com/g/app.git", {"CI_API_V4_URL": "https://gl.example/api/v4"})
    assert (ci.kind, ci.api, ci.repo) == ("gitlab", "https://gl.example/api/v4", "g/app")
    assert forge_target("https://codeberg.org/a/b", {}).api == "https://codeberg.org/api/v1"
    assert forge_target("https://git.example/a/b", {}, kind="gitea").api == "https://git.example/api/v1"


@pytest.mark.parametrize(("url", "kwargs", "flag"), [
    ("https://git.example/a/b", {}, "--forge github|gitlab|gitea"),
    ("/srv/app.git", {"kind": "github"}, "--forge-repo OWNER/REPO"),
    ("/srv/app.git", {"kind": "gitea", "repo": "a/b"}, "--forge-url URL"),
])
def test_an_unknown_forge_names_the_flag_to_pass(url: str, kwargs: dict[str, Any], flag: str) -> None:
    with pytest.raises(ForgeUnknown, match=flag.replace("|", r"\|")):
        forge_target(url, {}, **kwargs)


def forge_with(kind: str, handler: Any) -> Forge:
    target = ForgeTarget(kind, "https://forge.example/api", "acme/app")  # type: ignore[arg-type]
    return Forge(target, "t0ken", httpx.Client(transport=httpx.MockTransport(handler)))


def test_gitlab_opens_a_draft_merge_request_in_its_own_shapes() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET":
            return httpx.Response(200, json=[])
        body = json.loads(request.content)
        return httpx.Response(201, json={"iid": 7, "web_url": "https://gl/acme/app/-/merge_requests/7",
                                         "title": body["title"]})

    change = forge_with("gitlab", handler).open("kilo-loop/x-r1", "main", "Add it", "body", draft=True)
    assert (change.number, change.draft) == (7, True)
    created = seen[-1]
    assert created.url.raw_path == b"/api/projects/acme%2Fapp/merge_requests"  # the project path, encoded
    assert json.loads(created.content) == {"title": "Draft: Add it", "source_branch": "kilo-loop/x-r1",
                                           "target_branch": "main", "description": "body"}
    assert created.headers["PRIVATE-TOKEN"] == "t0ken"


def test_gitea_updates_the_open_pull_request_of_the_branch() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=[{"number": 3, "title": "WIP: Add it", "head": {"ref": "kilo-loop/x-r1"}},
                                             {"number": 4, "title": "other", "head": {"ref": "feature"}}])
        assert (request.method, request.url.path) == ("PATCH", "/api/repos/acme/app/pulls/3")
        return httpx.Response(200, json={"number": 3, "title": json.loads(request.content)["title"],
                                         "html_url": "https://gitea/acme/app/pulls/3"})

    change = forge_with("gitea", handler).open("kilo-loop/x-r1", "main", "Add it", "body", draft=False)
    assert (change.number, change.draft, change.url) == (3, False, "https://gitea/acme/app/pulls/3")


@pytest.mark.parametrize(("status", "headers", "message"), [
    (401, {}, "refused the token in GITHUB_TOKEN"),
    (403, {}, "has no right to do this on acme/app"),
    (404, {}, "acme/app was not found"),
    (500, {}, "answered 500"),
])
def test_refusals_say_what_to_do(status: int, headers: dict[str, str], message: str) -> None:
    forge = forge_with("github", lambda _r: httpx.Response(status, headers=headers, json={"message": "no"}))
    with pytest.raises(ForgeError, match=message):
        forge.default_branch()


def test_a_rate_limit_says_when_it_resets() -> None:
    reset = str(int(time.time()) + 120)
    forge = forge_with("github", lambda _r: httpx.Response(
        403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, json={"message": "API rate limit"}))
    with pytest.raises(RateLimited, match="rate limit reached") as caught:
        forge.default_branch()
    assert caught.value.reset_at == float(reset)
    too_many = forge_with("gitea", lambda _r: httpx.Response(429, headers={"retry-after": "30"}, json={}))
    with pytest.raises(RateLimited):
        too_many.default_branch()


def test_the_forge_cannot_be_reached() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ForgeError, match="cannot reach github"):
        forge_with("github", handler).default_branch()


def test_the_open_pull_request_is_found_on_a_later_page() -> None:
    """Gitea filters open pull requests by state only: the run's may be on page 2 (Link: rel="next")."""
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.params.get("page") != "2":
            others = [{"number": n, "title": f"other {n}", "head": {"ref": f"feature-{n}"}} for n in range(1, 51)]
            next_page = f'<{request.url.copy_merge_params({"page": "2"})}>; rel="next"'
            return httpx.Response(200, json=others, headers={"Link": next_page})
        if request.method == "GET":
            return httpx.Response(200, json=[{"number": 77, "title": "WIP: Add it", "head": {"ref": "kilo-loop/x-r1"}}])
        return httpx.Response(200, json={"number": 77, "title": json.loads(request.content)["title"]})

    change = forge_with("gitea", handler).find_open("kilo-loop/x-r1")
    assert change is not None and (change.number, change.draft) == (77, True)
