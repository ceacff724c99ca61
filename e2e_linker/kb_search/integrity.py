"""Integrity records of the KB vector cache: every cache file can tell that it is whole and right.

Why: the cache holds hours of encoding and every run trusts it. A file cut short (a full disk, a
crash, a copy) used to fail as "cannot load the model", and one overwritten at the same size
gave different links with exit code 0. So each file carries a record of what it must be, every
load checks it, and a file that fails is reported by name, discarded and made again.

**The record** of a whole file ``F`` (the name table's ``names.jsonl`` and ``vectors.npy``, a
list's full matrix ``kb/<digest>.npy`` or ``<hash>-<n>.npy``, each part of a unit list being
encoded) is ``F.sums.json``: ``F``'s size in bytes, the sha256 (first 128 bits) of its ``.npy``
header and of every block of ``block_bytes`` after it (whole rows, about 1 MiB: 1,365 rows of
384 fp16 values). It is written after the file and atomically; while a file is being replaced
the new record waits as ``F.sums.json.new`` (written before the file is renamed into place,
renamed over the record after), so whatever moment a writer is killed at, the file on disk
matches one of the two. Rows of a partial matrix are written one by one and carry one crc32
each instead (:mod:`e2e_linker.kb_search.partial_matrix`).

**What is checked when** (:func:`check_file`): the header and the size, always (a stat and a
read of the header: microseconds); every block, the first time a process reads a version of the
file — and a version whole-checked once is remembered, in the process and on disk, so later
loads of the same version cost a few stats. A *version* is the file's and its record's (device,
inode, size, mtime, ctime): any write to either changes the ctime, which no user can set back,
so a byte changed in place (``dd conv=notrunc``, a failed copy) makes a new version that is
checked whole at its next load. The remembered check of ``F`` is ``F.verified.json``
(:data:`STAMP_SUFFIX`: the two versions), written after a whole check or a sealed write; it is
trusted only when the file's and the record's ctimes are older than the stamp itself (a change
in the same clock tick as the check is checked again: "racy" as git calls it). Why not hash
every byte on every load: the compiled KB alone is 321 MB (0.4 s of sha256 on every start,
against a 2–3 s start); why not sample, as before issue 47: a 10-byte overwrite in a block not
sampled changed links with exit code 0. ``full=True`` (``linker kb info --verify``) reads every
byte now, whatever is remembered. What is not covered: a byte that changes on disk without a
write through the file system (a failing disk under a file whose ctime stays) is found by
``--verify`` only.

**Files without a record** (caches written before records existed, or a run killed between a
file and its record) are *unverified*: :func:`adopt` checks one whole — header, size, no row
that is all zeros (no encoder writes one; a file zeroed by a failed write is) — and writes its
record, once, when the cache folder's lock is free. Why adopt rather than trust forever or
discard: an old cache keeps working without being re-encoded, and from its next load on is
protected like a new one; a damaged old file is the same as a new one missing its record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import try_exclusive

RECORD_FORMAT = "e2e_linker.cache-sums.v1"
#: a file's record is ``<file><RECORD_SUFFIX>``; ``…<PENDING_SUFFIX>`` while it is replaced
RECORD_SUFFIX = ".sums.json"
PENDING_SUFFIX = ".sums.json.new"
#: about how many bytes one digest covers (rounded down to whole rows)
BLOCK_BYTES = 1 << 20
#: the remembered whole check of a file is ``<file><STAMP_SUFFIX>``
STAMP_SUFFIX = ".verified.json"
STAMP_FORMAT = "e2e_linker.verified.v1"
#: hex digits kept of each sha256 (128 bits)
DIGEST_HEX = 32
#: attempts at a check that fails while another process may be replacing the file
CHECK_ATTEMPTS = 3

OK = "ok"
UNVERIFIED = "unverified"
DAMAGED = "damaged"

#: :func:`file_version` of files (and their records) checked whole by this process
_CHECKED_WHOLE: set[tuple[int, ...]] = set()


class DamagedFile(Exception):
    """A cache file is not what it must be; ``path`` names it, ``why`` says how."""

    def __init__(self, path: str | os.PathLike, why: str):
        super().__init__(f"{path}: {why}")
        self.path = Path(path)
        self.why = why


@dataclass(frozen=True)
class NpyLayout:
    """Where an ``.npy`` file's values start, and their shape and type (from its header)."""

    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def row_bytes(self) -> int:
        """Bytes of one row (of one value for a vector)."""
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    @property
    def end(self) -> int:
        """The file's size when it is whole."""
        return self.offset + int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class Verdict:
    """What a check of one file found: ``state`` is :data:`OK`, :data:`UNVERIFIED` (no record)
    or :data:`DAMAGED` (``why``; ``bad_blocks`` when only some blocks of a file are damaged,
    each ``block_rows`` rows of a matrix)."""

    path: Path
    state: str
    why: str = ""
    bad_blocks: tuple[int, ...] = ()
    block_rows: int = 0
    blocks: int = 0
    checked: int = 0


def record_path(path: str | os.PathLike) -> Path:
    """Where the record of ``path`` lives."""
    path = Path(path)
    return path.with_name(path.name + RECORD_SUFFIX)


def pending_path(path: str | os.PathLike) -> Path:
    """Where the record of ``path`` waits while ``path`` is being replaced."""
    path = Path(path)
    return path.with_name(path.name + PENDING_SUFFIX)


def digest(data) -> str:
    """The digest of one block (any bytes-like object)."""
    return hashlib.sha256(data).hexdigest()[:DIGEST_HEX]


def block_size(row_bytes: int) -> int:
    """Bytes per digest for rows of ``row_bytes``: whole rows, about :data:`BLOCK_BYTES`."""
    row_bytes = max(1, row_bytes)
    return max(1, BLOCK_BYTES // row_bytes) * row_bytes


def npy_layout(path: str | os.PathLike, shape: tuple[int, ...] | None = None,
               dtype: np.dtype | type | None = None) -> NpyLayout:
    """The layout of an ``.npy`` file, checked against its size (and ``shape``/``dtype`` when
    given) without reading its values; :class:`DamagedFile` says what is wrong.

    Why not ``np.load``: it maps a file one byte short with a ``ValueError`` that names no
    file, reads a zero-byte one with an ``EOFError`` (``Aborted!`` from click), and accepts one
    that is too long."""
    path = Path(path)
    size = os.stat(path).st_size
    with open(path, "rb") as handle:
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                found, fortran, kind = np.lib.format.read_array_header_1_0(handle)
            elif version == (2, 0):
                found, fortran, kind = np.lib.format.read_array_header_2_0(handle)
            else:
                raise ValueError(f"format version {version}")
        except (ValueError, EOFError, SyntaxError, TypeError) as exc:
            why = "empty" if size == 0 else f"not a readable .npy file ({exc})"
            raise DamagedFile(path, why) from None
        layout = NpyLayout(handle.tell(), tuple(int(n) for n in found), np.dtype(kind))
    if fortran or layout.dtype.hasobject:
        raise DamagedFile(path, "not a matrix this cache writes (Fortran order or objects)")
    if size != layout.end:
        raise DamagedFile(path, f"{size:,} bytes where its header needs {layout.end:,} "
                                f"({'cut short' if size < layout.end else 'too long'})")
    if dtype is not None and layout.dtype != np.dtype(dtype):
        raise DamagedFile(path, f"holds {layout.dtype} values, not {np.dtype(dtype)}")
    if shape is not None and layout.shape != tuple(shape):
        raise DamagedFile(path, f"holds an array of shape {layout.shape}, not {tuple(shape)}")
    return layout


def read_vector(path: str | os.PathLike, length: int, dtype: np.dtype | type) -> np.ndarray:
    """A small 1-D ``.npy`` file read whole, checked first — its layout, and its record when it
    has one (:func:`check_file`) — :class:`DamagedFile` otherwise."""
    verdict = check_file(path, shape=(length,), dtype=dtype)
    if verdict.state == DAMAGED:
        raise DamagedFile(path, verdict.why)
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as exc:
        raise DamagedFile(path, f"not a readable .npy file ({exc})") from None


# ---- writing -------------------------------------------------------------------------------

def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` through ``write(handle)`` into a temporary file beside it, flush it to
    disk and rename it into place; the temporary file is removed when anything fails.

    Why: a reader (or a run after a crash) sees the old file or the new one, never half of
    one, and a disk that fills up leaves no ``.tmp`` litter behind."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _record(size: int, head: str, head_bytes: int, block_bytes: int,
            blocks: list[str], name: str) -> dict:
    return {"format": RECORD_FORMAT, "file": name, "bytes": size, "algorithm": "sha256/128",
            "head_bytes": head_bytes, "head": head, "block_bytes": block_bytes,
            "blocks": blocks}


def _write_json(path: Path, record: dict) -> None:
    atomic_write(path, lambda handle: handle.write(
        (json.dumps(record, separators=(",", ":")) + "\n").encode()))


def _replace_sealed(path: Path, tmp_writer: Callable[[BinaryIO], None],
                    make_record: Callable[[Path], dict]) -> None:
    """Write ``path`` and its record in the order that keeps them matching (see the module
    docstring): data to a temporary file, the pending record, the rename, the record."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pending = pending_path(path)
    try:
        with open(tmp, "wb") as handle:
            tmp_writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        _write_json(pending, make_record(tmp))
        os.replace(tmp, path)
        os.replace(pending, record_path(path))
        remember_check(_identity(path, record_path(path)), stamp_path(path))  # as written
    except BaseException:
        for litter in (tmp, pending):
            with contextlib.suppress(OSError):
                litter.unlink()
        raise


def save_array(path: str | os.PathLike, array: np.ndarray) -> None:
    """``np.save`` made atomic and sealed: the file, then its record (digests computed from
    the array in memory, so the file is not read back)."""
    path = Path(path)
    values = np.ascontiguousarray(array)
    flat = values.reshape(-1).view(np.uint8)

    def write(handle: BinaryIO) -> None:
        np.lib.format.write_array(handle, values, allow_pickle=False)

    def record(tmp: Path) -> dict:
        size = os.stat(tmp).st_size
        head_bytes = size - values.nbytes
        with open(tmp, "rb") as handle:
            head = digest(handle.read(head_bytes))
        row_bytes = values.itemsize * int(np.prod(values.shape[1:], dtype=np.int64))
        step = block_size(row_bytes)
        blocks = [digest(flat[at:at + step]) for at in range(0, values.nbytes, step)]
        return _record(size, head, head_bytes, step, blocks, path.name)

    _replace_sealed(path, write, record)


def save_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """A text file of ``lines`` (each ending in a newline), atomic and sealed."""
    path = Path(path)
    data = "".join(lines).encode("utf-8")

    def record(_tmp: Path) -> dict:
        blocks = [digest(data[at:at + BLOCK_BYTES]) for at in range(0, len(data), BLOCK_BYTES)]
        return _record(len(data), digest(b""), 0, BLOCK_BYTES, blocks, path.name)

    _replace_sealed(path, lambda handle: handle.write(data), record)


def seal(path: str | os.PathLike, *, npy: bool = True) -> dict:
    """Write the record of an existing file by reading it whole (what :func:`adopt` and a
    promoted partial matrix use); returns the record."""
    path = Path(path)
    head_bytes, step = 0, BLOCK_BYTES
    if npy:
        layout = npy_layout(path)
        head_bytes, step = layout.offset, block_size(layout.row_bytes)
    size = os.stat(path).st_size
    with open(path, "rb") as handle:
        head = digest(handle.read(head_bytes))
        blocks = []
        while chunk := handle.read(step):
            blocks.append(digest(chunk))
    record = _record(size, head, head_bytes, step, blocks, path.name)
    _write_json(record_path(path), record)
    return record


def discard(path: str | os.PathLike) -> None:
    """Remove a cache file and its records (the records and the remembered check first, so
    none outlives its file to be taken for a later one's)."""
    path = Path(path)
    for item in (stamp_path(path), pending_path(path), record_path(path), path):
        with contextlib.suppress(FileNotFoundError):
            item.unlink()


# ---- checking ------------------------------------------------------------------------------

def _read_record(path: Path) -> dict | None:
    """A record, or None when absent or unreadable (an unreadable record says nothing about
    its file: the file is then unverified, and gets a new record when adopted)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return None
    try:
        blocks = record["blocks"]
        whole = int(record["bytes"]) - int(record["head_bytes"])
        if not isinstance(blocks, list) or int(record["block_bytes"]) < 1 or \
                len(blocks) != -(-whole // int(record["block_bytes"])):
            return None
    except (KeyError, TypeError, ValueError):
        return None
    return record


def file_version(path: str | os.PathLike) -> tuple[int, ...]:
    """(device, inode, size, mtime, ctime) of ``path``, nanoseconds: any write to the file, or
    its replacement by another, changes it (the ctime cannot be set back)."""
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _identity(path: Path, record: Path) -> tuple[int, ...]:
    return file_version(path) + file_version(record)


def stamp_path(path: str | os.PathLike) -> Path:
    """Where the remembered whole check of ``path`` lives."""
    path = Path(path)
    return path.with_name(path.name + STAMP_SUFFIX)


def remember_check(key: tuple[int, ...], stamp: Path) -> None:
    """Remember that the version ``key`` (see :func:`file_version`) was checked whole: in the
    process, and in ``stamp`` for later processes (none written where the folder is read-only:
    the file is then checked whole at each process's first load)."""
    _CHECKED_WHOLE.add(key)
    with contextlib.suppress(OSError):
        _write_json(stamp, {"format": STAMP_FORMAT, "version": list(key)})


def remembered(key: tuple[int, ...], stamp: Path) -> bool:
    """Whether the version ``key`` was checked whole: by this process, or by one that wrote
    ``stamp`` after every change ``key`` records (a ctime at or after the stamp's mtime may be a
    change in the same clock tick as the check: not trusted)."""
    if key in _CHECKED_WHOLE:
        return True
    try:
        written = os.stat(stamp).st_mtime_ns
        found = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    versions = len(key) // 5
    return (isinstance(found, dict) and found.get("format") == STAMP_FORMAT
            and found.get("version") == list(key)
            and all(key[5 * i + 4] < written for i in range(versions)))


def _compare(path: Path, record: dict, size: int, head_bytes: int
             ) -> tuple[str, tuple[int, ...], int]:
    """('' or why the file fails, the damaged blocks, blocks read): every block is read."""
    if int(record["bytes"]) != size:
        return (f"{size:,} bytes where its record says {int(record['bytes']):,}", (), 0)
    if head_bytes is not None and int(record["head_bytes"]) != head_bytes:
        return ("its header is not the one recorded", (), 0)
    step, count = int(record["block_bytes"]), len(record["blocks"])
    start = int(record["head_bytes"])
    bad: list[int] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        if digest(os.pread(fd, start, 0)) != record["head"]:
            return ("its header does not match its record", (), 0)
        for block in range(count):
            length = min(step, size - start - block * step)
            if digest(os.pread(fd, length, start + block * step)) != record["blocks"][block]:
                bad.append(block)
    finally:
        os.close(fd)
    if bad:
        return (f"{len(bad)} of {count} blocks do not match their checksums", tuple(bad), count)
    return ("", (), count)


def check_file(path: str | os.PathLike, *, npy: bool = True, full: bool = False,
               shape: tuple[int, ...] | None = None, dtype: np.dtype | type | None = None
               ) -> Verdict:
    """Check a cache file against its record: every block, unless this version of the file
    and record was checked whole before (see the module docstring); ``full`` reads every
    block now whatever is remembered (``linker kb info --verify``).

    ``npy`` files have their header checked against their size (and ``shape``, ``dtype``).
    A mismatch is checked again, up to :data:`CHECK_ATTEMPTS` times, against the record read
    afresh and the pending one: a writer replacing the file renames the file and its record one
    after the other, and must not pass for damage."""
    path = Path(path)
    layout = None
    if npy:
        try:
            layout = npy_layout(path, shape, dtype)
        except DamagedFile as exc:
            return Verdict(path, DAMAGED, exc.why)
    failed: Verdict | None = None
    compared: set[tuple[int, ...]] = set()
    for _ in range(CHECK_ATTEMPTS):
        size = os.stat(path).st_size
        found = [(p, r) for p in (record_path(path), pending_path(path))
                 if (r := _read_record(p)) is not None]
        if not found:
            return Verdict(path, UNVERIFIED, "no checksum record")
        failures: list[Verdict] = []
        for where, record in found:
            step, count = int(record["block_bytes"]), len(record["blocks"])
            rows = step // layout.row_bytes if layout is not None and layout.row_bytes else 0
            try:
                key = _identity(path, where)
            except FileNotFoundError:
                continue
            if key in compared:
                continue  # file and record unchanged since they failed: they fail again
            compared.add(key)
            if not full and remembered(key, stamp_path(path)):
                return Verdict(path, OK, block_rows=rows, blocks=count, checked=0)
            why, bad, checked = _compare(path, record, size,
                                         layout.offset if layout is not None else 0)
            if not why:
                remember_check(key, stamp_path(path))
                return Verdict(path, OK, block_rows=rows, blocks=count, checked=checked)
            failures.append(Verdict(path, DAMAGED, why, bad, rows, count, checked))
        failed = failures[0] if failures else failed
        if not failures:
            break  # nothing changed: no writer is at work
    return failed or Verdict(path, UNVERIFIED, "no checksum record")


def zero_row(path: str | os.PathLike, layout: NpyLayout, rows: int = 65536) -> int | None:
    """The first row of a matrix file that is all zeros, or None: no encoder writes one, a
    failed or zeroing write leaves them (why :func:`adopt` looks for them)."""
    if len(layout.shape) != 2 or not layout.shape[0]:
        return None
    matrix = np.load(path, mmap_mode="r")
    for at in range(0, len(matrix), rows):
        empty = np.flatnonzero(~np.asarray(matrix[at:at + rows]).any(axis=1))
        if len(empty):
            return at + int(empty[0])
    return None


def adopt(path: str | os.PathLike, *, npy: bool = True,
          shape: tuple[int, ...] | None = None, dtype: np.dtype | type | None = None) -> Verdict:
    """Check a file that has no record whole and give it one (call with the folder locked).

    A record that cannot be written (a read-only cache) leaves the file unverified and
    trusted: it passed the same checks."""
    path = Path(path)
    if npy:
        try:
            layout = npy_layout(path, shape, dtype)
        except DamagedFile as exc:
            return Verdict(path, DAMAGED, exc.why)
        empty = zero_row(path, layout)
        if empty is not None:
            return Verdict(path, DAMAGED, f"row {empty:,} is all zeros, which no encoder "
                                          "writes")
    try:
        record = seal(path, npy=npy)
    except OSError as exc:
        return Verdict(path, UNVERIFIED, f"no checksum record (cannot write one: "
                                         f"{exc.strerror or exc})")
    with contextlib.suppress(OSError):
        remember_check(_identity(path, record_path(path)), stamp_path(path))
    return Verdict(path, OK, blocks=len(record["blocks"]), checked=len(record["blocks"]))


def report_damage(path: str | os.PathLike, why: str, action: str) -> None:
    """Say on stderr that a cache file was found damaged and what was done about it."""
    print(f"KB cache: {path} is damaged ({why}); {action}", file=sys.stderr)


def discard_damaged(path: str | os.PathLike, why: str, action: str,
                    also: Iterable[str | os.PathLike] = ()) -> None:
    """Remove a damaged file (and ``also``, files that go with it), saying so; a file that
    cannot be removed (a read-only cache) is one line telling the user to delete it."""
    try:
        for item in (path, *also):
            discard(item)
    except OSError as exc:
        raise UserError(f"the KB cache file {path} is damaged ({why}) and cannot be removed "
                        f"here ({exc.strerror or exc}); delete it (what it held is encoded "
                        "again), or point E2E_LINKER_CACHE (or --cache-dir) at another "
                        "folder") from None
    report_damage(path, why, action)


def open_matrix(path: str | os.PathLike, shape: tuple[int, int], lock_folder: Path, *,
                locked: bool = False,
                action: str = "discarded; its vectors are made again") -> np.ndarray | None:
    """The memory-mapped fp16 matrix at ``path`` when it is whole and right; None when it is
    absent, or damaged — then it is discarded (said on stderr) for the caller to make again.

    Why one function: a full list is opened by the store and by a partial matrix that has
    been completed, under the same rules. An unverified file is adopted when ``lock_folder``'s
    lock is free (``locked``: the caller holds it), else trusted as it is this time."""
    path = Path(path)
    if not path.is_file():
        return None
    verdict = check_file(path, shape=shape, dtype=np.float16)
    if verdict.state == UNVERIFIED:
        if locked:
            verdict = adopt(path, shape=shape, dtype=np.float16)
        else:
            with try_exclusive(lock_folder) as held:
                if held:
                    verdict = adopt(path, shape=shape, dtype=np.float16)
    if verdict.state == DAMAGED:
        discard_damaged(path, verdict.why, action)
        return None
    return np.load(path, mmap_mode="r")
