"""Damage a file the way a failing disk or a stray write does, for the cache-integrity tests."""

from __future__ import annotations

import os


def poke(path: str | os.PathLike, offset: int, data: bytes) -> None:
    """Overwrite bytes in place (size unchanged) and move the mtime on by a second, so a
    check that trusts size and mtime alone would miss it."""
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
