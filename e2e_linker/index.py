"""The entity index: every KB name encoded once, cached on disk, searched with faiss.

Why a cache: encoding the ~700k names of the BC5CDR KB takes minutes on a CPU, and the result
only depends on the entity encoder's weights and the KB's content. Vectors are stored as fp16
``.npy`` under a key made of both hashes and memory-mapped on load; the faiss index is built from
them in blocks. Search is exact inner product (``IndexFlatIP``) unless asked otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from e2e_linker.encoder import TextEncoder


def default_cache_dir() -> Path:
    """``$E2E_LINKER_CACHE`` or ``~/.cache/e2e_linker``."""
    return Path(os.environ.get("E2E_LINKER_CACHE", Path.home() / ".cache" / "e2e_linker"))


def encoder_fingerprint(encoder: TextEncoder) -> str:
    """A hash of the encoder's weights, pooling and name length: what the vectors depend on."""
    digest = hashlib.sha256()
    digest.update(f"{encoder.pooling}|{encoder.max_length}".encode())
    for key, value in sorted(encoder.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().to(torch.float16).cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def kb_names(kb, max_names_per_concept: int | None = None) -> list[tuple[str, str]]:
    """``(name, concept_id)`` pairs of a KB, optionally capped per concept (in KB order)."""
    pairs = kb.names()
    if not max_names_per_concept:
        return pairs
    seen: dict[str, int] = {}
    kept = []
    for name, cid in pairs:
        if seen.get(cid, 0) < max_names_per_concept:
            seen[cid] = seen.get(cid, 0) + 1
            kept.append((name, cid))
    return kept


class NameVectorCache:
    """Vectors of name strings for one encoder, on disk, appended to as new names appear.

    Keyed by name text rather than by KB, so merging KBs, adding mined names or switching
    between KB versions only encodes the names not seen before. Encoding is checkpointed every
    ``checkpoint`` names, so an interrupted encode of a large KB resumes where it stopped.
    """

    def __init__(self, root: Path, encoder: TextEncoder, checkpoint: int = 32768):
        self.folder = root / "entity_vectors" / encoder_fingerprint(encoder)
        self.encoder = encoder
        self.checkpoint = checkpoint
        self.names_path = self.folder / "names.jsonl"
        self.vectors_path = self.folder / "vectors.npy"

    def _load(self, attempts: int = 5) -> tuple[list[str], np.ndarray | None]:
        """The cached names and vectors; retried briefly while another process is writing."""
        for attempt in range(attempts):
            if not (self.names_path.is_file() and self.vectors_path.is_file()):
                return [], None
            with self.names_path.open(encoding="utf-8") as handle:
                names = [json.loads(line) for line in handle]
            vectors = np.load(self.vectors_path, mmap_mode="r")
            if len(vectors) == len(names):
                return names, vectors
            time.sleep(0.5 * (attempt + 1))  # the two files are replaced one after the other
        return [], None  # still torn: start over rather than misalign

    def _store(self, names: list[str], vectors: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp_vectors = self.folder / "vectors.tmp.npy"
        tmp_names = self.folder / "names.tmp.jsonl"
        np.save(tmp_vectors, vectors)
        with tmp_names.open("w", encoding="utf-8") as handle:
            for name in names:
                handle.write(json.dumps(name) + "\n")
        os.replace(tmp_vectors, self.vectors_path)
        os.replace(tmp_names, self.names_path)

    def vectors_for(self, names: Sequence[str], batch_size: int = 256,
                    progress: bool = True) -> np.ndarray:
        """fp16 vectors for ``names`` in order, encoding (and caching) only unseen ones."""
        from tqdm.auto import tqdm

        known, stored = self._load()
        row = {n: i for i, n in enumerate(known)}
        missing = sorted({n for n in names if n not in row}, key=len)
        if missing:
            parts = [np.asarray(stored)] if stored is not None else []
            done = list(known)
            bar = tqdm(total=len(missing), desc="encoding KB names", unit="name",
                       disable=not progress)
            for start in range(0, len(missing), self.checkpoint):
                block = missing[start:start + self.checkpoint]
                parts.append(self.encoder.encode(block, batch_size=batch_size, dtype=np.float16))
                done.extend(block)
                self._store(done, np.concatenate(parts))
                bar.update(len(block))
            bar.close()
            known, stored = self._load()
            row = {n: i for i, n in enumerate(known)}
        return np.asarray(stored[[row[n] for n in names]]) if names else np.zeros(
            (0, self.encoder.hidden_size), np.float16)


class EntityIndex:
    """Names, their concept IDs and types, their vectors, and a faiss index over them."""

    def __init__(self, names: Sequence[str], concept_ids: Sequence[str], types: Sequence[str],
                 vectors: np.ndarray):
        import faiss

        if not (len(names) == len(concept_ids) == len(types) == len(vectors)):
            raise ValueError("names, concept_ids, types and vectors must have the same length")
        self.names = list(names)
        self.concept_ids = list(concept_ids)
        self.types = list(types)
        self.vectors = vectors
        self.dim = int(vectors.shape[1]) if len(vectors) else 0
        self.index = faiss.IndexFlatIP(self.dim)
        block = 65536
        for start in range(0, len(vectors), block):
            self.index.add(np.ascontiguousarray(vectors[start:start + block], dtype=np.float32))
        self._type_ids = {t: i for i, t in enumerate(sorted(set(self.types)))}
        self.type_codes = np.array([self._type_ids[t] for t in self.types], dtype=np.int16)

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def build(cls, kb, encoder: TextEncoder, cache_dir: str | os.PathLike | None | bool = None,
              batch_size: int = 256, progress: bool = True,
              max_names_per_concept: int | None = None) -> EntityIndex:
        """Encode every name of ``kb`` (reusing cached vectors) and index them.

        ``cache_dir=False`` disables the disk cache (training refreshes: weights change).
        ``max_names_per_concept`` keeps each concept's first names only (a cheaper index for
        training-time hard negatives).
        """
        pairs = kb_names(kb, max_names_per_concept)
        names = [n for n, _ in pairs]
        cids = [c for _, c in pairs]
        types = [kb.concepts[c].type or "" for c in cids]
        if cache_dir is False:
            vectors = encoder.encode(names, batch_size=batch_size, dtype=np.float16,
                                     progress="encoding KB names" if progress else False)
        else:
            cache = NameVectorCache(Path(cache_dir or default_cache_dir()), encoder)
            vectors = cache.vectors_for(names, batch_size=batch_size, progress=progress)
        return cls(names, cids, types, vectors)

    def search(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` names by inner product: (scores, name indices), each (n, k)."""
        if len(queries) == 0:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        k = min(k, len(self))
        scores, idx = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return scores, idx

    def link(self, queries: np.ndarray, types: Sequence[str | None] | None = None,
             k: int = 64) -> list[list[tuple[str, float]]]:
        """Ranked distinct concepts per query, ``(concept_id, score)``, best first.

        When a query has a type, concepts of that type come first (a name of another type is
        used only if no name of the right type is among the top ``k``).
        """
        scores, idx = self.search(queries, k)
        out: list[list[tuple[str, float]]] = []
        for row in range(len(idx)):
            wanted = types[row] if types is not None else None
            ranked: list[tuple[str, float]] = []
            others: list[tuple[str, float]] = []
            seen: set[str] = set()
            for s, i in zip(scores[row], idx[row], strict=True):
                if i < 0:
                    continue
                cid = self.concept_ids[i]
                if cid in seen:
                    continue
                seen.add(cid)
                target = ranked if (not wanted or self.types[i] == wanted
                                    or wanted in self.types[i].split("|")) else others
                target.append((cid, float(s)))
            out.append(ranked + others)
        return out
