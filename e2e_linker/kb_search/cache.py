"""The one on-disk store of text vectors that ``linker annotate`` and ``linker normalize`` share.

Why a cache: encoding the ~700k names of the BC5CDR KB takes minutes on a CPU, and the result
only depends on the encoder's weights and the text. Everything lives under
:func:`default_cache_dir`, in folders keyed by :func:`encoder_fingerprint`.

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

On disk (the layout existing caches have; no file is renamed):

* ``entity_vectors/<fingerprint>/names.jsonl`` + ``vectors.npy`` — the name-keyed table, fp16
  vectors by text, appended to as new texts appear. Raw lists are gathered from it; unit lists
  are seeded from it (when the fingerprints agree) and add their newly encoded texts to it.
* ``entity_vectors/<fingerprint>/kb/<digest>.npy`` — raw full lists, one per KB name list
  (``.json`` beside: the KB it was built for; approximate indexes: ``.*.faiss``).
* ``normalizer_vectors/<fingerprint>/<hash>-<n>.npy`` — unit full lists, written in resumable
  parts (``<hash>-<n>.parts/``).
* ``<list>.partial.npy`` + ``<list>.partial-have.npy`` (+ ``<list>.partial-sums.npy``) beside
  a list's full file — its partial mode.
* ``FILE.sums.json`` beside every whole file above — its size and block checksums
  (:mod:`e2e_linker.kb_search.integrity`: what is checked when, and what a damaged file
  becomes: reported by name, discarded, made again).

Why a full list is encoded one way per mode: the raw mode encodes the names its table lacks,
sorted by length, in checkpointed pieces, then gathers the list's rows; the unit mode encodes
the texts its seed lacks in parts of the list, normalising fp32 output. Each linker was scored
with its own vectors, and the same texts encoded in other batches (or normalised after fp16
rounding instead of before) differ in the last bits, which flips near-ties; so each mode keeps
its encode, and the store shares the rest: the table, the folders, the lock, the list files.

Callers pick the mode by argument: ``VectorStore(root, encoder)`` for ``linker annotate``'s
entity tower and ``linker kb`` (raw rows), ``VectorStore(root, encoder, unit=True)`` for the
normalizer; ``root`` None is :func:`default_cache_dir`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import (
    default_cache_dir,
    encoder_fingerprint,
    ensure_room,
    exclusive,
    try_exclusive,
    writable,
)
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    UNVERIFIED,
    DamagedFile,
    Verdict,
    adopt,
    atomic_write,
    check_file,
    discard_damaged,
    npy_layout,
    open_matrix,
    report_damage,
    save_array,
    save_lines,
    seal,
)
from e2e_linker.kb_search.packed_index import (
    PackedCoverage,
    PackedInfo,
    built_for,
    coverage,
    load_coverage,
    names_digest,
    read_info,
    read_name_hashes,
    read_packed,
    save_coverage,
)
from e2e_linker.kb_search.partial_matrix import (
    PartialKBMatrix,
    check_partial,
    partial_fill,
)
from e2e_linker.kb_search.shipped import require_shipped
from e2e_linker.kb_search.unit_vectors import encode_unit, unit_rows

#: batches encoded between two updates of the progress bar
PROGRESS_BATCHES = 8
#: names encoded to estimate the time a KB encode will take (spread over the name lengths)
ESTIMATE_SAMPLE = 256


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
    holds of it (``coverage``; None: exactly the list)."""

    rows: PartialKBMatrix
    index: object
    coverage: PackedCoverage | None = None


class VectorStore:
    """Vectors of texts for one encoder, on disk, keyed by text; lists full or partial, rows
    raw or unit-normalised (``unit``). See the module docstring for the modes and files.

    Keyed by text rather than by KB, so merging KBs, adding mined names or switching between
    KB versions only encodes the texts not seen before. Encoding into the table is checkpointed
    every ``checkpoint`` names and a unit list is written in parts of ``part_size`` texts, so an
    interrupted encode of a large KB resumes where it stopped. Only unit lists of at least
    ``seed_min`` texts look into the table (reading it costs a second or two). ``root`` None:
    :func:`default_cache_dir`.
    """

    def __init__(self, root: str | os.PathLike | None, encoder: TextEncoder, *,
                 unit: bool = False, fingerprint: str | None = None, batch_size: int = 256,
                 progress: bool = True, checkpoint: int = 32768, part_size: int = 16384,
                 seed_min: int = 1000):
        self.root = Path(root) if root else default_cache_dir()
        self.encoder = encoder
        self.unit = unit
        self.fingerprint = fingerprint or encoder_fingerprint(encoder)
        #: the name-keyed table's folder (both modes), and the folder of this mode's lists
        self.names_folder = self.root / "entity_vectors" / self.fingerprint
        self.folder = (self.root / "normalizer_vectors" / self.fingerprint if unit
                       else self.names_folder)
        self.names_path = self.names_folder / "names.jsonl"
        self.vectors_path = self.names_folder / "vectors.npy"
        self.batch_size = batch_size
        self.progress = progress
        self.checkpoint = checkpoint
        self.part_size = part_size
        self.seed_min = seed_min

    # ---- the name-keyed table --------------------------------------------------------------

    def load(self, attempts: int = 5, *, locked: bool = False
             ) -> tuple[list[str], np.ndarray | None]:
        """The table's texts and vectors, every block checked against its record (what is
        gathered from the table goes into new files, so all of it is read).

        A table that does not check out is read again while another process may be writing it
        (it replaces the two files one after the other, holding the folder's lock), then
        repaired under the lock (:meth:`_repair_table`). ``locked``: the caller holds it."""
        problem: DamagedFile | None = None
        for attempt in range(attempts):
            if not (self.names_path.is_file() and self.vectors_path.is_file()):
                return [], None
            try:
                return self._read_table(locked)
            except DamagedFile as exc:
                problem = exc
            if locked:
                return self._repair_table()
            with try_exclusive(self.names_folder) as held:
                if held:  # nobody is writing: what we saw is what there is
                    with writable(self.names_folder):
                        return self._repair_table()
            if not os.access(self.names_folder, os.W_OK):
                break  # nobody can be writing it either
            time.sleep(0.5 * (attempt + 1))
        if not os.access(self.names_folder, os.W_OK) and problem is not None:
            raise UserError(f"the KB cache file {problem.path} is damaged ({problem.why}) and "
                            "cannot be repaired here (the folder is not writable); delete "
                            f"{self.names_path} and {self.vectors_path} (their names are "
                            "encoded again), or point E2E_LINKER_CACHE (or --cache-dir) at "
                            "another folder")
        with exclusive(self.names_folder, "writes the name table", self.progress), \
                writable(self.names_folder):
            return self._repair_table()

    def _read_names(self) -> list[str]:
        """``names.jsonl`` parsed; :class:`DamagedFile` for a line that is not a JSON string."""
        names: list[str] = []
        with self.names_path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    name = json.loads(line)
                except ValueError:
                    raise DamagedFile(self.names_path,
                                      f"line {number:,} is not JSON") from None
                if not isinstance(name, str):
                    raise DamagedFile(self.names_path, f"line {number:,} is not a name")
                names.append(name)
        return names

    def _table_verdicts(self, full: bool = False) -> tuple[Verdict, Verdict]:
        """Both table files checked (every byte, once per version; ``full``: now)."""
        return (check_file(self.names_path, npy=False, full=full),
                check_file(self.vectors_path, full=full, dtype=np.float16))

    def _read_table(self, locked: bool) -> tuple[list[str], np.ndarray]:
        """The table when both files check out (:class:`DamagedFile` otherwise); files
        without a record are adopted when the lock is ours or free."""
        verdicts = self._table_verdicts()
        for verdict in verdicts:
            if verdict.state == DAMAGED:
                raise DamagedFile(verdict.path, verdict.why)
        if any(v.state == UNVERIFIED for v in verdicts):
            if locked:
                return self._adopt_table()
            with try_exclusive(self.names_folder) as held:
                if held:
                    return self._adopt_table()
        names = self._read_names()
        vectors = np.load(self.vectors_path, mmap_mode="r")
        if len(vectors) != len(names):
            raise DamagedFile(self.vectors_path, f"{len(vectors):,} rows for the "
                                                 f"{len(names):,} names of names.jsonl")
        return names, vectors

    def _adopt_table(self) -> tuple[list[str], np.ndarray]:
        """A table without records (folder locked): checked and recorded, or repaired."""
        names = self._read_names()
        if len(npy_layout(self.vectors_path).shape) != 2 or \
                npy_layout(self.vectors_path).shape[0] != len(names):
            raise DamagedFile(self.vectors_path, "its rows and the names of names.jsonl "
                                                 "differ in number")
        verdict = adopt(self.vectors_path, dtype=np.float16)
        if verdict.state == DAMAGED:
            raise DamagedFile(self.vectors_path, verdict.why)
        with contextlib.suppress(OSError):
            seal(self.names_path, npy=False)
        return names, np.load(self.vectors_path, mmap_mode="r")

    def _repair_table(self) -> tuple[list[str], np.ndarray | None]:
        """The table read under the folder's lock, where whatever fails is damage: damaged
        blocks of ``vectors.npy`` (and all-zero rows of one without a record) drop the rows
        they hold — their names are encoded again when next needed — and the table is
        rewritten; a damaged ``names.jsonl``, or a ``vectors.npy`` whose header or size is
        wrong, drops the table."""
        if not (self.names_path.is_file() and self.vectors_path.is_file()):
            return [], None
        both = [self.names_path, self.vectors_path]
        names_verdict, vectors_verdict = self._table_verdicts(full=True)
        try:
            if names_verdict.state == DAMAGED:
                raise DamagedFile(self.names_path, names_verdict.why)
            names = self._read_names()
            if vectors_verdict.state == DAMAGED and not vectors_verdict.bad_blocks:
                raise DamagedFile(self.vectors_path, vectors_verdict.why)
            vectors = np.load(self.vectors_path, mmap_mode="r")
            if len(vectors) != len(names):
                raise DamagedFile(self.vectors_path, f"{len(vectors):,} rows for the "
                                                     f"{len(names):,} names of names.jsonl")
        except DamagedFile as exc:
            discard_damaged(exc.path, exc.why, "the name table is discarded; its names are "
                            "encoded again when needed", also=[p for p in both if p != exc.path])
            return [], None
        keep = np.ones(len(names), bool)
        why = vectors_verdict.why
        if vectors_verdict.state == DAMAGED:
            for block in vectors_verdict.bad_blocks:
                rows = vectors_verdict.block_rows
                keep[block * rows:(block + 1) * rows] = False
        elif vectors_verdict.state == UNVERIFIED:
            for at in range(0, len(names), 65536):
                keep[at:at + 65536] = np.asarray(vectors[at:at + 65536]).any(axis=1)
            why = f"{int((~keep).sum()):,} rows are all zeros, which no encoder writes"
        if keep.all():
            if UNVERIFIED in (names_verdict.state, vectors_verdict.state):
                with contextlib.suppress(OSError):
                    seal(self.names_path, npy=False)
                    seal(self.vectors_path)
            return names, vectors
        kept = [name for name, k in zip(names, keep.tolist(), strict=True) if k]
        self.store(kept, np.asarray(vectors[keep]))
        report_damage(self.vectors_path, why, f"the vectors of {len(names) - len(kept):,} "
                      "names were dropped; they are encoded again when needed")
        return kept, np.load(self.vectors_path, mmap_mode="r")

    def store(self, names: list[str], vectors: np.ndarray) -> None:
        """Replace the table with ``names`` and their ``vectors`` (each file atomically and
        with its record; room checked first). Call with the folder locked."""
        with writable(self.names_folder):
            self.names_folder.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps(name) + "\n" for name in names]
            ensure_room(self.names_folder, vectors.nbytes + sum(map(len, lines)),
                        "the name table")
            save_array(self.vectors_path, vectors)
            save_lines(self.names_path, lines)
            encoder_json = self.names_folder / "encoder.json"
            if not encoder_json.is_file():
                config = getattr(self.encoder.model, "config", None)
                text = json.dumps({
                    "model": str(getattr(config, "name_or_path", "") or ""),
                    "pooling": self.encoder.pooling, "max_length": self.encoder.max_length,
                }, indent=2) + "\n"
                atomic_write(encoder_json, lambda handle: handle.write(text.encode()))

    def estimate_seconds(self, missing: Sequence[str], batch_size: int = 256) -> float:
        """Seconds encoding ``missing`` will take here, from a timed sample of names spread
        over their lengths (the result is thrown away, so stored vectors do not change).

        The sample runs in eight length-sorted batches, as the real encode pads them, after an
        untimed warm-up call: one batch of every length padded to the longest, timed cold,
        overestimated the encode about twofold."""
        step = max(1, len(missing) // ESTIMATE_SAMPLE)
        sample = list(missing[::step][:ESTIMATE_SAMPLE])
        self.encoder.encode(sample[:8], batch_size=8, dtype=np.float16)
        start = time.perf_counter()
        self.encoder.encode(sample, batch_size=max(1, len(sample) // 8), dtype=np.float16)
        return (time.perf_counter() - start) * len(missing) / max(1, len(sample))

    def vectors_for(self, names: Sequence[str], batch_size: int = 256,
                    progress: bool = True) -> np.ndarray:
        """Raw fp16 vectors of ``names`` in order from the table, encoding (and adding) only
        unseen ones."""
        known, stored = self.load()
        row = {n: i for i, n in enumerate(known)}
        if any(n not in row for n in names):
            with exclusive(self.names_folder, "encodes KB names", progress):
                self._encode_missing(names, batch_size, progress)
            known, stored = self.load()
            row = {n: i for i, n in enumerate(known)}
        return np.asarray(stored[[row[n] for n in names]]) if names else np.zeros(
            (0, self.encoder.hidden_size), np.float16)

    def _encode_missing(self, names: Sequence[str], batch_size: int, progress: bool) -> None:
        """Encode and store the names the table lacks (called with its folder locked)."""
        from tqdm.auto import tqdm

        known, stored = self.load(locked=True)  # another process may have added them
        row = {n: i for i, n in enumerate(known)}
        missing = sorted({n for n in names if n not in row}, key=len)
        if missing:
            if progress and len(missing) > 2 * ESTIMATE_SAMPLE:
                seconds = self.estimate_seconds(missing, batch_size)
                took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
                print(f"KB index: encoding {len(missing):,} names not cached yet "
                      f"(about {took} on this machine, once) into {self.names_folder}; "
                      f"an interrupted encode resumes from its last {self.checkpoint:,}-name "
                      "checkpoint", file=sys.stderr)
            parts = [np.asarray(stored)] if stored is not None else []
            done = list(known)
            bar = tqdm(total=len(missing), desc="encoding KB names", unit="name",
                       disable=not progress)
            # the bar moves every few batches, the store is written every checkpoint; pieces
            # are whole batches of the length-sorted list, so the batches (and vectors) are
            # the ones a single encode of the block would make
            piece = batch_size * PROGRESS_BATCHES
            for start in range(0, len(missing), self.checkpoint):
                block = missing[start:start + self.checkpoint]
                for at in range(0, len(block), piece):
                    parts.append(self.encoder.encode(block[at:at + piece],
                                                     batch_size=batch_size, dtype=np.float16))
                    bar.update(len(block[at:at + piece]))
                done.extend(block)
                self.store(done, np.concatenate(parts))
            bar.close()

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

    def _partial_at(self, path: Path, texts: Sequence[str]) -> PartialKBMatrix:
        """:meth:`partial` of the list whose full matrix is ``path``."""
        return PartialKBMatrix(path, texts, self.encoder, self.folder, self.batch_size,
                               self.progress, unit=self.unit)

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
        carries the :class:`~e2e_linker.kb_search.packed_index.PackedCoverage`. A larger
        change is said on stderr and served as today (None: full mode).

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
        rows = self._partial_at(path, texts)
        self._describe(path, {"kb": info.kb or None, "names": len(texts),
                              "packed_index": str(packed)})
        if self.progress:
            print(f"KB index: packed index shipped with the {owner} ({info.names:,} {items}, "
                  f"{info.pq_bytes} B/{items[:-1]}); {items} a search shortlists are encoded on "
                  f"first use and cached in {self.folder} ({rows.present:,} so far)",
                  file=sys.stderr)
            if covered is not None:
                def count(n: int) -> str:
                    return f"{n:,} {items} it" if n != 1 else f"1 {items[:-1]} it"

                added, removed = len(covered.added), covered.removed
                print(f"KB index: the packed index holds {info.names - removed:,} of this "
                      f"KB's {len(texts):,} {items}; {count(added)} lacks "
                      f"{'is' if added == 1 else 'are'} encoded now and searched exactly "
                      f"beside it; {count(removed)} holds that this KB lacks "
                      f"{'is' if removed == 1 else 'are'} never returned", file=sys.stderr)
        return PackedRows(rows, read_packed(packed), covered)

    def _grown_coverage(self, packed: str | os.PathLike, info: PackedInfo,
                        texts: Sequence[str], max_change: float, owner: str, items: str,
                        pack_command: str, path: Path) -> PackedCoverage | None:
        """What a packed index built for another list of this encoder holds of ``texts``, when
        it may serve them (at most ``max_change`` added and dropped); None otherwise, saying
        why on stderr when the index could have served a smaller change. The answer is kept
        beside the list's matrix ``path`` (:func:`~e2e_linker.kb_search.packed_index.
        save_coverage`), keyed by the index's list, and read back by later loads."""
        if not max_change or info.fingerprint != self.fingerprint:
            return None
        kept = path.with_name(f"{path.stem}.covered-by-{info.names_digest}.safetensors")
        covered = load_coverage(kept, info.names, len(texts)) if info.hashed else None
        if covered is not None:
            return covered if covered.within(max_change) else None
        hashes = read_name_hashes(packed) if info.hashed else None
        if hashes is None:
            if self.progress:
                print(f"KB index: this KB's {items} differ from the {owner}'s packed index, "
                      f"which was packed before it recorded its {items} (`{pack_command}` "
                      f"writes one that does); every {items[:-1]} is encoded instead",
                      file=sys.stderr)
            return None
        covered = coverage(hashes, texts)
        with contextlib.suppress(OSError):  # a read-only cache: computed again next time
            path.parent.mkdir(parents=True, exist_ok=True)
            save_coverage(kept, covered)
        if covered.within(max_change):
            return covered
        if self.progress:
            print(f"KB index: this KB adds {len(covered.added):,} {items} to the {owner}'s "
                  f"packed index and drops {covered.removed:,} of its {info.names:,}, more "
                  f"than {max_change:.0%} of either, so the packed index is not used: every "
                  f"{items[:-1]} is encoded instead (once; `{pack_command}` packs an index for "
                  "this KB)", file=sys.stderr)
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

    def _part_ok(self, part: Path, shape: tuple[int, int]) -> bool:
        """Whether a part of a unit list is on disk whole and right (folder locked); a damaged
        one is discarded, to be encoded again."""
        if not part.is_file():
            return False
        verdict = check_file(part, shape=shape, dtype=np.float16)
        if verdict.state == UNVERIFIED:
            verdict = adopt(part, shape=shape, dtype=np.float16)
        if verdict.state == DAMAGED:
            discard_damaged(part, verdict.why, "discarded; its texts are encoded again")
            return False
        return True

    def _encode_unit(self, texts: list[str], label: str, path: Path) -> None:
        """Encode a unit list into ``path`` (folder locked)."""
        from tqdm.auto import tqdm

        dim = self.encoder.hidden_size
        seeded, found = (None, np.zeros(len(texts), bool))
        if len(texts) >= self.seed_min:
            seeded, found = self._seed(texts)
        parts_dir = path.with_suffix(".parts")
        parts_dir.mkdir(parents=True, exist_ok=True)
        todo = [i for i in range(len(texts)) if not found[i]]
        n_parts = (len(todo) + self.part_size - 1) // self.part_size
        bar = tqdm(total=len(todo), desc=label, unit="text", disable=not self.progress)
        for p in range(n_parts):
            part_path = parts_dir / f"{p:05d}.npy"
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            if not self._part_ok(part_path, (len(chunk), dim)):
                vecs = encode_unit(self.encoder, [texts[i] for i in chunk], self.batch_size)
                ensure_room(parts_dir, len(chunk) * dim * 2, f"part {p} of {path.name}")
                save_array(part_path, vecs.astype(np.float16))
            bar.update(len(chunk))
        bar.close()
        out = seeded if seeded is not None else np.zeros((len(texts), dim), np.float16)
        for p in range(n_parts):
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            out[chunk] = np.load(parts_dir / f"{p:05d}.npy")
        ensure_room(path.parent, out.nbytes, f"the text list {path.name}")
        save_array(path, out)
        shutil.rmtree(parts_dir, ignore_errors=True)
        if len(todo) >= self.seed_min:
            self._remember([texts[i] for i in todo], out[todo])

    # ---- unit lists and the table ----------------------------------------------------------

    def _seed(self, texts: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """Rows found in the table, scaled to unit length: (vectors or None, found mask)."""
        found = np.zeros(len(texts), bool)
        try:
            known, stored = self.load()
        except (OSError, ValueError):
            return None, found
        if stored is None:
            return None, found
        row = {name: i for i, name in enumerate(known)}
        hits = [(i, row[t]) for i, t in enumerate(texts) if t in row]
        hits += self._same_tokens(texts, row)
        if not hits:
            return None, found
        out = np.zeros((len(texts), stored.shape[1]), np.float16)
        mine = np.array([i for i, _ in hits])
        theirs = np.array([j for _, j in hits])
        order = np.argsort(theirs)  # read the memory map in order
        out[mine[order]] = unit_rows(stored[theirs[order]]).astype(np.float16)
        found[mine] = True
        return out, found

    def _same_tokens(self, texts: Sequence[str], row: dict[str, int]) -> list[tuple[int, int]]:
        """Table texts that differ from a text only in case *and* tokenize identically.

        An uncased tokenizer (MiniLM's) gives "Breast Neoplasms" and "breast neoplasms" the
        same token ids, hence the same vector; we accept a pair only after checking the ids.
        """
        lowered: dict[str, str] = {}
        for name in row:
            lowered.setdefault(name.lower(), name)
        pairs = [(i, lowered[t.lower()]) for i, t in enumerate(texts)
                 if t not in row and t.lower() in lowered]
        if not pairs:
            return []
        tokenizer = self.encoder.tokenizer
        limit = self.encoder.max_length

        def ids(batch: list[str]) -> list[list[int]]:
            return tokenizer(batch, truncation=True, max_length=limit)["input_ids"]

        out: list[tuple[int, int]] = []
        for start in range(0, len(pairs), 65536):
            block = pairs[start:start + 65536]
            mine = ids([texts[i] for i, _ in block])
            theirs = ids([name for _, name in block])
            out += [(i, row[name]) for (i, name), a, b in zip(block, mine, theirs, strict=True)
                    if a == b]
        return out

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Add freshly encoded texts to the table, so that another list sharing most of them
        (the chemical KB, then the whole BC5CDR KB) encodes only the rest. Under the table's
        lock, as every writer of the table."""
        with exclusive(self.names_folder, "adds texts", self.progress):
            known, stored = self.load(locked=True)
            seen = set(known)
            new = []
            for i, text in enumerate(texts):
                if text not in seen:
                    seen.add(text)
                    new.append(i)
            if not new:
                return
            rows = vectors[new].astype(np.float16)
            merged = np.concatenate([np.asarray(stored), rows]) if stored is not None else rows
            self.store(known + [texts[i] for i in new], merged)


def folder_bytes(folder: Path) -> int:
    """Bytes that the files under ``folder`` take on disk (a sparse partial matrix counts what
    it holds, not its length)."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            info = path.stat()
            blocks = getattr(info, "st_blocks", None)
            total += min(info.st_size, blocks * 512) if blocks is not None else info.st_size
    return total


def _read_json(path: Path) -> dict:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _list_paths(folder: Path) -> list[Path]:
    """The full-matrix paths of the text lists in ``folder``, each once whether the list is
    full, partial or both (its partial files name the same list)."""
    found: set[Path] = set()
    for path in folder.glob("*.npy") if folder.is_dir() else []:
        name = path.name
        if ".tmp" in name or name.startswith(".") or name.endswith(".f32.npy") or \
                name == "vectors.npy":
            continue
        for suffix in (".partial.npy", ".partial-have.npy", ".partial-sums.npy"):
            if name.endswith(suffix):
                name = name.removesuffix(suffix) + ".npy"
                break
        found.add(folder / name)
    return sorted(found)


def _describe_list(full: Path) -> dict:
    """A list's rows and state: ``full`` (every row), ``partial`` (``encoded`` of ``rows``,
    ``filled`` their ratio) or ``damaged`` (``linker kb info --verify`` says how)."""
    if full.is_file():
        try:
            rows = npy_layout(full).shape[0]
        except (DamagedFile, OSError):
            return {"rows": None, "state": DAMAGED, "encoded": None, "filled": None}
        return {"rows": rows, "state": "full", "encoded": rows, "filled": 1.0}
    fill = partial_fill(full)
    if fill is None:
        return {"rows": None, "state": DAMAGED, "encoded": None, "filled": None}
    present, rows = fill
    return {"rows": rows, "state": "partial", "encoded": present,
            "filled": round(present / rows, 4) if rows else 1.0}


def describe_cache(root: Path) -> list[dict]:
    """What a cache folder holds, one entry per encoder: its settings, how many names it has
    encoded, the KB matrices (with the KB each was built for, when recorded, how much of it is
    encoded and the approximate indexes beside them), the normalizer's text lists, and the
    bytes on disk. A list is listed once, full or partial; nothing here fails on a damaged
    file (it is listed as damaged)."""
    out: list[dict] = []
    for kind in ("entity_vectors", "normalizer_vectors"):
        for folder in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            if not folder.is_dir():
                continue
            entry: dict = {"store": kind, "fingerprint": folder.name,
                           "bytes": folder_bytes(folder), "kbs": [], "lists": []}
            settings = _read_json(folder / "encoder.json")
            if settings:
                entry["encoder"] = settings
            names = folder / "names.jsonl"
            if names.is_file():
                with names.open("rb") as handle:
                    entry["names"] = sum(1 for _ in handle)
            for matrix in _list_paths(folder / "kb"):
                record = _read_json(matrix.with_suffix(".json"))
                state = _describe_list(matrix)
                indexes = sorted(p.name.split(".", 1)[1].removesuffix(".faiss")
                                 for p in matrix.parent.glob(f"{matrix.stem}.*.faiss"))
                if state["state"] == "partial":
                    indexes = ["packed", *indexes]
                entry["kbs"].append({"file": matrix.name, "rows": state["rows"],
                                     "kb": record.get("kb"), "model": record.get("model"),
                                     "packed_index": record.get("packed_index"),
                                     "indexes": indexes or ["exact"], "state": state["state"],
                                     "encoded": state["encoded"], "filled": state["filled"]})
            for matrix in _list_paths(folder):
                record = _read_json(matrix.with_suffix(".json"))
                entry["lists"].append({"file": matrix.name, **_describe_list(matrix),
                                       "kb": record.get("kb"),
                                       "packed_index": record.get("packed_index")})
            out.append(entry)
    return out


def _verdict(root: Path, verdict: Verdict) -> dict:
    return {"file": str(verdict.path.relative_to(root)), "state": verdict.state,
            "why": verdict.why}


def verify_cache(root: Path) -> list[dict]:
    """Every file of a cache folder (vector store and compiled KBs) checked whole against its
    record, every byte now: one ``{file, state, why}`` per file, ``state`` ``ok``, ``damaged`` or ``unverified`` (no record: written before
    records existed, or an index built from a checked matrix), what ``linker kb info
    --verify`` reports. Reads the whole cache."""
    out: list[Verdict] = []
    for kind in ("entity_vectors", "normalizer_vectors"):
        for folder in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            if not folder.is_dir():
                continue
            names, vectors = folder / "names.jsonl", folder / "vectors.npy"
            table = [check_file(names, npy=False, full=True) if names.is_file() else None,
                     check_file(vectors, full=True, dtype=np.float16)
                     if vectors.is_file() else None]
            if all(v is not None and v.state != DAMAGED for v in table):
                with names.open("rb") as handle:
                    count = sum(1 for _ in handle)
                rows = npy_layout(vectors).shape[0]
                if rows != count:
                    table[1] = Verdict(vectors, DAMAGED, f"{rows:,} rows for the {count:,} "
                                                         "names of names.jsonl")
            out += [v for v in table if v is not None]
            for matrix in _list_paths(folder / "kb") + _list_paths(folder):
                if matrix.is_file():
                    out.append(check_file(matrix, full=True, dtype=np.float16))
                out += check_partial(matrix)
                for derived in sorted(matrix.parent.glob(f"{matrix.stem}.*.faiss")) + \
                        sorted(matrix.parent.glob(f"{matrix.stem}.f32.npy")):
                    out.append(Verdict(derived, UNVERIFIED, "no checksum record (built from "
                                                            "the matrix; delete it to have it "
                                                            "built again)"))
                rows = _describe_list(matrix)["rows"]
                for kept in sorted(matrix.parent.glob(f"{matrix.stem}.covered-by-*.safetensors")):
                    fits = rows is not None and load_coverage(kept, None, rows) is not None
                    out.append(Verdict(kept, OK, "") if fits else Verdict(
                        kept, DAMAGED, "not what the packed index holds of this list "
                                       "(worked out again at the next load)"))
            for part in sorted(folder.glob("*.parts/*.npy")):
                if ".tmp" not in part.name:
                    out.append(check_file(part, full=True, dtype=np.float16))
    from e2e_linker.compiled_kb.store import verify_compiled  # the KB's arrays: imported late

    out += verify_compiled(root)
    return [_verdict(root, v) for v in out]
