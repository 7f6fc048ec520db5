"""Where the dashboard binds, what URL it prints, which Host headers it accepts."""

from __future__ import annotations

import socket

import pytest

from kilo_loop.web.binding import (
    PortInUse,
    bound_port,
    choose_bind_host,
    open_listener,
    plan_binding,
)


@pytest.mark.parametrize(
    "host, lan, local, expected",
    [
        (None, False, False, "127.0.0.1"),
        (None, True, False, "0.0.0.0"),
        ("192.168.1.5", True, False, "192.168.1.5"),  # an explicit --host wins over --lan
        ("192.168.1.5", False, True, "127.0.0.1"),  # --local forces loopback
        (None, True, True, "127.0.0.1"),  # --local overrides a config "lan": true
    ],
)
def test_bind_host_precedence(host: str | None, lan: bool, local: bool, expected: str) -> None:
    assert choose_bind_host(host, lan, local) == expected


def test_lan_binds_everywhere_but_shows_the_real_address_with_a_token() -> None:
    binding = plan_binding(None, True, False, 7999, lambda: "192.168.1.106")
    assert binding.bind_host == "0.0.0.0"
    assert binding.url("tok") == "http://192.168.1.106:7999/?token=tok"
    assert "192.168.1.106:7999" in binding.allowed_hosts()
    assert "0.0.0.0:7999" not in binding.allowed_hosts()


def test_a_wildcard_is_never_shown_even_without_a_lan_address() -> None:
    for host in ("0.0.0.0", "::"):
        binding = plan_binding(host, False, False, 8000, lambda: None)
        assert (
            binding.shown_host == "127.0.0.1"
            and "0.0.0.0" not in binding.url("t")
            and "::" not in binding.url("t")
        )


def test_loopback_shows_the_token_too_and_accepts_only_local_names() -> None:
    binding = plan_binding(None, False, False, 7999, lambda: "192.168.1.2")
    assert binding.url("tok") == "http://127.0.0.1:7999/?token=tok"
    assert binding.allowed_hosts() == {"localhost:7999", "127.0.0.1:7999"}


@pytest.mark.parametrize(
    "host, v4, v6",
    [("127.0.0.1", True, False), ("::1", False, True), ("::", True, True), ("0.0.0.0", True, False),
     ("192.168.1.5", False, False), ("fd00::5", False, False)],
)
def test_ipv6_loopback_is_a_valid_host_only_when_listening_on_ipv6(host: str, v4: bool, v6: bool) -> None:
    allowed = plan_binding(host, False, False, 7999, lambda: None).allowed_hosts()
    assert ("[::1]:7999" in allowed) is v6 and ("127.0.0.1:7999" in allowed) is v4
    assert ("localhost:7999" in allowed) is (v4 or v6)


def test_explicit_host_is_allowed_and_ipv6_bracketed() -> None:
    assert "192.168.1.5:7999" in plan_binding("192.168.1.5", False, False, 7999, lambda: None).allowed_hosts()
    binding = plan_binding("fd00::5", False, False, 7999, lambda: None)
    assert (
        binding.url("t") == "http://[fd00::5]:7999/?token=t" and "[fd00::5]:7999" in binding.allowed_hosts()
    )


def test_port_in_use_is_detected_by_binding() -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with pytest.raises(PortInUse, match=f"port {port} is in use; pass --port N"):
            open_listener("127.0.0.1", port)
    finally:
        holder.close()


def test_port_zero_picks_a_free_port() -> None:
    sock = open_listener("127.0.0.1", 0)
    try:
        assert bound_port(sock) > 0
    finally:
        sock.close()
