"""A small tmpfs for fault-injection tests: a full or read-only disk, for real."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(where: Path, options: str, instead: str) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` with mount ``options`` (e.g. ``size=1m`` or ``ro``).

    Only root may mount one: elsewhere the test is skipped, saying so and naming what covers
    the same code there (``instead``)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("a full or read-only disk is simulated with a small tmpfs, which only root "
                    f"may mount; {instead}")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
