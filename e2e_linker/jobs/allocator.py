"""Keep a long corpus run's resident memory bounded by the batch (glibc heap settings).

Why: a `linker annotate` run allocates differently sized buffers for every group of chunks
(token states, span scores, KB search blocks). glibc raises its mmap threshold each time a
large mmapped block is freed, so later large buffers come from the heap instead, and with one
arena per thread the freed pieces stay resident: with the default model, peak RSS grew from 1k
to 10k documents although nothing is kept (docs/decisions/0035-startup.md). A fixed mmap
threshold sends every large buffer straight back to the OS when it is freed, and few arenas
keep the small ones in one place. The same can be set from outside the process with
``GLIBC_TUNABLES``/``MALLOC_*`` variables; when the user has set any of those, they win and
nothing is changed here.
"""

from __future__ import annotations

import ctypes
import functools
import os

#: glibc mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

#: buffers at least this large are mmapped and unmapped on free (fixed: no dynamic growth)
MMAP_THRESHOLD_BYTES = 1 << 20
#: heap arenas; torch's intra-op threads share them instead of keeping one each
ARENA_MAX = 2

_USER_SETTINGS = ("GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_",
                  "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, or None where there is none (musl, macOS, Windows)."""
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def bound_heap() -> bool:
    """Apply the settings above once, early (before worker threads exist); True if applied.

    A no-op (False) on a libc without ``mallopt`` (musl, macOS, Windows) or when the user
    configured glibc's allocator through the environment.
    """
    if any(name in os.environ for name in _USER_SETTINGS):
        return False
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    ok = (mallopt(M_ARENA_MAX, ARENA_MAX) == 1) and ok
    return ok


def release_freed_memory() -> None:
    """Give freed heap back to the OS now (glibc ``malloc_trim``; a no-op elsewhere).

    Called by the corpus engine after every group of documents: glibc otherwise keeps freed
    blocks of each group's differently sized buffers in its arenas (with the default model the
    anonymous peak went 2343 → 2856 MiB from 1k to 10k documents before this and
    :func:`bound_heap`; docs/decisions/0035-startup.md).
    """
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
