"""`--sandbox-network full|model|none`, as data: which hosts a jail in its own network namespace may
reach through the loop's proxy, and the model endpoints the backend's environment names. Pure.

`model`: the model endpoint(s) plus `sandboxAllowHosts` (a package registry, say). `none`: the model
endpoint(s) only — the agent CLI must reach its model — and the verify command nothing at all.
A loopback endpoint (a local model server) is forwarded port for port by the in-jail bridge, so a
CLI that ignores proxy variables still reaches it; every other host goes through HTTP(S)_PROXY.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# The in-jail bridge's proxy port (the jail's loopback is its own: nothing else listens there).
PROXY_PORT = 3128
_BASE_URL = re.compile(r"""["']?(?:baseURL|baseUrl|base_url)["']?\s*[:=]\s*["'](?P<url>https?://[^"'\s]+)["']""")
_CONFIG_SUFFIXES = ("_CONFIG_CONTENT",)
_CONFIG_FILES = ("_CONFIG",)  # KILO_CONFIG, OPENCODE_CONFIG: a file holding the provider
_MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True, order=True)
class Endpoint:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def endpoint(url: str) -> Endpoint | None:
    """`https://api.x.com/v1` → api.x.com:443; None for what is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return Endpoint(parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80))


def urls_in_config(text: str) -> list[str]:
    """The base URLs a CLI config (JSON, JSONC or TOML) names for its providers."""
    return [m.group("url") for m in _BASE_URL.finditer(text)]


def _read(path: str) -> str:
    try:
        file = Path(path)
        return file.read_text(encoding="utf-8", errors="replace") if file.stat().st_size <= _MAX_CONFIG_BYTES else ""
    except OSError:
        return ""


def model_endpoints(env: Mapping[str, str], declared: Iterable[str] = ()) -> tuple[Endpoint, ...]:
    """Where the agent CLI's model is: `*_BASE_URL` variables, the provider base URLs in its inline
    config or config file, and the hosts its backend declares (`api.anthropic.com`, …)."""
    urls: list[str] = [f"https://{host}" if "://" not in host else host for host in declared]
    for name, value in env.items():
        if name.endswith("_BASE_URL"):
            urls.append(value)
        elif name.endswith(_CONFIG_SUFFIXES):
            urls += urls_in_config(value)
        elif name.endswith(_CONFIG_FILES) and value.startswith("/"):
            urls += urls_in_config(_read(value))
    found = (endpoint(url) for url in urls)
    return tuple(sorted({e for e in found if e is not None}))


def allow_entry_matches(entry: str, target: Endpoint) -> bool:
    """`host`, `host:port` or `*.domain` (the domain itself and every subdomain)."""
    entry = entry.strip().lower()
    host, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if port and (not port.isdigit() or int(port) != target.port):
        return False
    if host.startswith("*."):
        return target.host == host[2:] or target.host.endswith(host[1:])
    return target.host == host


@dataclass(frozen=True)
class NetworkPolicy:
    """What the loop's proxy lets a jailed process reach."""

    mode: str  # "model" | "none"
    model: tuple[Endpoint, ...]
    allow_hosts: tuple[str, ...] = ()

    def allows(self, target: Endpoint) -> bool:
        if target in self.model:
            return True
        return self.mode == "model" and any(allow_entry_matches(e, target) for e in self.allow_hosts)

    @property
    def forwards(self) -> tuple[Endpoint, ...]:
        """Loopback model endpoints the in-jail bridge listens on, port for port."""
        return tuple(e for e in self.model if e.loopback and e.port != PROXY_PORT)

    def describe(self) -> str:
        hosts = ", ".join(str(e) for e in self.model) or "none found"
        extra = f"; also {', '.join(self.allow_hosts)}" if self.mode == "model" and self.allow_hosts else ""
        return f"model endpoints {hosts}{extra}"


def proxy_env(port: int = PROXY_PORT) -> dict[str, str]:
    """The proxy variables every jailed process gets (both spellings: tools read one or the other)."""
    url = f"http://127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "ALL_PROXY": url, "NO_PROXY": "127.0.0.1,localhost,::1"}
    return {**env, **{name.lower(): value for name, value in env.items()}}


def parse_request_head(head: bytes) -> tuple[str, Endpoint | None, bytes]:
    """A proxy request's first line: (method, the target, the request rewritten for the origin server —
    empty for CONNECT). `CONNECT host:port` or an absolute-form `GET http://host/path HTTP/1.1`."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3:
        return "", None, b""
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        return "CONNECT", Endpoint(host.strip("[]").lower(), int(port)) if port.isdigit() and host else None, b""
    found = endpoint(target)
    if found is None or not target.lower().startswith("http://"):
        return method, None, b""
    split = urlsplit(target)
    path = (split.path or "/") + (f"?{split.query}" if split.query else "")
    headers = [h for h in rest.split(b"\r\n") if not h.lower().startswith((b"proxy-", b"connection:"))]
    rewritten = f"{method} {path} {version}\r\n".encode("latin-1") + b"\r\n".join(headers)
    return method, found, rewritten.rstrip(b"\r\n") + b"\r\nConnection: close\r\n\r\n"
