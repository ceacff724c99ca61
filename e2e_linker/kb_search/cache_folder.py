"""Where the vector cache lives and how it is written: the folder, the encoder key, the lock.

Why a module of its own: the store (:mod:`e2e_linker.kb_search.cache`) and the rows it encodes
on demand (:mod:`e2e_linker.kb_search.partial_matrix`) write the same folders under the same
rules (one writer at a time, one clear error when the folder is not writable), and neither
should import the other for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError


def default_cache_dir() -> Path:
    """``$E2E_LINKER_CACHE`` or ``~/.cache/e2e_linker``."""
    return Path(os.environ.get("E2E_LINKER_CACHE", Path.home() / ".cache" / "e2e_linker"))


def encoder_fingerprint(encoder: TextEncoder) -> str:
    """A hash of the encoder's weights, pooling and name length: what the vectors depend on."""
    digest = hashlib.sha256()
    digest.update(f"{encoder.pooling}|{encoder.max_length}".encode())
    for key, value in sorted(encoder.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().to(torch.float16).cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def writable(folder: Path) -> Iterator[None]:
    """Turn a failure to write the cache (read-only, full, not a folder) into one clear line."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"cannot write the KB cache in {folder}: {exc.strerror or exc}; point "
                        "E2E_LINKER_CACHE (or --cache-dir) at a writable folder with room") from exc


@contextlib.contextmanager
def exclusive(folder: Path, what: str, progress: bool = True) -> Iterator[None]:
    """Hold ``folder/.lock`` while encoding or writing into ``folder``.

    Why: two runs that start on an empty cache at once must leave one valid cache, never a torn
    one; the second waits (saying so) and then finds the first one's vectors.
    """
    with writable(folder):
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".lock", "a+")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                print(f"waiting for another process {what} in {folder}", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()
