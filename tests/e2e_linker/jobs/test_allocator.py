"""bound_heap: freed large buffers leave the process (the case that made corpus runs creep)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt settings are glibc's")

# 50 blocks of 4 MiB are allocated after a 16 MiB block was freed (which raises glibc's dynamic
# mmap threshold, so by default they come from the heap), then freed while one later block
# stays: resident memory before and after the frees is printed.
PROBE = r"""
import ctypes, os, sys
if sys.argv[1] == "bound":
    from e2e_linker.jobs.allocator import bound_heap
    assert bound_heap()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
def filled(n):
    p = libc.malloc(n)
    ctypes.memset(p, 1, n)
    return p
libc.free(filled(16 << 20))
blocks = [filled(4 << 20) for _ in range(50)]
keep = filled(4 << 20)
before = rss_mib()
for b in blocks:
    libc.free(b)
print(before, rss_mib())
"""


def _probe(mode: str) -> tuple[int, int]:
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         check=True, env=run_env).stdout.split()
    return int(out[0]), int(out[1])


def test_freed_buffers_are_returned_with_bound_heap():
    before, after = _probe("bound")
    assert before >= 200
    assert after < before - 150


def test_default_glibc_keeps_them():
    """The control: without the settings the same frees leave the memory resident."""
    before, after = _probe("plain")
    assert after > before - 50


def test_user_environment_wins(monkeypatch):
    from e2e_linker.jobs.allocator import bound_heap

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert bound_heap() is False


def test_cli_applies_it():
    """`linker` calls bound_heap in the group callback, before any command's own code."""
    from unittest import mock

    from click.testing import CliRunner

    from e2e_linker import cli

    with mock.patch.object(cli, "bound_heap") as called:
        result = CliRunner().invoke(cli.main, ["merge", "--help"])
    assert result.exit_code == 0
    assert called.call_count == 1
