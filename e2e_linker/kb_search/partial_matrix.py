"""A KB's name-vector matrix whose rows are encoded the first time a search needs them.

Why: with a packed shortlist index (:mod:`e2e_linker.kb_search.packed_index`) a run only ever
re-ranks the names its mentions shortlist — a few thousand for a handful of documents — so
encoding all 744k names before the first output is wasted time on a new machine. Rows encoded
once are kept on disk for later runs, beside the full matrices of the name cache:

* ``<stem>.partial.npy`` — an ``(n, d)`` fp16 matrix (a sparse file: unwritten rows take
  no disk space);
* ``<stem>.partial-have.npy`` — which rows hold a vector;

where ``<stem>.npy`` is the file a full encode of the same list writes: this is the partial
mode of the one vector store (:meth:`e2e_linker.kb_search.cache.VectorStore.partial`), for the
collective model's entity tower (``kb/<digest>.npy``) and for the normalizer (its text-list
file; rows of unit length: ``unit=True``). Rows are written under the cache folder's lock and
flushed before the "have" file is replaced, so a killed run or a second process never sees a
row marked present that is not. When every row is present the matrix is promoted to
``<stem>.npy``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.kb_search.cache_folder import exclusive, writable
from e2e_linker.kb_search.unit_vectors import unit_rows


class PartialKBMatrix:
    """fp16 vectors of ``names`` (one row per name), encoded on demand and cached.

    ``full_path`` is where the complete matrix lives (or will); ``lock_folder`` the cache folder
    whose lock serialises writers; ``unit`` scales rows to length 1 (in fp32, then fp16).
    """

    def __init__(self, full_path: Path, names: Sequence[str], encoder: TextEncoder,
                 lock_folder: Path, batch_size: int = 256, progress: bool = True,
                 unit: bool = False):
        self.names = list(names)
        self.encoder = encoder
        self.batch_size = batch_size
        self.progress = progress
        self.unit = unit
        self.folder = Path(lock_folder)
        self.full_path = Path(full_path)
        stem = self.full_path.name.removesuffix(".npy")
        self.path = self.full_path.with_name(f"{stem}.partial.npy")
        self.have_path = self.full_path.with_name(f"{stem}.partial-have.npy")
        self.shape = (len(self.names), encoder.hidden_size)
        self.dtype = np.dtype(np.float16)
        self.encoded_here = 0  # rows this process encoded (reported by benchmarks)
        self._matrix: np.ndarray | None = None
        self._have = np.zeros(len(self.names), dtype=bool)
        self._refresh()

    def __len__(self) -> int:
        return len(self.names)

    @property
    def present(self) -> int:
        """Rows that hold a vector."""
        return int(self._have.sum())

    def _refresh(self) -> None:
        """Re-read which rows are present (another process may have added some)."""
        if self.full_path.is_file():
            self._matrix = np.load(self.full_path, mmap_mode="r")
            self._have[:] = True
            return
        if self.have_path.is_file() and self.path.is_file():
            have = np.load(self.have_path)
            if have.shape == self._have.shape:
                self._have = have.astype(bool)
                self._matrix = np.load(self.path, mmap_mode="r")

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The fp16 vectors of ``rows``, encoding the ones not cached yet."""
        rows = np.asarray(rows, dtype=np.int64)
        self.ensure(rows)
        return np.asarray(self._matrix[rows])

    def ensure(self, rows: np.ndarray) -> None:
        """Encode and store the given rows that have no vector yet."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows) or self._have[rows].all():
            return
        with exclusive(self.folder, "encodes KB names", self.progress), writable(self.folder):
            self._refresh()
            missing = np.unique(rows[~self._have[rows]])
            if not len(missing):
                return
            self._write(missing)

    def _write(self, missing: np.ndarray) -> None:
        """Encode the texts of ``missing`` rows once each and store them (folder locked)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.is_file():
            tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npy")
            np.lib.format.open_memmap(tmp, mode="w+", dtype=self.dtype, shape=self.shape)
            os.replace(tmp, self.path)
        texts = sorted({self.names[i] for i in missing.tolist()})
        if self.progress and len(texts) > 2000:
            print(f"KB index: encoding {len(texts):,} shortlisted names", file=sys.stderr)
        vectors = self.encoder.encode(texts, batch_size=self.batch_size,
                                      dtype=np.float32 if self.unit else np.float16,
                                      progress="encoding shortlisted KB names"
                                      if self.progress and len(texts) > 2000 else False)
        if self.unit:
            vectors = unit_rows(vectors).astype(np.float16)
        at = {text: i for i, text in enumerate(texts)}
        target = np.load(self.path, mmap_mode="r+")
        target[missing] = vectors[[at[self.names[i]] for i in missing.tolist()]]
        target.flush()
        del target
        self._have[missing] = True
        self.encoded_here += len(missing)
        if self._have.all():
            os.replace(self.path, self.full_path)
            self.have_path.unlink(missing_ok=True)
        else:
            tmp = self.have_path.with_name(f".{self.have_path.stem}.{os.getpid()}.tmp.npy")
            np.save(tmp, self._have)
            os.replace(tmp, self.have_path)
        self._refresh()
