"""--sandbox-network as data: model endpoints found in a CLI's environment, the allow-list, the proxy's
request parsing, and the jail's command behind the bridge."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.network import (
    Endpoint,
    NetworkPolicy,
    allow_entry_matches,
    endpoint,
    model_endpoints,
    parse_request_head,
    proxy_env,
)
from kilo_loop.sandbox.policy import JailPaths, ProjectFacts
from kilo_loop.sandbox.proxy import NetworkProxy


def test_endpoints_from_urls() -> None:
    assert endpoint("https://api.x.com/v1") == Endpoint("api.x.com", 443)
    assert endpoint("http://127.0.0.1:8080/v1") == Endpoint("127.0.0.1", 8080)
    assert endpoint("ftp://x") is None and endpoint("not a url") is None


def test_model_endpoints_come_from_base_urls_inline_config_files_and_the_backend(tmp_path: Path) -> None:
    config = tmp_path / "kilo.json"
    config.write_text(json.dumps({"provider": {"a": {"options": {"baseURL": "http://127.0.0.1:9/v1"}}},
                                  "$schema": "https://schema.example/config.json"}), encoding="utf-8")
    env = {"ANTHROPIC_BASE_URL": "https://proxy.corp:8443", "KILO_CONFIG": str(config),
           "OPENCODE_CONFIG_CONTENT": '{"provider": {"b": {"options": {"baseURL": "https://llm.local/v1"}}}}',
           "HOME": "/home/u"}
    found = model_endpoints(env, ("api.anthropic.com",))
    assert set(found) == {Endpoint("proxy.corp", 8443), Endpoint("127.0.0.1", 9), Endpoint("llm.local", 443),
                          Endpoint("api.anthropic.com", 443)}  # never the $schema URL


@pytest.mark.parametrize(("entry", "target", "allowed"), [
    ("registry.npmjs.org", Endpoint("registry.npmjs.org", 443), True),
    ("registry.npmjs.org:443", Endpoint("registry.npmjs.org", 80), False),
    ("*.pypi.org", Endpoint("files.pypi.org", 443), True),
    ("*.pypi.org", Endpoint("pypi.org", 443), True),
    ("*.pypi.org", Endpoint("evilpypi.org", 443), False),
])
def test_allow_entries(entry: str, target: Endpoint, allowed: bool) -> None:
    assert allow_entry_matches(entry, target) is allowed


def test_model_allows_the_list_and_none_only_the_model() -> None:
    model = (Endpoint("127.0.0.1", 9),)
    registry = Endpoint("registry.npmjs.org", 443)
    assert NetworkPolicy("model", model, ("registry.npmjs.org",)).allows(registry)
    assert not NetworkPolicy("none", model, ("registry.npmjs.org",)).allows(registry)
    assert NetworkPolicy("none", model).allows(Endpoint("127.0.0.1", 9))
    assert not NetworkPolicy("model", model).allows(Endpoint("127.0.0.1", 10))
    assert NetworkPolicy("model", model).forwards == model


def test_proxy_requests_are_parsed_and_rewritten_for_the_origin() -> None:
    assert parse_request_head(b"CONNECT api.x.com:443 HTTP/1.1\r\nHost: x\r\n\r\n")[:2] == (
        "CONNECT", Endpoint("api.x.com", 443))
    method, target, rewritten = parse_request_head(
        b"GET http://h.example:8080/a?b=1 HTTP/1.1\r\nHost: h.example\r\nProxy-Authorization: x\r\n"
        b"Connection: keep-alive\r\n\r\n")
    assert (method, target) == ("GET", Endpoint("h.example", 8080))
    assert rewritten == b"GET /a?b=1 HTTP/1.1\r\nHost: h.example\r\nConnection: close\r\n\r\n"
    assert parse_request_head(b"GET /relative HTTP/1.1\r\n\r\n")[1] is None
    assert parse_request_head(b"garbage\r\n\r\n")[1] is None


def test_proxy_variables_in_both_spellings() -> None:
    env = proxy_env()
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://127.0.0.1:3128"
    assert "127.0.0.1" in env["NO_PROXY"]


def test_a_jail_with_its_own_network_runs_the_command_behind_the_bridge(tmp_path: Path) -> None:
    facts = ProjectFacts(tmp_path, (), (), (), (), ())
    proxy = NetworkProxy(NetworkPolicy("model", ()))
    try:
        jail = Jail("bwrap", facts, JailPaths(model_hosts=("api.anthropic.com",)), network="model", proxy=proxy)
        argv, env = jail.wrap(["claude", "-p"], {"PATH": "/usr/bin", "X_BASE_URL": "http://127.0.0.1:9"})
        assert "--unshare-net" in argv
        tail = argv[argv.index("--", argv.index("--chdir")) + 1:]
        assert tail[:3] == [sys.executable, "-m", "kilo_loop.sandbox.bridge"]
        assert tail[tail.index("--forward") + 1] == "127.0.0.1:9" and tail[-2:] == ["claude", "-p"]
        assert ["--ro-bind", str(proxy.directory), str(proxy.directory)] == argv[
            argv.index(str(proxy.directory)) - 1:argv.index(str(proxy.directory)) + 2]
        assert env["HTTPS_PROXY"] == "http://127.0.0.1:3128"
        assert Endpoint("api.anthropic.com", 443) in proxy.policy.model
        verify_argv, _ = Jail("bwrap", facts, JailPaths(), network="none", proxy=proxy).wrap(["pytest"], {}, "verify")
        assert "kilo_loop.sandbox.bridge" not in verify_argv and "--unshare-net" in verify_argv
        full_argv, _ = Jail("bwrap", facts, JailPaths()).wrap(["pytest"], {})
        assert "--unshare-net" not in full_argv
    finally:
        proxy.directory.rmdir()


def test_the_proxy_tunnels_what_the_policy_allows_and_refuses_the_rest() -> None:
    """The loop's proxy on its Unix socket, against a throwaway local server (no jail needed)."""

    async def scenario() -> tuple[bytes, bytes, list[str]]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.0 200 OK\r\n\r\nhello")
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = NetworkProxy(NetworkPolicy("model", (Endpoint("127.0.0.1", port),)))
        await proxy.start()
        try:
            reader, writer = await asyncio.open_unix_connection(str(proxy.socket))
            writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n".encode())
            allowed = await reader.read()
            reader, writer = await asyncio.open_unix_connection(str(proxy.socket))
            writer.write(b"GET http://127.0.0.1:1/x HTTP/1.1\r\nHost: a\r\n\r\n")
            refused = await reader.read()
            return allowed, refused, [r.target for r in proxy.drain()]
        finally:
            await proxy.aclose()
            server.close()

    allowed, refused, refusals = asyncio.run(scenario())
    assert allowed.startswith(b"HTTP/1.1 200 Connection established") and allowed.endswith(b"hello")
    assert refused.startswith(b"HTTP/1.1 403") and b"127.0.0.1:1" in refused
    assert refusals == ["127.0.0.1:1"]
