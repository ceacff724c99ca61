"""Open corpus files the same way for every format: gzip-transparent, strictly UTF-8.

Every reader goes through here so that the same input quirks get the same answer everywhere:
a ``.gz`` file (recognised by its magic bytes, not its name) is decompressed on the fly, a
leading UTF-8 BOM is dropped, CRLF line ends are accepted, and bytes that are not UTF-8 are a
:class:`FormatError` naming the file and line instead of a ``UnicodeDecodeError`` traceback.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from typing import IO

from data_tools.documents import FormatError

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """The file's bytes, decompressed when it is gzip (whatever its name)."""
    handle = open(path, "rb")
    if handle.peek(2)[:2] != _GZIP_MAGIC:
        return handle
    handle.close()
    return gzip.open(path, "rb")  # type: ignore[return-value]  (owns and closes its file)


def head_bytes(path: str | os.PathLike, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    with open_binary(path) as handle:
        try:
            return handle.read(size)
        except (OSError, EOFError):  # truncated or corrupt gzip
            return b""


def _decode(data: bytes, path: str | os.PathLike, lineno: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not valid UTF-8 (byte {data[exc.start]:#04x} at column "
                          f"{exc.start + 1}); convert the file to UTF-8",
                          path=str(path), where=f"line {lineno}") from None


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` pairs, streamed; line ends (``\\n`` or ``\\r\\n``) removed.

    Only ``\\n`` ends a line (not ``str.splitlines``' other separators such as U+2028, which
    may legitimately occur inside PubTator text and must not shift the line count).
    """
    for lineno, line, error in iter_lines_checked(path):
        if error is not None:
            raise error
        yield lineno, line


def iter_lines_checked(path: str | os.PathLike) -> Iterator[tuple[int, str, FormatError | None]]:
    """Like :func:`iter_lines`, but a line that is not UTF-8 comes with its error, not raised.

    Its text is decoded with replacement characters so a reader can still see its structure
    (which document it belongs to) and skip just that document under ``--on-error skip``.
    """
    with open_binary(path) as handle:
        try:
            for lineno, raw in enumerate(handle, start=1):
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM):]
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                try:
                    yield lineno, _decode(raw, path, lineno), None
                except FormatError as error:
                    yield lineno, raw.decode("utf-8", errors="replace"), error
        except (OSError, EOFError) as exc:  # corrupt gzip stream
            raise FormatError(f"cannot read compressed data ({exc})", path=str(path)) from None


def read_text(path: str | os.PathLike) -> str:
    """The whole file as text, BOM dropped and ``\\r\\n`` turned into ``\\n``."""
    with open_binary(path) as handle:
        try:
            data = handle.read()
        except (OSError, EOFError) as exc:
            raise FormatError(f"cannot read compressed data ({exc})", path=str(path)) from None
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(f"not valid UTF-8 (byte {data[exc.start]:#04x})", path=str(path),
                          where=f"line {line}") from None
    return text.replace("\r\n", "\n")
