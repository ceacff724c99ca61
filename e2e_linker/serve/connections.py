"""Who may talk to the server, and how long a connection may dawdle before its request.

Why its own module: these guards act below the routes. The listening socket is bound before
the model loads, so a port in use is one line and exit code 2 at once, not a model loaded for
nothing. A connection must send its request line and headers within the header timeout (and
may stay idle between requests that long): the HTTP library never times out a request that
has not finished its headers, so without this guard a client holds a socket forever by
sending nothing. And a server on a loopback address answers only requests whose ``Host``
header names the loopback, so a web page the user visits cannot reach it through a DNS name
that resolves to 127.0.0.1 (DNS rebinding): the service has no authentication.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from e2e_linker.errors import UserError
from e2e_linker.serve.config import LOOPBACK

#: ``--allowed-hosts`` value that turns the check off
ANY_HOST = "*"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_names(host: str, allowed: Iterable[str] | None) -> frozenset[str] | None:
    """The host names a ``Host`` header may give (lower case, IPv6 without brackets), or None
    for any: ``allowed`` when given (``*`` among them: any), else the loopback names when the
    server listens on a loopback address and any name otherwise."""
    if allowed is None:
        return frozenset(LOOPBACK) if host in LOOPBACK else None
    names = {name.strip().lower().removeprefix("[").removesuffix("]") for name in allowed}
    return None if ANY_HOST in names else frozenset(names - {""})


def host_of(header: str) -> str:
    """The host name of a ``Host`` header: the port dropped, lower case, IPv6 unbracketed."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class HostCheck:
    """ASGI middleware: requests whose ``Host`` header names a host not in ``names`` are
    answered 400 with one line (a request without one, which no browser sends, passes)."""

    def __init__(self, app: ASGIApp, names: frozenset[str] | None):
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.names is not None:
            header = dict(scope.get("headers") or ()).get(b"host")
            if header is not None:
                name = host_of(header.decode("latin-1"))
                if name not in self.names:
                    shown = ", ".join(f"[{n}]" if ":" in n else n for n in sorted(self.names))
                    message = (f"Host {name[:100]!r} is not allowed; this server answers "
                               f"{shown} (linker serve --allowed-hosts)")
                    await JSONResponse({"error": message}, status_code=400,
                                       headers={"Connection": "close"})(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol, with a deadline on request headers: a connection that has
    not finished its request line and headers ``timeout_keep_alive`` seconds (``linker serve
    --header-timeout``) after it opened, or after the first byte of its next request, is
    closed. uvicorn itself times out only idle connections between requests."""

    header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.arm()

    def data_received(self, data: bytes) -> None:
        if self.header_timer is None and self.between_requests():
            self.arm()
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before:  # a request's headers are complete
            self.disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        super().connection_lost(exc)

    def between_requests(self) -> bool:
        """Whether no request is in progress on this connection."""
        return self.cycle is None or self.cycle.response_complete

    def arm(self) -> None:
        """Start the header deadline."""
        self.disarm()
        self.header_timer = self.loop.call_later(self.timeout_keep_alive, self.headers_late)

    def disarm(self) -> None:
        """Stop the header deadline."""
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def headers_late(self) -> None:
        """The deadline passed: close the connection unless a request has begun."""
        self.header_timer = None
        if self.between_requests() and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(header_timeout_s: float) -> dict[str, Any]:
    """The options of ``uvicorn.Config`` (or ``uvicorn.run``) that put the header deadline
    and the idle timeout in place: the protocol as an import string, which ``--workers``
    processes import too."""
    return {"http": f"{__name__}:{HeaderDeadline.__name__}",
            "timeout_keep_alive": header_timeout_s}


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening), or a :class:`UserError` of one
    line when the address is in use or cannot be had: bound before the model loads, so a
    second server on the same port fails at once."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"cannot listen on {host}:{port}: the port is in use (another "
                            "server?); choose another with --port") from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock
