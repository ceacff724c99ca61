"""The name-keyed table of the vector store: texts and their fp16 vectors, read, checked,
adopted, repaired and rewritten.

Why a module of its own: :class:`~e2e_linker.kb_search.cache.VectorStore` has three concerns —
this table (``entity_vectors/<fingerprint>/names.jsonl`` + ``vectors.npy``, shared by both of
its modes), the encode paths that fill it and the unit lists
(:mod:`e2e_linker.kb_search.store_encoding`), and the choice of a list's matrix (full, partial,
packed; :mod:`e2e_linker.kb_search.cache`). :class:`NameTable` is the first, a base class of
the store: the same object, its methods moved here unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import ensure_room, exclusive, try_exclusive, writable
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    UNVERIFIED,
    DamagedFile,
    Verdict,
    adopt,
    atomic_write,
    check_file,
    discard_damaged,
    npy_layout,
    report_damage,
    save_array,
    save_lines,
    seal,
)


class NameTable:
    """The table's reading (every block checked), adoption of files without a record, repair
    under the folder's lock, and rewriting; a base of
    :class:`~e2e_linker.kb_search.cache.VectorStore`, which sets the attributes below."""

    encoder: TextEncoder
    progress: bool
    #: the table's folder and its two files
    names_folder: Path
    names_path: Path
    vectors_path: Path

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
