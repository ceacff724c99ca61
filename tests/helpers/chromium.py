"""A real headless Chromium (Debian's package) for page tests: screenshot a local file.

Without the browser a page test is skipped with the reason and the fix, so that the README's
set-up and test commands end green on a fresh machine; under CI (``CI`` set, as CI services
and ``.ci/run`` do) a missing browser fails instead, so the page test can never be lost there
unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: the flags this machine needs: no sandbox as root, no network chatter, a fresh profile
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")
#: why a page test did not run, and how to make it run
MISSING = "Chromium is not installed (apt-get install chromium runs the page tests)"


def under_ci(environ: dict[str, str] | None = None) -> bool:
    """Whether ``CI`` is set (to anything but an empty, ``0``, ``false`` or ``no`` value)."""
    value = (os.environ if environ is None else environ).get("CI")
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def find_chromium() -> str | None:
    """The browser's path, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium() -> str:
    """The browser's path; without one the calling test is skipped (fails under CI)."""
    path = find_chromium()
    if path is None:
        if under_ci():
            pytest.fail(f"{MISSING}; CI must have it (CI is set)", pytrace=False)
        pytest.skip(MISSING)
    return path


def screenshot(page: Path, out: Path, size: tuple[int, int] = (1200, 900)) -> Path:
    """Render ``page`` (a local HTML file) and write a PNG screenshot to ``out``."""
    profile = out.parent / "chromium-profile"
    done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}",
                           f"--window-size={size[0]},{size[1]}", f"--screenshot={out}",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert out.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    return out
