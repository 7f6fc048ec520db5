"""The machine's address on the local network, for `--lan`: the IPv4 address of the primary
non-virtual interface (docker, bridges, veth pairs and VPN tunnels are never chosen).

`choose_lan_address` is the pure decision; `list_interfaces` reads Linux's /sys/class/net,
/proc/net/route and SIOCGIFADDR. Elsewhere, the UDP-connect trick finds the address the
default route would use (no packet is sent).
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

SYS_NET = Path("/sys/class/net")
PROC_ROUTE = Path("/proc/net/route")
SIOCGIFADDR = 0x8915

# Interface names that belong to containers, bridges, VMs and VPNs, never to the Wi-Fi/LAN card.
VIRTUAL_PREFIXES = (
    "lo",
    "docker",
    "br-",
    "bridge",
    "veth",
    "virbr",
    "vnet",
    "vboxnet",
    "vmnet",
    "tun",
    "tap",
    "wg",
    "tailscale",
    "zt",
    "utun",
    "ppp",
    "ipsec",
    "nordlynx",
    "proton",
    "cni",
    "flannel",
    "cali",
    "kube",
    "vxlan",
    "lxc",
    "lxd",
    "podman",
    "dummy",
    "gre",
    "sit",
    "ip6tnl",
    "nebula",
    "ham",
    "awdl",
    "llw",
)


@dataclass(frozen=True)
class InterfaceInfo:
    name: str
    address: str  # IPv4, dotted quad
    up: bool = True
    physical: bool = True  # backed by a device (not under /sys/devices/virtual)
    default_route: bool = False


def is_virtual_name(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(VIRTUAL_PREFIXES)


def _usable_address(address: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)


def _private_rank(address: str) -> int:
    """Home/office networks first: 192.168/16, then 10/8, then 172.16/12, then anything else."""
    ip = ipaddress.IPv4Address(address)
    for rank, network in enumerate(("192.168.0.0/16", "10.0.0.0/8", "172.16.0.0/12")):
        if ip in ipaddress.IPv4Network(network):
            return rank
    return 3


def choose_lan_address(interfaces: Sequence[InterfaceInfo]) -> str | None:
    """The address a phone on the same Wi-Fi can reach, or None when there is none.

    Virtual, down, loopback and link-local candidates are dropped; among the rest the one
    carrying the default route wins, then a physical device, then the most home-like range.
    """
    candidates = [
        i for i in interfaces if i.up and not is_virtual_name(i.name) and _usable_address(i.address)
    ]
    if not candidates:
        return None
    best = min(
        candidates, key=lambda i: (not i.default_route, not i.physical, _private_rank(i.address), i.name)
    )
    return best.address


# ---------------------------------------------------------------- I/O (Linux)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def default_route_interfaces(route_table: str) -> set[str]:
    """Interfaces with a 0.0.0.0/0 route in /proc/net/route's text."""
    names: set[str] = set()
    for line in route_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
            names.add(fields[0])
    return names


def _ipv4_of(name: str) -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def list_interfaces(
    sys_net: Path = SYS_NET, route_file: Path = PROC_ROUTE, address_of: Callable[[str], str | None] = _ipv4_of
) -> list[InterfaceInfo]:
    """Every interface with an IPv4 address: its state, whether a device backs it, default route."""
    if not sys_net.is_dir():
        return []
    defaults = default_route_interfaces(_read(route_file))
    found: list[InterfaceInfo] = []
    for entry in sorted(sys_net.iterdir()):
        address = address_of(entry.name)
        if address is None:
            continue
        state = _read(entry / "operstate")
        physical = (entry / "device").exists() and "/virtual/" not in str(entry.resolve())
        found.append(
            InterfaceInfo(
                entry.name,
                address,
                up=state in ("up", "unknown", ""),
                physical=physical,
                default_route=entry.name in defaults,
            )
        )
    return found


def _route_probe_address() -> str | None:
    """The source address the kernel would use towards a private address (connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("10.255.255.255", 1))
            address = str(sock.getsockname()[0])
    except OSError:
        return None
    return address if _usable_address(address) else None


def lan_address() -> str | None:
    """This machine's LAN IPv4 address, or None when it has no usable network interface."""
    try:
        interfaces = list_interfaces()
    except OSError:
        interfaces = []
    if interfaces:
        return choose_lan_address(interfaces)
    return _route_probe_address()
