"""The ``linker`` command run as a user runs it, from an evaluation.

Why its own module: the first-run evaluation times and scores
whole ``linker`` processes (a fresh cache, the user's command line) rather than calling the
library, and read ``linker score --json`` back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def linker(args: list[str], cache: Path) -> tuple[float, str, str]:
    """Run ``linker -v ARGS`` with ``E2E_LINKER_CACHE=cache``: (wall seconds, stdout, stderr).
    ``-v``: the KB index lines on stderr (which index served the run), which a run on a pipe
    does not print otherwise."""
    env = {**os.environ, "E2E_LINKER_CACHE": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "e2e_linker", "-v", *args], capture_output=True,
                          text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"linker {' '.join(args)} failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    return seconds, done.stdout, done.stderr


def scores(stdout: str) -> dict:
    """The JSON report of ``linker score --json``."""
    return json.loads(stdout)
