"""`kilo-loop doctor`'s check of `--sandbox-network model|none`: one real round trip through the same
pieces a run uses — the loop's proxy on its Unix socket, a jail with its own network, the in-jail
bridge — to a throwaway local server the policy allows, and one refusal of a port it does not."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

from kilo_loop.sandbox.network import PROXY_PORT, Endpoint, NetworkPolicy
from kilo_loop.sandbox.proxy import NetworkProxy

# Run inside the jail: the allowed server straight (the bridge forwards it), a refused one through the proxy.
_CLIENT = (
    "import sys, urllib.request as u\n"
    "ok = u.build_opener(u.ProxyHandler({})).open(f'http://127.0.0.1:{sys.argv[1]}/', timeout=10).read()\n"
    "try:\n"
    "    proxy = u.ProxyHandler({'http': f'http://127.0.0.1:{sys.argv[2]}'})\n"
    "    u.build_opener(proxy).open('http://127.0.0.1:1/', timeout=10)\n"
    "    refused = 'not refused'\n"
    "except u.HTTPError as exc:\n"
    "    refused = str(exc.code)\n"
    "print(ok.decode(), refused)\n"
)
_TIMEOUT_S = 30.0


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
    writer.close()


async def _round_trip(bwrap: str) -> str | None:
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = NetworkProxy(NetworkPolicy("none", (Endpoint("127.0.0.1", port),)))
    await proxy.start()
    try:
        argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid",
                "--die-with-parent", "--ro-bind", str(proxy.directory), str(proxy.directory), "--",
                sys.executable, "-m", "kilo_loop.sandbox.bridge", str(proxy.socket), str(PROXY_PORT),
                "--forward", f"127.0.0.1:{port}", "--", sys.executable, "-c", _CLIENT, str(port), str(PROXY_PORT)]
        child = await asyncio.create_subprocess_exec(*argv, env=dict(os.environ), stdin=asyncio.subprocess.DEVNULL,
                                                     stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(child.communicate(), _TIMEOUT_S)
    finally:
        await proxy.aclose()
        server.close()
    said = out.decode(errors="replace").strip()
    if child.returncode != 0 or said != "ok 403":
        return f"the proxy round trip failed (exit {child.returncode}): {(said or err.decode(errors='replace'))[-300:]}"
    return None


def check_proxy(bwrap: str) -> str | None:
    """Why the jail's own network cannot reach the model through the loop's proxy here, or None."""
    try:
        return asyncio.run(_round_trip(bwrap))
    except (OSError, TimeoutError) as exc:
        return f"the proxy round trip failed: {exc}"
