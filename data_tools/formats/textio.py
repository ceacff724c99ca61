"""Decode input bytes strictly: UTF-8 (a BOM is dropped, CRLF is accepted), else a clear error."""

from __future__ import annotations

import os

from data_tools.documents import FormatError


def read_text(path: str | os.PathLike) -> str:
    """The file as text with ``\\r\\n`` turned into ``\\n`` and a leading BOM removed."""
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(f"not valid UTF-8 (byte {exc.start})", path=str(path),
                          where=f"line {line}") from None
    return text.replace("\r\n", "\n")
