"""A KB's name-vector matrix whose rows are encoded the first time a search needs them.

Why: with a packed shortlist index (:mod:`e2e_linker.kb_search.packed_index`) a run only ever
re-ranks the names its mentions shortlist — a few thousand for a handful of documents — so
encoding all 744k names before the first output is wasted time on a new machine. Rows encoded
once are kept on disk for later runs, beside the full matrices of the name cache:

* ``<stem>.partial.npy`` — an ``(n, d)`` fp16 matrix (a sparse file: unwritten rows take
  no disk space);
* ``<stem>.partial-have.npy`` — which rows hold a vector;

where ``<stem>.npy`` is the file a full encode of the same list writes (``kb/<digest>.npy`` for
the collective model's entity tower, the text-list file of
:class:`e2e_linker.kb_search.cache.VectorCache` for the normalizer, whose rows are unit length:
``unit=True``). Rows are written under the cache folder's lock and flushed before the "have"
file is replaced, so a killed run or a second process never sees a row marked present that is
not. When every row is present the matrix is promoted to ``<stem>.npy``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache import exclusive, unit_rows, writable
from e2e_linker.kb_search.packed_index import built_for, read_info, read_packed


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


def open_packed_shortlist(packed: str | os.PathLike | None, fingerprint: str,
                          texts: Sequence[str], full_path: Path, encoder: TextEncoder,
                          cache_folder: Path, batch_size: int, progress: bool, *,
                          unit: bool = False, required: bool = False,
                          owner: str = "model", items: str = "names",
                          pack_command: str = "linker kb pack"
                          ) -> tuple[PartialKBMatrix, object] | None:
    """The rows and index of a shipped packed shortlist over ``texts``, or None where it does
    not apply: no packed file, one built for another encoder or text list, or (unless
    ``required``) a full matrix already cached at ``full_path`` — then the caller's
    full-encoding path is the better one.

    Why one function: annotate's entity index and the normalizer's ontology texts open their
    packed index by the same rules and tell a user the same thing on a first run. ``required``
    (``--index packed``) makes a missing or mismatched file an error; ``owner``, ``items`` and
    ``pack_command`` name what shipped it, what its rows are and what writes a new one.
    Returns ``(rows, faiss_index)``, the index a faiss ``IndexIVFPQ`` (``read_packed``).
    """
    if packed is None or not Path(packed).is_file():
        if required:
            raise UserError(f"--index packed: the {owner} has no packed KB index ({packed}); "
                            f"`{pack_command}` writes one")
        return None
    info = read_info(packed)
    if not built_for(info, fingerprint, texts):
        if required:
            raise UserError(f"{packed} was built for another encoder or KB {items[:-1]} list "
                            f"({info.kb or 'unknown'}, {info.names:,} {items}); "
                            f"`{pack_command}` rebuilds it")
        return None
    if not required and Path(full_path).is_file():
        return None
    rows = PartialKBMatrix(full_path, texts, encoder, cache_folder, batch_size, progress,
                           unit=unit)
    if progress:
        print(f"KB index: packed index shipped with the {owner} ({info.names:,} {items}, "
              f"{info.pq_bytes} B/{items[:-1]}); {items} a search shortlists are encoded on "
              f"first use and cached in {cache_folder} ({rows.present:,} so far)",
              file=sys.stderr)
    return rows, read_packed(packed)
