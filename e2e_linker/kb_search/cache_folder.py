"""Where the vector cache lives and how it is written: the folder, the encoder key, the lock.

Why a module of its own: the store (:mod:`e2e_linker.kb_search.cache`) and the rows it encodes
on demand (:mod:`e2e_linker.kb_search.partial_matrix`) write the same folders under the same
rules (one writer at a time, one clear error when the folder is not writable or has no room),
and neither should import the other for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from e2e_linker.encoder.text_encoder import ENCODE_SCHEME, TextEncoder
from e2e_linker.errors import UserError

#: room left free beyond what a cache write needs (file system metadata, records)
ROOM_MARGIN = 1 << 20


def default_cache_dir() -> Path:
    """``$E2E_LINKER_CACHE`` or ``~/.cache/e2e_linker``."""
    return Path(os.environ.get("E2E_LINKER_CACHE", Path.home() / ".cache" / "e2e_linker"))


def encoder_fingerprint(encoder: TextEncoder) -> str:
    """A hash of the encoder's weights, pooling and name length: what the vectors depend on.

    The hash covers every tensor of the state dict as it is in memory now (each rounded to
    fp16, in C order, after its name), so a weight changed in memory or on disk changes it
    whatever the file says; nothing is remembered between calls or processes, which is what
    makes it safe for an encoder that training has just changed.

    Why fp32 tensors are rounded by numpy: the bytes are the ones torch's ``.to(float16)``
    gives (both round to nearest even; the vector caches on disk and the packed indexes
    shipped with models are named by this hash, so it must not move), but torch's cast of a
    hundred small tensors costs about a quarter of a second on a 2-core CPU, several times
    numpy's, on every load; the rounded arrays are hashed without a second copy."""
    digest = hashlib.sha256()
    digest.update(f"{encoder.pooling}|{encoder.max_length}".encode())
    for key, value in sorted(encoder.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(fp16_bytes(value))
    return digest.hexdigest()[:16]


def store_key(fingerprint: str) -> str:
    """The folder name of an encoder's store: ``<fingerprint>`` for vectors of the padded
    batches encoded before :data:`ENCODE_SCHEME`, ``<fingerprint>-<scheme>`` after.

    Why the scheme is in the name and not in the fingerprint: the fingerprint also names the
    packed indexes shipped with models, whose approximate vectors serve any scheme; a store's
    exact vectors must all come from one scheme, or a vector's last digits (and a near tie
    between two links) depend on which run encoded it first
    (docs/decisions/0056-names-encoded-alone.md)."""
    return f"{fingerprint}-{ENCODE_SCHEME}"


def fp16_bytes(tensor: torch.Tensor) -> np.ndarray:
    """``tensor`` rounded to fp16 as a C-ordered array: the bytes of
    ``tensor.to(torch.float16).numpy().tobytes()``, for hashing without that copy.

    Why fp32 goes through numpy: see :func:`encoder_fingerprint`. A tensor holding a NaN, and
    other dtypes (bf16, fp16, integers), keep torch's cast: numpy keeps a signalling NaN's
    payload where torch makes it quiet, and its rules for the others were not checked."""
    value = tensor.detach().cpu()
    if value.dtype == torch.float32 and not np.isnan(value.numpy()).any():
        with np.errstate(over="ignore"):  # beyond fp16's range: inf, as torch's cast
            return np.ascontiguousarray(value.numpy(), dtype=np.float16)
    return np.ascontiguousarray(value.to(torch.float16).numpy())


@contextlib.contextmanager
def writable(folder: Path) -> Iterator[None]:
    """Turn a failure to write the cache (read-only, full, not a folder) into one clear line."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"cannot write the KB cache in {folder}: {exc.strerror or exc}; free "
                        "some space (or fix the folder), or point E2E_LINKER_CACHE (or "
                        "--cache-dir) at a writable folder with room") from exc


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


def remove_folder(folder: Path, lock_folder: Path, what: str, progress: bool = True) -> None:
    """Delete ``folder`` while holding ``lock_folder``'s lock (:func:`exclusive`; the folder
    itself or the one its writers lock), so that no run of this code is writing into it.

    Why the lock: ``linker kb prune`` deletes only what this code never reads, but a build of
    the same cache (a compiled KB beside a stale one) takes the same lock, and a deletion must
    not interleave with its rename into place."""
    with exclusive(lock_folder, what, progress), writable(folder):
        shutil.rmtree(folder)


@contextlib.contextmanager
def try_exclusive(folder: Path) -> Iterator[bool]:
    """Hold ``folder/.lock`` if nobody else does: yields whether it is held.

    Why: work that can wait for a later run (writing the checksum record of an old cache file)
    must never make a load wait for another process's hour-long encode, nor fail on a
    read-only cache."""
    held = False
    try:
        handle = open(folder / ".lock", "a+")  # noqa: SIM115 - held for the whole block
    except OSError:
        handle = None
    if handle is not None:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except OSError:
            pass
    try:
        yield held
    finally:
        if handle is not None:
            handle.close()


def ensure_room(folder: Path, needed: int, what: str) -> None:
    """Refuse a cache write of ``needed`` bytes that the file system has no room for, before
    anything is written.

    Why: a disk that fills up half-way leaves a partial file to clean up; one that fills up
    while a memory map is written kills the process with SIGBUS. The cache's writes go through
    the file (so a full disk is an ``OSError`` all the same), but saying so first is cheaper."""
    where = Path(folder)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return
    if free < needed + ROOM_MARGIN:
        raise UserError(f"cannot write the KB cache in {folder}: only {free / 2**20:.1f} MB "
                        f"free, and {what} needs {(needed + ROOM_MARGIN) / 2**20:.1f} MB; free "
                        "some space, or point E2E_LINKER_CACHE (or --cache-dir) at a folder "
                        "with room")
