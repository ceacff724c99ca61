"""What a request can do wrong, as an HTTP status and a one-line message.

Why one exception: the body readers, the batcher and the limits all refuse requests; each
raises :class:`RequestError` and the application turns it into the same JSON answer
(``{"error": "..."}``), so a client sees one shape whatever went wrong.
"""

from __future__ import annotations


class RequestError(Exception):
    """A refused request: ``status`` (400, 408, 413, 415, 422, 503, ...), a one-line
    ``message`` and extra response ``headers`` (``Retry-After`` for 503)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        self.status = status
        self.message = one_line(message)
        self.headers = headers or {}
        super().__init__(self.message)


def one_line(message: str, limit: int = 300) -> str:
    """``message``'s first line, cut to ``limit`` characters: error answers stay one line
    and never echo a whole hostile body back."""
    line = (str(message).strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"
