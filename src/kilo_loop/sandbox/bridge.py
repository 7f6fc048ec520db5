"""Inside a jail with its own network namespace: the only way out, to the loop's proxy socket.

`python -m kilo_loop.sandbox.bridge SOCKET PROXY_PORT [--forward HOST:PORT …] -- COMMAND …` listens
on 127.0.0.1:PROXY_PORT (the CLIs speak TCP to their proxy, so each connection is relayed as it is
to the Unix socket) and, for a loopback model endpoint, on its own port (each connection opened with
a `CONNECT` to that endpoint, so a CLI that ignores proxy variables still reaches a local model
server); then runs COMMAND with the same stdio, passes it the signals it gets, and exits with its
status. Nothing here decides: the loop's proxy does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys

from kilo_loop.sandbox.proxy import pipe_both

_LISTEN_HOST = "127.0.0.1"


async def _relay(socket_path: str, preface: bytes, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
    try:
        upstream = await asyncio.open_unix_connection(socket_path)
        if preface:
            upstream[1].write(preface)
            answer = await upstream[0].readuntil(b"\r\n\r\n")
            if b" 200 " not in answer.split(b"\r\n", 1)[0]:
                writer.write(answer)  # the proxy's refusal, as it is
                writer.close()
                upstream[1].close()
                return
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    await pipe_both((reader, writer), upstream)


async def _listen(socket_path: str, port: int, preface: bytes) -> asyncio.base_events.Server:
    return await asyncio.start_server(lambda r, w: _relay(socket_path, preface, r, w), _LISTEN_HOST, port)


async def _inward(port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The loop, from outside, to a server inside the jail's network (the warm agent server)."""
    try:
        inside = await asyncio.open_connection(_LISTEN_HOST, port)
    except OSError:
        writer.close()
        return
    await pipe_both((reader, writer), inside)


async def _inbound(entry: str) -> asyncio.base_events.Server:
    """`FD:PORT`: accept on the inherited listening socket FD, relay each connection to PORT inside."""
    fd, _, port = entry.partition(":")
    inside = int(port)

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _inward(inside, reader, writer)

    return await asyncio.start_unix_server(relay, sock=socket.socket(fileno=int(fd)))


def _option(head: list[str], name: str) -> list[str]:
    return [head[i + 1] for i, arg in enumerate(head) if arg == name and i + 1 < len(head)]


def parse(argv: list[str]) -> tuple[str, int, list[str], list[str], list[str]]:
    if "--" not in argv or len(argv) < 2:
        raise SystemExit("usage: bridge SOCKET PROXY_PORT [--forward HOST:PORT ...] [--inbound FD:PORT] -- COMMAND ...")
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    if not command:
        raise SystemExit("bridge: nothing to run")
    return head[0], int(head[1]), _option(head, "--forward"), _option(head, "--inbound"), command


async def main(argv: list[str]) -> int:
    socket_path, proxy_port, forwards, inbound, command = parse(argv)
    servers = [await _listen(socket_path, proxy_port, b"")]
    for entry in inbound:  # a listening Unix socket the loop made and handed down by descriptor
        servers.append(await _inbound(entry))
    for target in forwards:
        forwarded = int(target.rpartition(":")[2])
        servers.append(await _listen(socket_path, forwarded, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode()))
    try:
        child = await asyncio.create_subprocess_exec(*command)
    except OSError as exc:
        print(f"bridge: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, child.send_signal, sig)
    code = await child.wait()
    for server in servers:
        server.close()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(asyncio.run(main(sys.argv[1:])))
