"""Choosing the LAN address a phone can open (pure), and reading interfaces from sysfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kilo_loop.web.lan import (
    InterfaceInfo,
    choose_lan_address,
    default_route_interfaces,
    is_virtual_name,
    list_interfaces,
)


def iface(name: str, address: str, **kw: bool) -> InterfaceInfo:
    return InterfaceInfo(name, address, **kw)


@pytest.mark.parametrize(
    "name",
    [
        "docker0",
        "br-1a2b3c",
        "veth12ab",
        "virbr0",
        "tun0",
        "tap1",
        "wg0",
        "tailscale0",
        "zt5u4y",
        "utun3",
        "lo",
        "vboxnet0",
        "cni0",
        "flannel.1",
        "podman0",
        "lxcbr0",
    ],
)
def test_virtual_interfaces_are_recognised(name: str) -> None:
    assert is_virtual_name(name)


@pytest.mark.parametrize("name", ["eth0", "enp3s0", "wlan0", "wlp2s0", "en0", "eno1"])
def test_real_interfaces_are_not_virtual(name: str) -> None:
    assert not is_virtual_name(name)


def test_docker_bridge_and_vpn_are_never_chosen() -> None:
    found = [
        iface("docker0", "172.17.0.1", default_route=True),
        iface("wg0", "10.8.0.2", default_route=True),
        iface("tun0", "10.9.0.1"),
        iface("wlan0", "192.168.1.106"),
    ]
    assert choose_lan_address(found) == "192.168.1.106"


def test_the_default_route_wins_over_other_real_interfaces() -> None:
    found = [iface("eth1", "192.168.50.2"), iface("wlan0", "10.0.0.23", default_route=True)]
    assert choose_lan_address(found) == "10.0.0.23"


def test_physical_then_home_range_break_ties() -> None:
    assert (
        choose_lan_address([iface("eth9", "10.1.1.1", physical=False), iface("eth0", "10.2.2.2")])
        == "10.2.2.2"
    )
    assert choose_lan_address([iface("eth0", "172.16.0.4"), iface("eth1", "192.168.0.4")]) == "192.168.0.4"


def test_loopback_link_local_down_and_nothing() -> None:
    assert choose_lan_address([]) is None
    assert (
        choose_lan_address(
            [
                iface("eth0", "127.0.0.1"),
                iface("eth1", "169.254.3.4"),
                iface("eth2", "192.168.1.9", up=False),
                iface("eth3", "not-an-ip"),
            ]
        )
        is None
    )


def test_default_route_table_parsing() -> None:
    table = (
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
        "wlan0\t0001A8C0\t00000000\t0001\t0\t0\t600\t00FFFFFF\t0\t0\t0\n"
        "docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    )
    assert default_route_interfaces(table) == {"wlan0"}


def test_list_interfaces_reads_sysfs(tmp_path: Path) -> None:
    sys_net = tmp_path / "net"
    for name, state, device in [("lo", "unknown", False), ("docker0", "down", False), ("wlan0", "up", True)]:
        (sys_net / name).mkdir(parents=True)
        (sys_net / name / "operstate").write_text(state + "\n")
        if device:
            (sys_net / name / "device").mkdir()
    route = tmp_path / "route"
    route.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
        "wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\n"
    )
    addresses = {"lo": "127.0.0.1", "docker0": "172.17.0.1", "wlan0": "192.168.1.106"}
    found = list_interfaces(sys_net, route, addresses.get)
    by_name = {i.name: i for i in found}
    assert by_name["wlan0"] == InterfaceInfo(
        "wlan0", "192.168.1.106", up=True, physical=True, default_route=True
    )
    assert by_name["docker0"].up is False and by_name["docker0"].physical is False
    assert choose_lan_address(found) == "192.168.1.106"
