"""A KB's name-vector matrix whose rows are encoded the first time a search needs them.

Why: with a packed shortlist index (:mod:`e2e_linker.kb_search.packed_index`) a run only ever
re-ranks the names its mentions shortlist — a few thousand for a handful of documents — so
encoding all 744k names before the first output is wasted time on a new machine. Rows encoded
once are kept on disk for later runs, beside the full matrices of the name cache:

* ``<stem>.partial.npy`` — an ``(n, d)`` fp16 matrix (a sparse file: unwritten rows take
  no disk space);
* ``<stem>.partial-have.npy`` — which rows hold a vector (bool);
* ``<stem>.partial-sums.npy`` — the crc32 of each row that holds one (uint32; 0 for a row
  that holds none);
* the two small files are sealed (``.sums.json`` records, :mod:`e2e_linker.kb_search.integrity`)
  and checked whole when read. A present row whose sum is 0, or rows present with no sums file,
  are damage, never "none recorded" (issue 47: a zeroed sums file used to switch the row checks
  off without a word): the three files are then discarded and the rows encoded again when a
  search needs them;

where ``<stem>.npy`` is the file a full encode of the same list writes: this is the partial
mode of the one vector store (:meth:`e2e_linker.kb_search.cache.VectorStore.partial`), for the
collective model's entity tower (``kb/<digest>.npy``) and for the normalizer (its text-list
file; rows of unit length: ``unit=True``).

Rows are written under the cache folder's lock *through the file* (``os.pwrite``), never by
writing into a memory map of it: on a full disk a write into a sparse map is a page fault that
kills the process with SIGBUS, a ``pwrite`` is an ``OSError`` that becomes one line. Room is
checked first. Rows are flushed, then the sums file and then the "have" file are replaced
(each atomically), so a killed run or a second process never sees a row marked present that is
not. A row is checked against its sum the first time this process reads it (so every byte a
run uses is checked); one that fails is reported and encoded again. When every row is present the matrix is promoted to
``<stem>.npy`` and given its record (:mod:`e2e_linker.kb_search.integrity`).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from e2e_linker.console import progress_enabled
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.kb_search.cache_folder import ensure_room, exclusive, writable
from e2e_linker.kb_search.encode_estimate import say_estimate
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    UNVERIFIED,
    DamagedFile,
    NpyLayout,
    Verdict,
    atomic_write,
    check_file,
    discard,
    discard_damaged,
    npy_layout,
    open_matrix,
    read_vector,
    report_damage,
    save_array,
    seal,
)
from e2e_linker.kb_search.unit_vectors import unit_rows

#: rows checked against their sums per read of the matrix (bounds the memory of a full check)
CHECK_ROWS = 65536
#: an encode of more texts than this is announced with its estimated time and a progress bar
ANNOUNCE_TEXTS = 2000


def partial_paths(full_path: str | os.PathLike) -> tuple[Path, Path, Path]:
    """The partial files of a list whose full matrix is ``full_path``: (rows, have, sums)."""
    full_path = Path(full_path)
    stem = full_path.name.removesuffix(".npy")
    return (full_path.with_name(f"{stem}.partial.npy"),
            full_path.with_name(f"{stem}.partial-have.npy"),
            full_path.with_name(f"{stem}.partial-sums.npy"))


def row_sums(rows: np.ndarray) -> np.ndarray:
    """The crc32 of each row's bytes, as uint32 (0 is stored as 1: 0 means "none recorded")."""
    rows = np.ascontiguousarray(rows)
    flat = rows.reshape(len(rows), -1).view(np.uint8)
    sums = np.fromiter((zlib.crc32(row) for row in flat), dtype=np.uint32, count=len(rows))
    sums[sums == 0] = 1
    return sums


def failing_rows(matrix: np.ndarray, rows: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Which of ``rows`` (sorted) do not hold what ``sums`` recorded (a row whose sum is 0 has
    none: it fails). Returns a boolean mask over ``rows``."""
    out = np.zeros(len(rows), bool)
    for at in range(0, len(rows), CHECK_ROWS):
        block = rows[at:at + CHECK_ROWS]
        out[at:at + CHECK_ROWS] = row_sums(np.asarray(matrix[block])) != sums[block]
    return out


@dataclass
class PartialFiles:
    """A partial matrix as found on disk: its layout, which rows are present and their sums."""

    layout: NpyLayout
    have: np.ndarray
    sums: np.ndarray


def read_partial(full_path: str | os.PathLike, shape: tuple[int, int] | None = None
                 ) -> PartialFiles | None:
    """The partial files of ``full_path`` checked for shape and readability (not their rows):
    None when there is no partial matrix, :class:`DamagedFile` naming the file that fails —
    also a sums file missing, or recording no sum (0) for a row the have file marks present:
    those rows could not be checked."""
    path, have_path, sums_path = partial_paths(full_path)
    if not have_path.is_file():
        return None
    if not path.is_file():
        raise DamagedFile(have_path, f"its matrix {path.name} is missing")
    layout = npy_layout(path, shape, np.float16)
    if len(layout.shape) != 2:
        raise DamagedFile(path, f"holds an array of shape {layout.shape}, not a matrix")
    have = read_vector(have_path, layout.shape[0], np.bool_).astype(bool)
    present = int(have.sum())
    if not sums_path.is_file():
        if present:
            raise DamagedFile(sums_path, f"missing, so the {present:,} rows {have_path.name} "
                                         "marks present cannot be checked")
        return PartialFiles(layout, have, np.zeros(layout.shape[0], np.uint32))
    sums = read_vector(sums_path, layout.shape[0], np.uint32)
    unrecorded = int((sums[have] == 0).sum())
    if unrecorded:
        raise DamagedFile(sums_path, f"no checksum (0) for {unrecorded:,} of the {present:,} "
                                     f"rows {have_path.name} marks present")
    return PartialFiles(layout, have, sums)


def partial_fill(full_path: str | os.PathLike) -> tuple[int, int] | None:
    """(rows present, rows) of a list's partial matrix, None when it has none or it is
    unreadable (what ``linker kb info`` shows)."""
    path = partial_paths(full_path)[0]
    try:
        files = read_partial(full_path)
        if files is None and path.is_file():  # a first write was cut short: no row yet
            return (0, npy_layout(path).shape[0])
    except (DamagedFile, OSError):
        return None
    return (int(files.have.sum()), files.layout.shape[0]) if files is not None else None


def check_partial(full_path: str | os.PathLike) -> list[Verdict]:
    """Every row of a partial matrix checked against its sum: a verdict per file (what
    ``linker kb info --verify`` reports)."""
    path, have_path, sums_path = partial_paths(full_path)
    try:
        files = read_partial(full_path)
    except DamagedFile as exc:
        return [Verdict(exc.path, DAMAGED, exc.why)]
    if files is None:
        if not path.is_file():
            return []
        try:
            npy_layout(path, dtype=np.float16)
        except DamagedFile as exc:
            return [Verdict(path, DAMAGED, exc.why)]
        return [Verdict(path, UNVERIFIED, f"no row recorded yet (no {have_path.name}: a first "
                                          "write was cut short; the next one reuses it)")]
    present = np.flatnonzero(files.have)
    bad = failing_rows(np.load(path, mmap_mode="r"), present, files.sums)
    out = [Verdict(path, DAMAGED, f"{int(bad.sum()):,} of {len(present):,} stored rows do not "
                                  "match their checksums") if bad.any()
           else Verdict(path, OK, f"{len(present):,} of {len(files.have):,} rows present")]
    for small in (have_path, sums_path):
        if small.is_file():  # read whole above; now against its record, every byte
            verdict = check_file(small, full=True)
            out.append(verdict if verdict.state != OK else Verdict(small, OK))
    return out


class RowSource(Protocol):
    """Where a partial matrix may take rows from instead of encoding them
    (:class:`~e2e_linker.kb_search.shared_rows.SharedRows`)."""

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a bool per row of ``rows``: found, the fp16 vectors of the found ones)."""


class PartialKBMatrix:
    """fp16 vectors of ``names`` (one row per name), encoded on demand and cached.

    ``full_path`` is where the complete matrix lives (or will); ``lock_folder`` the cache folder
    whose lock serialises writers; ``unit`` scales rows to length 1 (in fp32, then fp16);
    ``source``, when given, is asked for the missing rows first, and only the rows it lacks are
    encoded (a KB that is a part of the model's takes the model's rows:
    :mod:`e2e_linker.kb_search.shared_rows`). An encode of more than :data:`ANNOUNCE_TEXTS`
    texts is announced with its estimated time (and ``alternative``, a cheaper way, when it is
    long: :mod:`e2e_linker.kb_search.encode_estimate`).
    """

    def __init__(self, full_path: Path, names: Sequence[str], encoder: TextEncoder,
                 lock_folder: Path, batch_size: int = 256, progress: bool = True,
                 unit: bool = False, source: RowSource | None = None,
                 alternative: str | None = None):
        self.names = list(names)
        self.encoder = encoder
        self.batch_size = batch_size
        self.progress = progress
        self.unit = unit
        self.source = source
        self.alternative = alternative
        self.folder = Path(lock_folder)
        self.full_path = Path(full_path)
        self.path, self.have_path, self.sums_path = partial_paths(self.full_path)
        self.shape = (len(self.names), encoder.hidden_size)
        self.dtype = np.dtype(np.float16)
        self.encoded_here = 0  # rows this process encoded (reported by benchmarks)
        self._matrix: np.ndarray | None = None
        n = len(self.names)
        self._have = np.zeros(n, dtype=bool)  # present on disk
        self._sums = np.zeros(n, dtype=np.uint32)  # their crc32 (0: no row)
        self._checked = np.zeros(n, dtype=bool)  # compared with its sum by this process
        self._bad = np.zeros(n, dtype=bool)  # present, but failed that comparison
        self._locked = False  # this process holds the folder's lock
        self._refresh()

    def __len__(self) -> int:
        return len(self.names)

    @property
    def present(self) -> int:
        """Rows that hold a vector."""
        return int((self._have & ~self._bad).sum())

    def _reset(self) -> None:
        self._matrix = None
        self._have[:] = False
        self._sums[:] = 0
        self._checked[:] = False
        self._bad[:] = False

    def _discard_partial(self, path: Path, why: str) -> None:
        """Remove the damaged partial files (all three: rows, have, sums), saying so."""
        discard_damaged(path, why, "discarded; the rows it held are encoded again when a "
                                   "search needs them",
                        also=[p for p in (self.path, self.have_path, self.sums_path)
                              if p != path])
        self._reset()

    def _refresh(self) -> None:
        """Re-read which rows are present (another process may have added some)."""
        full = open_matrix(self.full_path, self.shape, self.folder, locked=self._locked)
        if full is not None:
            self._matrix = full
            self._have[:] = True
            self._sums[:] = 0
            self._checked[:] = True  # checked as a whole file
            self._bad[:] = False
            return
        try:
            files = read_partial(self.full_path, self.shape)
        except DamagedFile as exc:
            self._discard_partial(exc.path, exc.why)
            return
        if files is None:
            self._reset()
            return
        changed = (files.have != self._have) | (files.sums != self._sums)
        self._checked[changed] = False
        self._bad[changed] = False
        self._have, self._sums = files.have.astype(bool), files.sums
        self._matrix = np.load(self.path, mmap_mode="r")

    def _verify(self, rows: np.ndarray) -> None:
        """Compare the present rows among ``rows`` that this process has not read yet with
        their sums; a failing row counts as absent (it is encoded again)."""
        todo = np.unique(rows[self._have[rows] & ~self._checked[rows]])
        if not len(todo) or self._matrix is None:
            return
        bad = failing_rows(self._matrix, todo, self._sums)
        self._checked[todo] = True
        if bad.any():  # damage: check every stored row now, to say it once
            self._bad[todo[bad]] = True
            rest = np.flatnonzero(self._have & ~self._checked)
            self._bad[rest[failing_rows(self._matrix, rest, self._sums)]] = True
            self._checked[rest] = True
            report_damage(self.path, f"{int(self._bad.sum()):,} of {int(self._have.sum()):,} "
                                     f"stored rows do not match their checksums in "
                                     f"{self.sums_path.name}",
                          "those rows are encoded again when a search needs them")

    def _usable(self, rows: np.ndarray) -> np.ndarray:
        return self._have[rows] & ~self._bad[rows]

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The fp16 vectors of ``rows``, encoding the ones not cached yet."""
        rows = np.asarray(rows, dtype=np.int64)
        self.ensure(rows)
        return np.asarray(self._matrix[rows])

    def ensure(self, rows: np.ndarray) -> None:
        """Encode and store the given rows that have no (intact) vector yet."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return
        self._verify(rows)
        if self._usable(rows).all():
            return
        with exclusive(self.folder, "encodes KB names", self.progress), writable(self.folder):
            self._locked = True
            try:
                self._refresh()
                self._verify(rows)
                missing = np.unique(rows[~self._usable(rows)])
                if len(missing):
                    self._write(missing)
            finally:
                self._locked = False

    def _room(self, missing: np.ndarray, offset: int) -> int:
        """Bytes that writing ``missing`` rows may take: every file-system block they touch
        (a sparse file allocates whole blocks), plus the sums and have files."""
        try:
            block = os.statvfs(self.folder).f_bsize or 4096
        except OSError:
            block = 4096
        row_bytes = self.shape[1] * self.dtype.itemsize
        first = (offset + missing * row_bytes) // block
        last = (offset + (missing + 1) * row_bytes - 1) // block
        touched = len(np.union1d(first, last))
        return touched * block + 5 * len(self.names) + 4096

    def _create(self) -> None:
        """The empty sparse rows file: its header, then a hole to its full size."""
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
                  "shape": self.shape}

        def write(handle) -> None:
            np.lib.format.write_array_header_1_0(handle, header)
            handle.truncate(handle.tell() + self.shape[0] * self.shape[1] * self.dtype.itemsize)

        atomic_write(self.path, write)

    def _write_rows(self, offset: int, missing: np.ndarray, values: np.ndarray) -> None:
        """Write ``values`` at rows ``missing`` (sorted) through the file, runs of consecutive
        rows at a time, then flush it to disk."""
        row_bytes = self.shape[1] * self.dtype.itemsize
        values = np.ascontiguousarray(values, dtype=self.dtype)
        starts = np.flatnonzero(np.diff(missing) != 1) + 1
        fd = os.open(self.path, os.O_WRONLY)
        try:
            for run in np.split(np.arange(len(missing)), starts):
                if not len(run):
                    continue
                data = memoryview(values[run[0]:run[-1] + 1].reshape(-1).view(np.uint8))
                at = offset + int(missing[run[0]]) * row_bytes
                while len(data):
                    written = os.pwrite(fd, data, at)
                    data, at = data[written:], at + written
            os.fsync(fd)
        finally:
            os.close(fd)

    def _encode(self, missing: np.ndarray) -> np.ndarray:
        """The fp16 vectors of ``missing`` rows, each distinct text encoded once."""
        self.encoded_here += len(missing)
        texts = sorted({self.names[i] for i in missing.tolist()})
        announced = self.progress and progress_enabled() and len(texts) > ANNOUNCE_TEXTS
        if announced:
            say_estimate(self.encoder, texts, "names not cached yet", batch_size=self.batch_size,
                         then=f" into {self.folder}", alternative=self.alternative)
        vectors = self.encoder.encode(texts, batch_size=self.batch_size,
                                      dtype=np.float32 if self.unit else np.float16,
                                      progress="encoding KB names" if announced else False)
        if self.unit:
            vectors = unit_rows(vectors).astype(np.float16)
        at = {text: i for i, text in enumerate(texts)}
        return np.asarray(vectors[[at[self.names[i]] for i in missing.tolist()]],
                          dtype=np.float16)

    def _vectors(self, missing: np.ndarray) -> np.ndarray:
        """The fp16 vectors of ``missing`` rows: taken from :attr:`source` where it holds them,
        the rest encoded (:meth:`_encode`)."""
        if self.source is None:
            return self._encode(missing)
        found, taken = self.source.take(missing)
        values = np.empty((len(missing), self.shape[1]), dtype=self.dtype)
        values[found] = taken
        if not found.all():
            values[~found] = self._encode(missing[~found])
        return values

    def _write(self, missing: np.ndarray) -> None:
        """Encode the texts of ``missing`` rows (sorted, distinct) once each and store them
        (folder locked). A failure leaves the files as they were (a rows file created here is
        removed) and reaches the caller as an ``OSError``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        offset = 128
        if self.path.is_file():  # rows of earlier writes, or what a cut-short first one left
            try:
                offset = npy_layout(self.path, self.shape, self.dtype).offset
            except DamagedFile as exc:
                self._discard_partial(self.path, exc.why)
        created = not self.path.is_file()
        ensure_room(self.folder, self._room(missing, offset), "encoding shortlisted KB names")
        try:
            if created:
                self._create()
                offset = npy_layout(self.path).offset
            values = self._vectors(missing)
            self._write_rows(offset, missing, values)
        except BaseException:
            if created:
                discard(self.path)
            raise
        self._have[missing] = True
        self._sums[missing] = row_sums(values)
        self._checked[missing] = True
        self._bad[missing] = False
        self._matrix = np.load(self.path, mmap_mode="r")
        if self._have.all():  # complete: check every row once, then promote
            self._verify(np.arange(len(self.names)))
            if self._bad.any():
                self._write(np.flatnonzero(self._bad))
            else:
                self._promote()
            return
        save_array(self.sums_path, np.where(self._bad, np.uint32(0), self._sums))
        save_array(self.have_path, self._have & ~self._bad)
        self._refresh()

    def _promote(self) -> None:
        """Every row present and checked: make the rows file the list's full matrix, with its
        record."""
        discard(self.full_path)  # no stale record may describe the file renamed there
        os.replace(self.path, self.full_path)
        with contextlib.suppress(OSError):
            seal(self.full_path)  # without it the file is adopted at its next load
        for path in (self.have_path, self.sums_path):
            discard(path)
        self._refresh()
