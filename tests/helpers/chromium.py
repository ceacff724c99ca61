"""A real headless Chromium (Debian's package) for page tests: screenshot a local file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

#: the flags this machine needs: no sandbox as root, no network chatter, a fresh profile
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")


def chromium() -> str:
    """The browser's path; fails (never skips) without one: CI installs it (.ci/run)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "Chromium is needed for this test: apt-get install chromium"
    return path


def screenshot(page: Path, out: Path, size: tuple[int, int] = (1200, 900)) -> Path:
    """Render ``page`` (a local HTML file) and write a PNG screenshot to ``out``."""
    profile = out.parent / "chromium-profile"
    done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}",
                           f"--window-size={size[0]},{size[1]}", f"--screenshot={out}",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert out.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    return out
