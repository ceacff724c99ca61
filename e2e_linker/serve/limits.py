"""Request size and read deadline, enforced while the body is read.

Why a middleware around ``receive``: the framework buffers a body whole before a handler sees
it, so a limit checked in the handler comes after the memory is spent. Here a declared
``Content-Length`` over the limit is refused before a byte of the body is read, and a body
sent without one (chunked) is counted as it arrives and refused the moment it passes the
limit (413). A client that sends its body too slowly is cut off at the deadline (408), so a
slow client holds one connection, never the model. Bodies being received at once are bounded
too (``max_inflight_bytes`` over all requests), so many simultaneous uploads are answered 503
with ``Retry-After`` rather than filling memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse

from e2e_linker.serve.errors import RequestError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def too_large(limit: int) -> str:
    """The 413 message."""
    return f"request body over the limit of {limit} bytes (linker serve --max-request-bytes)"


class BodyLimits:
    """ASGI middleware: bodies of at most ``max_bytes``, received within ``timeout_s``.

    Errors raised while the application reads the body are :class:`RequestError`, which the
    application answers like any other refused request."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float,
                 max_inflight_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        #: body bytes all requests in progress may hold together (default: 8 full bodies)
        self.max_inflight_bytes = max_inflight_bytes or 8 * max_bytes
        self.inflight = 0  # one event loop: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await JSONResponse({"error": "Content-Length is not a number"},
                                   status_code=400)(scope, receive, send)
                return
            if int(declared) > self.max_bytes:
                await JSONResponse({"error": too_large(self.max_bytes)}, status_code=413,
                                   headers={"Connection": "close"})(scope, receive, send)
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        received = 0  # this body's bytes so far
        held = 0  # of them, counted in self.inflight
        done = False

        async def limited() -> Message:
            nonlocal received, held, done
            if done:  # after the body: waiting for a disconnect is not timed
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                raise RequestError(408, f"the request body did not arrive within "
                                        f"{self.timeout_s:g} s") from None
            if message["type"] == "http.request":
                size = len(message.get("body", b""))
                received += size
                if received > self.max_bytes:
                    raise RequestError(413, too_large(self.max_bytes),
                                       {"Connection": "close"})
                if self.inflight + size > self.max_inflight_bytes:
                    raise RequestError(503, "busy: too many request bodies are being "
                                            "received; retry later", {"Retry-After": "1"})
                self.inflight += size
                held += size
                done = not message.get("more_body", False)
            else:
                done = True
            return message

        try:
            await self.app(scope, limited, send)
        finally:
            self.inflight -= held
