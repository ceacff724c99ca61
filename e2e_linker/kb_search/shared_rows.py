"""Rows a KB's name list takes from the other lists one packed index serves, instead of
encoding them.

Why: the vectors of a list's names are kept per list (``kb/<digest>.partial.npy``, rows
encoded when a search first needs them), so a KB that is a part of the model's — ``--kb medic``
under the default model, 80k of its 745k names — would encode on its first run every name its
searches shortlist, names the model's own list has long had encoded, and, before its first
output, every name of its own the packed index lacks (the model's mined names, which the
model's list holds too). Each list a packed index serves keeps what the index holds of it
(``<list>.covered-by-<index>.safetensors``,
:func:`~e2e_linker.kb_search.packed_index.save_coverage`); with the index's row hashes that
gives the hash of every name of the list (:func:`row_hashes`), so a list finds the rows of its
own names in the others by hash — the pairing the coverage itself rests on.

A row taken is read under the cache folder's lock (:class:`~e2e_linker.kb_search.
partial_matrix.PartialKBMatrix` asks while it writes), checked against its list's row sum (a
whole list file: against its record), and stored in the taking list's own partial matrix with
a sum of its own, as an encoded row is; a row that fails is encoded instead. Lists whose files
do not check out are passed over, never discarded: that is for their own loads to do.

Only a KB the packed index serves *narrowed* uses this
(:meth:`~e2e_linker.kb_search.packed_index.PackedCoverage.narrowed`): the model's own list
encodes its rows itself, so that its links depend on nothing but its own rows (a text encoded
in another batch can differ in the last bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e2e_linker.kb_search.integrity import OK, DamagedFile, check_file, npy_layout
from e2e_linker.kb_search.packed_index import PackedCoverage, load_coverage, read_name_hashes
from e2e_linker.kb_search.partial_matrix import partial_paths, read_partial, row_sums


def row_hashes(covered: PackedCoverage, packed_hashes: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(the name hash of each row of a list, whether it is known): a row the packed index
    holds has its packed row's hash, an added row the one its coverage records (unknown in a
    coverage kept before those were recorded)."""
    hashes = np.zeros(covered.kb_size, dtype=np.uint64)
    known = np.zeros(covered.kb_size, dtype=bool)
    held = covered.kb_rows >= 0
    hashes[covered.kb_rows[held]] = packed_hashes[held]
    known[covered.kb_rows[held]] = True
    if covered.added_hashes is not None:
        hashes[covered.added] = covered.added_hashes
        known[covered.added] = True
    return hashes, known


@dataclass
class Donor:
    """Another list's stored rows, by name hash: ``rows`` (those with an intact-looking vector
    and a known hash) in the order of their ``hashes``; ``sums`` the row sums of a partial
    matrix (None: a whole file checked against its record)."""

    matrix: np.ndarray
    sums: np.ndarray | None
    hashes: np.ndarray
    rows: np.ndarray


class SharedRows:
    """The rows of one list (its full matrix would be ``own``, in ``folder``) that the other
    lists served by the packed index ``packed`` hold; ``covered`` is what the index holds of
    this list. The other lists are read the first time :meth:`take` is asked (a run whose rows
    are all stored reads none), under the cache folder's lock (the partial matrix asks while
    it writes)."""

    def __init__(self, folder: Path, own: Path, packed: Path, packed_digest: str,
                 covered: PackedCoverage, dim: int):
        self.folder = Path(folder)
        self.own = Path(own)
        self.packed = Path(packed)
        self.packed_digest = packed_digest
        self.covered = covered
        self.dim = dim
        self.taken = 0  # rows this process took instead of encoding them
        self._donors: list[Donor] | None = None
        self._hashes: np.ndarray | None = None
        self._known: np.ndarray | None = None

    def _open(self) -> None:
        """Read this list's name hashes and the other lists of the index (once)."""
        packed_hashes = read_name_hashes(self.packed)
        self._donors = []
        if packed_hashes is None:  # packed before it recorded its names: nothing pairs
            self._hashes = np.zeros(self.covered.kb_size, dtype=np.uint64)
            self._known = np.zeros(self.covered.kb_size, dtype=bool)
            return
        self._hashes, self._known = row_hashes(self.covered, packed_hashes)
        suffix = f".covered-by-{self.packed_digest}.safetensors"
        for kept in sorted(self.folder.glob(f"*{suffix}")):
            stem = kept.name[:-len(suffix)]
            if stem != self.own.stem:
                donor = self._donor(self.folder / f"{stem}.npy", kept, packed_hashes)
                if donor is not None:
                    self._donors.append(donor)

    def _donor(self, full: Path, kept: Path, packed_hashes: np.ndarray) -> Donor | None:
        """The list whose full matrix is ``full`` (its coverage kept in ``kept``) as a
        :class:`Donor`, None when it holds no row, its coverage does not fit it or its files do
        not check out."""
        try:
            if full.is_file():
                if check_file(full, dtype=np.float16).state != OK:
                    return None
                n = npy_layout(full).shape[0]
                matrix, sums = np.load(full, mmap_mode="r"), None
                have = np.ones(n, dtype=bool)
            else:
                files = read_partial(full)
                if files is None:
                    return None
                n = files.layout.shape[0]
                matrix = np.load(partial_paths(full)[0], mmap_mode="r")
                sums, have = files.sums, files.have
        except (DamagedFile, OSError, ValueError):
            return None
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            return None
        covered = load_coverage(kept, len(packed_hashes), n)
        if covered is None:
            return None
        hashes, known = row_hashes(covered, packed_hashes)
        rows = np.flatnonzero(known & have)
        if not len(rows):
            return None
        order = np.argsort(hashes[rows], kind="stable")
        return Donor(matrix, sums, hashes[rows][order], rows[order])

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(found, vectors)``: which of this list's ``rows`` another list holds an intact
        vector of (a bool per row), and those vectors (fp16, one per found row, in order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._donors is None:
            self._open()
        found = np.zeros(len(rows), dtype=bool)
        out = np.zeros((len(rows), self.dim), dtype=np.float16)
        wanted = self._hashes[rows]
        for donor in self._donors:
            todo = np.flatnonzero(self._known[rows] & ~found)
            if not len(todo):
                break
            at = np.minimum(np.searchsorted(donor.hashes, wanted[todo]), len(donor.hashes) - 1)
            hit = donor.hashes[at] == wanted[todo]
            if not hit.any():
                continue
            source, target = donor.rows[at[hit]], todo[hit]
            order = np.argsort(source, kind="stable")  # read the memory map in order
            source, target = source[order], target[order]
            values = np.asarray(donor.matrix[source], dtype=np.float16)
            good = np.ones(len(source), dtype=bool) if donor.sums is None else \
                row_sums(values) == donor.sums[source]
            out[target[good]] = values[good]
            found[target[good]] = True
        self.taken += int(found.sum())
        return found, out[found]
