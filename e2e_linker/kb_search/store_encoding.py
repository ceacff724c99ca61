"""The vector store's encode paths: names the table lacks (raw mode), a unit list's texts in
resumable parts, and the seeding of a unit list from the table (same texts, or texts that
differ only in case and tokenize the same).

Why a module of its own: each linker was scored with its own vectors, so each mode keeps its
own encode (module docstring of :mod:`e2e_linker.kb_search.cache`); these paths are the part
of :class:`~e2e_linker.kb_search.cache.VectorStore` that calls the encoder, apart from the
table (:mod:`e2e_linker.kb_search.name_table`) and the choice of a list's matrix
(:mod:`e2e_linker.kb_search.cache`). :class:`StoreEncoding` is a base class of the store: the
same object, its methods moved here unchanged.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from e2e_linker.console import progress_bar, progress_enabled
from e2e_linker.kb_search.cache_folder import ensure_room, exclusive
from e2e_linker.kb_search.encode_estimate import ESTIMATE_SAMPLE, say_estimate
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    UNVERIFIED,
    adopt,
    check_file,
    discard_damaged,
    save_array,
)
from e2e_linker.kb_search.name_table import NameTable
from e2e_linker.kb_search.unit_vectors import encode_unit, unit_rows

#: batches encoded between two updates of the progress bar
PROGRESS_BATCHES = 8


class StoreEncoding(NameTable):
    """Encoding into the table and into unit lists; a base of
    :class:`~e2e_linker.kb_search.cache.VectorStore`, which sets the attributes below (and
    those of :class:`~e2e_linker.kb_search.name_table.NameTable`)."""

    #: the folder of this mode's lists
    folder: Path
    #: a cheaper way to what the caller asked, named before a long encode (None: none)
    alternative: str | None
    batch_size: int
    checkpoint: int
    part_size: int
    seed_min: int

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
        known, stored = self.load(locked=True)  # another process may have added them
        row = {n: i for i, n in enumerate(known)}
        missing = sorted({n for n in names if n not in row}, key=len)
        if missing:
            if progress and progress_enabled() and len(missing) > 2 * ESTIMATE_SAMPLE:
                say_estimate(self.encoder, missing, "names not cached yet",
                             batch_size=batch_size, alternative=self.alternative,
                             then=f" into {self.names_folder}; an interrupted encode resumes "
                                  f"from its last {self.checkpoint:,}-name checkpoint")
            parts = [np.asarray(stored)] if stored is not None else []
            done = list(known)
            bar = progress_bar(total=len(missing), desc="encoding KB names", unit="name",
                               enabled=progress)
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
        dim = self.encoder.hidden_size
        seeded, found = (None, np.zeros(len(texts), bool))
        if len(texts) >= self.seed_min:
            seeded, found = self._seed(texts)
        parts_dir = path.with_suffix(".parts")
        parts_dir.mkdir(parents=True, exist_ok=True)
        todo = [i for i in range(len(texts)) if not found[i]]
        n_parts = (len(todo) + self.part_size - 1) // self.part_size
        if self.progress and progress_enabled():
            pending = [texts[i] for p in range(n_parts)
                       if not (parts_dir / f"{p:05d}.npy").is_file()
                       for i in todo[p * self.part_size:(p + 1) * self.part_size]]
            if len(pending) > 2 * ESTIMATE_SAMPLE:
                say_estimate(self.encoder, pending, "texts not cached yet",
                             batch_size=self.batch_size, alternative=self.alternative,
                             then=f" into {path.parent}; an interrupted encode resumes from "
                                  f"its last {self.part_size:,}-text part")
        bar = progress_bar(total=len(todo), desc=label, unit="text", enabled=self.progress)
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
