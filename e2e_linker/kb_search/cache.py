"""The one on-disk store of text vectors that ``linker annotate`` and ``linker normalize`` share.

Why a cache: encoding the ~700k names of the BC5CDR KB takes minutes on a CPU, and the result
only depends on the encoder's weights and the text. Everything lives under
:func:`default_cache_dir`, in folders keyed by :func:`encoder_fingerprint` and the encoder's
batching scheme (:func:`store_key`).

One store (:class:`VectorStore`) per encoder, keyed by text inside; a text list's matrix comes
in three modes:

* **full** — :meth:`VectorStore.matrix`: every row of the list in one file, memory-mapped;
* **partial** — :meth:`VectorStore.partial`: rows encoded the first time a search shortlists
  them (:class:`~e2e_linker.kb_search.partial_matrix.PartialKBMatrix`), kept, and promoted to
  the full file once every row is there; :meth:`VectorStore.packed_rows` says when a shipped
  packed index makes this the better start (also for a list that grew a little beyond the
  packed one: :class:`PackedRows`);
* **unit-normalised** — a store made with ``unit=True`` (the normalizer's): rows scaled to
  length 1 in fp32 before they are rounded to fp16; otherwise rows are the encoder's output
  rounded to fp16 (``linker annotate``'s entity tower).

On disk (``<key>``: :func:`store_key`; a store of an earlier scheme is left where it is, unused):

* ``entity_vectors/<key>/names.jsonl`` + ``vectors.npy`` — the name-keyed table, fp16
  vectors by text, appended to as new texts appear. Raw lists are gathered from it; unit lists
  are seeded from it (when the fingerprints agree) and add their newly encoded texts to it.
* ``entity_vectors/<key>/kb/<digest>.npy`` — raw full lists, one per KB name list
  (``.json`` beside: the KB it was built for; approximate indexes: ``.*.faiss``).
* ``normalizer_vectors/<key>/<hash>-<n>.npy`` — unit full lists, written in resumable
  parts (``<hash>-<n>.parts/``).
* ``<list>.partial.npy`` + ``<list>.partial-have.npy`` (+ ``<list>.partial-sums.npy``) beside
  a list's full file — its partial mode.
* ``FILE.sums.json`` beside every whole file above — its size and block checksums
  (:mod:`e2e_linker.kb_search.integrity`: what is checked when, and what a damaged file
  becomes: reported by name, discarded, made again).

Why a full list is encoded one way per mode: the raw mode encodes the names its table lacks
in checkpointed pieces, then gathers the list's rows; the unit mode encodes the texts its seed
lacks in parts of the list, normalising fp32 output. A text's vector does not depend on the
batch it is encoded in (:meth:`~e2e_linker.encoder.text_encoder.TextEncoder.encode`), but a
vector normalised after fp16 rounding instead of before differs in the last bits, which flips
near-ties; so each mode keeps its encode, and the store shares the rest: the table, the
folders, the lock, the list files.

The store's code is split by concern: the name-keyed table (read, adopt, repair, rewrite) is
:class:`~e2e_linker.kb_search.name_table.NameTable`, the encode paths (names the table lacks,
a unit list's parts, seeding from the table) are
:class:`~e2e_linker.kb_search.store_encoding.StoreEncoding`, both base classes of
:class:`VectorStore`, which keeps the choice of a list's matrix here; what a cache folder holds
and whether it checks out (``linker kb info``) is :mod:`e2e_linker.kb_search.cache_report`.

Callers pick the mode by argument: ``VectorStore(root, encoder)`` for ``linker annotate``'s
entity tower and ``linker kb`` (raw rows), ``VectorStore(root, encoder, unit=True)`` for the
normalizer; ``root`` None is :func:`default_cache_dir`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from e2e_linker.console import detail, say
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import (
    default_cache_dir,
    encoder_fingerprint,
    ensure_room,
    exclusive,
    store_key,
    writable,
)
from e2e_linker.kb_search.integrity import (
    atomic_write,
    open_matrix,
    save_array,
)
from e2e_linker.kb_search.packed_index import (
    PackedCoverage,
    PackedInfo,
    built_for,
    coverage,
    load_coverage,
    name_hashes,
    names_digest,
    read_info,
    read_name_hashes,
    read_packed,
    save_coverage,
)
from e2e_linker.kb_search.partial_matrix import (
    PartialKBMatrix,
)
from e2e_linker.kb_search.shared_rows import SharedRows
from e2e_linker.kb_search.shipped import require_shipped
from e2e_linker.kb_search.store_encoding import StoreEncoding


def texts_hash(texts: Sequence[str]) -> str:
    """The key of a unit-mode text list (its file is ``<hash>-<n>.npy``)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:20]


@dataclass
class PackedRows:
    """A shipped packed index opened for a text list: the list's rows (encoded on demand), the
    faiss index, and — when the list differs a little from the one packed — what the index
    holds of it (``coverage``; None: exactly the list); ``masked``: the list is a part of the
    packed one (:meth:`~e2e_linker.kb_search.packed_index.PackedCoverage.narrowed`), to be
    searched with the rows it lacks masked inside the search."""

    rows: PartialKBMatrix
    index: object
    coverage: PackedCoverage | None = None
    masked: bool = False


class VectorStore(StoreEncoding):
    """Vectors of texts for one encoder, on disk, keyed by text; lists full or partial, rows
    raw or unit-normalised (``unit``). See the module docstring for the modes and files.

    Keyed by text rather than by KB, so merging KBs, adding mined names or switching between
    KB versions only encodes the texts not seen before. Encoding into the table is checkpointed
    every ``checkpoint`` names and a unit list is written in parts of ``part_size`` texts, so an
    interrupted encode of a large KB resumes where it stopped. Only unit lists of at least
    ``seed_min`` texts look into the table (reading it costs a second or two). ``root`` None:
    :func:`default_cache_dir`. ``alternative``: a cheaper way to what the caller asked, named
    in the line that announces an encode of a minute or more
    (:mod:`e2e_linker.kb_search.encode_estimate`).
    """

    def __init__(self, root: str | os.PathLike | None, encoder: TextEncoder, *,
                 unit: bool = False, fingerprint: str | None = None, batch_size: int = 256,
                 progress: bool = True, checkpoint: int = 32768, part_size: int = 16384,
                 seed_min: int = 1000, alternative: str | None = None):
        self.root = Path(root) if root else default_cache_dir()
        self.encoder = encoder
        self.unit = unit
        self.fingerprint = fingerprint or encoder_fingerprint(encoder)
        #: the name-keyed table's folder (both modes), and the folder of this mode's lists:
        #: named by the fingerprint and how the encoder batches (:func:`store_key`), so that
        #: vectors of two batching schemes never share a store
        key = store_key(self.fingerprint)
        self.names_folder = self.root / "entity_vectors" / key
        self.folder = (self.root / "normalizer_vectors" / key if unit
                       else self.names_folder)
        self.names_path = self.names_folder / "names.jsonl"
        self.vectors_path = self.names_folder / "vectors.npy"
        self.batch_size = batch_size
        self.progress = progress
        self.checkpoint = checkpoint
        self.part_size = part_size
        self.seed_min = seed_min
        self.alternative = alternative

    # ---- a text list: full, partial ----------------------------------------------------------

    def list_path(self, texts: Sequence[str], *, digest: str | None = None) -> Path:
        """Where the full matrix of ``texts`` lives (or will) in this mode.

        ``digest``: :func:`~e2e_linker.kb_search.packed_index.names_digest` of ``texts`` when
        the caller has it (a raw list's key; hashing 744k names costs a tenth of a second)."""
        if self.unit:
            return self.folder / f"{texts_hash(texts)}-{len(texts)}.npy"
        return self.folder / "kb" / f"{digest or names_digest(texts)}.npy"

    def matrix(self, texts: Sequence[str], *, label: str = "encoding",
               describe: dict | None = None, batch_size: int | None = None,
               progress: bool | None = None, digest: str | None = None) -> np.ndarray:
        """Full mode: the fp16 vectors of ``texts`` in order, memory-mapped from the list's file
        (written once). ``label`` names a unit list's progress bar; ``describe`` (the KB spec)
        is written beside a raw list once, for ``linker kb info``; ``digest`` as in
        :meth:`list_path`."""
        if self.unit:
            return self._full_unit(list(texts), label)
        return self._full_raw(texts, describe,
                              self.batch_size if batch_size is None else batch_size,
                              self.progress if progress is None else progress, digest)

    def partial(self, texts: Sequence[str]) -> PartialKBMatrix:
        """Partial mode: the list's rows, each encoded the first time it is asked for (the
        partial files sit beside the full one, which they become when complete)."""
        return self._partial_at(self.list_path(texts), texts)

    def _partial_at(self, path: Path, texts: Sequence[str],
                    source: SharedRows | None = None) -> PartialKBMatrix:
        """:meth:`partial` of the list whose full matrix is ``path`` (``source``: where
        missing rows are taken from before any is encoded)."""
        return PartialKBMatrix(path, texts, self.encoder, self.folder, self.batch_size,
                               self.progress, unit=self.unit, source=source,
                               alternative=self.alternative)

    def packed_rows(self, packed: str | os.PathLike | None, texts: Sequence[str], *,
                    required: bool = False, owner: str = "model", items: str = "names",
                    pack_command: str = "linker kb pack", max_change: float = 0.0,
                    digest: str | None = None) -> PackedRows | None:
        """The partial rows of ``texts`` and a shipped packed shortlist index over them, or None
        where it does not apply: no packed file, one built for another encoder or text list, or
        (unless ``required``) the list's full matrix already cached — then full mode is the
        better one.

        Why here: annotate's entity index and the normalizer's ontology texts open their packed
        index by the same rules and tell a user the same thing on a first run. ``required``
        (``--index packed``) makes a missing or mismatched file an error; ``owner``, ``items``
        and ``pack_command`` name what shipped it, what its rows are and what writes a new one.
        The index is a faiss ``IndexIVFPQ`` (``read_packed``).

        ``max_change`` (annotate passes
        :data:`~e2e_linker.kb_search.packed_index.MAX_CHANGE`) lets a packed index built for
        another list of the same encoder serve ``texts`` when the two differ by at most that
        share of added and of dropped texts (its rows' name hashes say which): the result then
        carries the :class:`~e2e_linker.kb_search.packed_index.PackedCoverage`. A list that
        adds at most that share but drops more (a part of the packed list:
        :meth:`~e2e_linker.kb_search.packed_index.PackedCoverage.narrowed`) is served
        ``masked``, its rows taken from the other lists the index serves before any is
        encoded (:mod:`e2e_linker.kb_search.shared_rows`). A list that adds more is said on
        stderr and served as today (None: full mode).

        ``digest``: :func:`~e2e_linker.kb_search.packed_index.names_digest` of ``texts`` when
        the caller has it; otherwise it is hashed here, once for the header check and the
        list's files.
        """
        if packed is None or not Path(packed).is_file():
            if required:
                raise UserError(f"--index packed: the {owner} has no packed KB index "
                                f"({packed}); `{pack_command}` writes one")
            return None
        require_shipped(packed)  # a shipped index is checked against its manifest first
        info = read_info(packed)
        digest = digest or names_digest(texts)
        path = self.list_path(texts, digest=digest)
        covered = None
        if not built_for(info, self.fingerprint, texts, digest=digest):
            if not required and self._full_list_at_hand(texts, path):
                return None  # before hashing every text: full mode wins anyway
            covered = self._grown_coverage(packed, info, texts, max_change, owner, items,
                                           pack_command, path)
            if covered is None:
                if required:
                    raise UserError(f"{packed} was built for another encoder or KB "
                                    f"{items[:-1]} list ({info.kb or 'unknown'}, "
                                    f"{info.names:,} {items}); `{pack_command}` rebuilds it")
                return None
        if not required and self._full_list_at_hand(texts, path):
            return None
        masked = covered is not None and covered.narrowed(max_change)
        source = SharedRows(path.parent, path, Path(packed), info.names_digest, covered,
                            self.encoder.hidden_size) if masked else None
        rows = self._partial_at(path, texts, source)
        self._describe(path, {"kb": info.kb or None, "names": len(texts),
                              "packed_index": str(packed)})
        if self.progress:  # routine facts: with `linker -v` only (e2e_linker/console.py)
            detail(f"KB index: packed index shipped with the {owner} ({info.names:,} {items}, "
                   f"{info.pq_bytes} B/{items[:-1]}); {items} a search shortlists are "
                   + ("taken from the other KBs it serves where they hold them, else "
                      if masked else "")
                   + f"encoded on first use and cached in {self.folder} ({rows.present:,} "
                   "so far)")
            if covered is not None:
                def count(n: int) -> str:
                    return f"{n:,} {items} it" if n != 1 else f"1 {items[:-1]} it"

                added, removed = len(covered.added), covered.removed
                detail(f"KB index: the packed index holds {info.names - removed:,} of this "
                       f"KB's {len(texts):,} {items}; {count(added)} lacks "
                       f"{'is' if added == 1 else 'are'} "
                       + ("taken or " if masked else "")
                       + f"encoded now and searched exactly beside it; {count(removed)} "
                       f"holds that this KB lacks {'is' if removed == 1 else 'are'} "
                       + ("masked in its search" if masked else "never returned"))
        return PackedRows(rows, read_packed(packed), covered, masked)

    def _grown_coverage(self, packed: str | os.PathLike, info: PackedInfo,
                        texts: Sequence[str], max_change: float, owner: str, items: str,
                        pack_command: str, path: Path) -> PackedCoverage | None:
        """What a packed index built for another list of this encoder holds of ``texts``, when
        it may serve them (at most ``max_change`` added, and at most that share dropped or the
        list a part of the packed one: :meth:`~e2e_linker.kb_search.packed_index.
        PackedCoverage.narrowed`); None otherwise, saying why on stderr when the index could
        have served a smaller change. The answer is kept beside the list's matrix ``path``
        (:func:`~e2e_linker.kb_search.packed_index.save_coverage`), keyed by the index's list,
        and read back by later loads; one kept before the added names' hashes were is given
        them (other lists find its rows by them: :mod:`e2e_linker.kb_search.shared_rows`)."""
        if not max_change or info.fingerprint != self.fingerprint:
            return None
        kept = path.with_name(f"{path.stem}.covered-by-{info.names_digest}.safetensors")
        covered = load_coverage(kept, info.names, len(texts)) if info.hashed else None
        if covered is not None:
            if covered.added_hashes is None:  # kept before they were: other lists need them
                covered = replace(covered, added_hashes=name_hashes(
                    [texts[row] for row in covered.added.tolist()]))
                with contextlib.suppress(OSError):  # a read-only cache: added next time
                    save_coverage(kept, covered)
            served = covered.within(max_change) or covered.narrowed(max_change)
            return covered if served else None
        hashes = read_name_hashes(packed) if info.hashed else None
        if hashes is None:
            if self.progress:
                say(f"KB index: this KB's {items} differ from the {owner}'s packed index, "
                    f"which was packed before it recorded its {items} (`{pack_command}` "
                    f"writes one that does); every {items[:-1]} is encoded instead")
            return None
        covered = coverage(hashes, texts)
        with contextlib.suppress(OSError):  # a read-only cache: computed again next time
            path.parent.mkdir(parents=True, exist_ok=True)
            save_coverage(kept, covered)
        if covered.within(max_change) or covered.narrowed(max_change):
            return covered
        if self.progress:
            say(f"KB index: this KB adds {len(covered.added):,} {items} to the {owner}'s "
                f"packed index, more than {max_change:.0%} of its {len(texts):,}, so the "
                f"packed index is not used: every {items[:-1]} is encoded instead (once; "
                f"`{pack_command}` packs an index for this KB)")
        return None

    def _full_list_at_hand(self, texts: Sequence[str], path: Path) -> bool:
        """Whether full mode can serve ``texts`` (whose full matrix is ``path``) without
        encoding them all: their full list is cached and intact, or it was damaged (and is now
        discarded) and the name table holds every text to gather it again, to the same bytes.

        Why the second case: a damaged list whose texts must all be encoded again (one
        promoted from partial rows has no table behind it) is better served by the packed
        index's on-demand rows than by an hour-long encode."""
        if not path.is_file():
            return False
        if open_matrix(path, (len(texts), self.encoder.hidden_size), self.folder) is not None:
            return True
        if self.unit:
            return False
        known = set(self.load()[0])
        return all(text in known for text in texts)

    def _full_raw(self, names: Sequence[str], describe: dict | None, batch_size: int,
                  progress: bool, digest: str | None = None) -> np.ndarray:
        """A raw list's matrix, gathered from the table into a file of its own.

        Why a second file: the table is in first-seen order, so a KB's rows are scattered in
        it; gathering them costs a full read and an in-memory copy on every start. The list's
        matrix is written once (keyed by a hash of the name list) and then mapped, so a large
        KB costs page cache, not process memory, until rows are touched.
        """
        path = self.list_path(names, digest=digest)
        shape = (len(names), self.encoder.hidden_size)
        matrix = open_matrix(path, shape, self.folder)
        if matrix is None:
            vectors = self.vectors_for(names, batch_size=batch_size, progress=progress)
            with exclusive(self.folder, "writes a KB matrix", progress), writable(path.parent):
                path.parent.mkdir(parents=True, exist_ok=True)
                if open_matrix(path, shape, self.folder, locked=True) is None:
                    ensure_room(path.parent, vectors.nbytes, f"the KB matrix {path.name}")
                    save_array(path, vectors)
            matrix = np.load(path, mmap_mode="r")
        if describe is not None:
            self._describe(path, {**describe, "names": len(names)})
        return matrix

    @staticmethod
    def _describe(path: Path, record: dict) -> None:
        """Record what a list was made for beside it (``<list>.json``, for ``linker kb info``):
        the first record's values stay, keys it lacks are added. A cache that cannot be
        written goes without (the record only informs)."""
        info = path.with_suffix(".json")
        try:
            old = json.loads(info.read_text()) if info.is_file() else None
        except (OSError, ValueError):
            old = None
        merged = {**record, **(old if isinstance(old, dict) else {})}
        if merged == old:
            return
        text = json.dumps(merged, indent=2) + "\n"
        with contextlib.suppress(OSError):
            info.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(info, lambda handle: handle.write(text.encode()))

    def _full_unit(self, texts: list[str], label: str) -> np.ndarray:
        """A unit list's matrix: seeded from the table, the rest encoded in resumable parts
        (under the folder's lock: a second process waits for the first, then maps its file)."""
        dim = self.encoder.hidden_size
        if not texts:
            return np.zeros((0, dim), np.float16)
        path = self.list_path(texts)
        matrix = open_matrix(path, (len(texts), dim), self.folder)
        if matrix is not None:
            return matrix
        with exclusive(self.folder, "encodes texts", self.progress), writable(self.folder):
            if open_matrix(path, (len(texts), dim), self.folder, locked=True) is None:
                self._encode_unit(texts, label, path)
        return np.load(path, mmap_mode="r")
