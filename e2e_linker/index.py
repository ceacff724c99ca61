"""The entity index: every KB name encoded once, cached on disk, searched exactly or with faiss.

Why a cache: encoding the ~700k names of the BC5CDR KB takes minutes on a CPU, and the result
only depends on the entity encoder's weights and the KB's content. Vectors are stored as fp16
``.npy`` keyed by the encoder's hash and the name text; each KB's own matrix (its names in its
order) is written once beside them and memory-mapped on load. Search is exact for KBs up to
two million names and approximate (HNSW or IVF-PQ, exactly re-ranked) beyond that or when
``memory_budget_mb`` asks for it: see :mod:`e2e_linker.vector_search`.
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
from e2e_linker.vector_search import SearchParams, choose_kind, make_search


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

    def kb_matrix(self, names: Sequence[str], batch_size: int = 256,
                  progress: bool = True) -> tuple[np.ndarray, Path]:
        """fp16 vectors of ``names`` in order, memory-mapped from a file of their own.

        Why a second file: the name cache is in first-seen order, so a KB's rows are scattered
        in it; gathering them costs a full read and an in-memory copy on every start. The
        per-KB matrix is written once (keyed by a hash of the name list) and then mapped, so a
        large KB costs page cache, not process memory, until rows are touched.
        """
        digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]
        path = self.folder / "kb" / f"{digest}.npy"
        if not path.is_file():
            matrix = self.vectors_for(names, batch_size=batch_size, progress=progress)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, matrix)
            os.replace(tmp, path)
        matrix = np.load(path, mmap_mode="r")
        if len(matrix) != len(names):
            raise ValueError(f"{path}: {len(matrix)} rows for {len(names)} names")
        return matrix, path


class EntityIndex:
    """Names, their concept IDs and types, their vectors, and a search backend over them."""

    def __init__(self, names: Sequence[str], concept_ids: Sequence[str], types: Sequence[str],
                 vectors: np.ndarray, kind: str = "auto", memory_budget_mb: float | None = None,
                 params: SearchParams | None = None,
                 cache_stem: str | os.PathLike | None = None):
        if not (len(names) == len(concept_ids) == len(types) == len(vectors)):
            raise ValueError("names, concept_ids, types and vectors must have the same length")
        self.names = list(names)
        self.concept_ids = list(concept_ids)
        self.types = list(types)
        self.vectors = vectors
        self.dim = int(vectors.shape[1]) if len(vectors) else 0
        self.cache_stem = Path(cache_stem) if cache_stem else None
        self.searcher = make_search(kind, vectors, memory_budget_mb, params,
                                    self._index_file(kind, memory_budget_mb, params))
        self._rows_of: dict[str, list[int]] | None = None

    def _index_file(self, kind: str, memory_budget_mb: float | None,
                    params: SearchParams | None) -> Path | None:
        """Where an approximate index over these vectors is cached (None: not cached)."""
        if self.cache_stem is None:
            return None
        p = params or SearchParams()
        if kind == "auto":
            kind = choose_kind(len(self), self.dim, memory_budget_mb, params)
        tag = (f"ivfpq-{p.ivf_nlist or 'auto'}-{p.pq_bytes}" if kind == "ivfpq"
               else f"hnsw-m{p.hnsw_m}-ef{p.hnsw_ef_construction}")
        return self.cache_stem.with_name(f"{self.cache_stem.name}.{tag}.faiss")

    def use_search(self, kind: str, memory_budget_mb: float | None = None,
                   params: SearchParams | None = None) -> None:
        """Switch the search backend over the same vectors (benchmarks compare kinds)."""
        self.searcher = make_search(kind, self.vectors, memory_budget_mb, params,
                                    self._index_file(kind, memory_budget_mb, params))

    def __len__(self) -> int:
        return len(self.names)

    def describe(self) -> str:
        """The search backend in words (for benchmark records)."""
        return self.searcher.describe()

    def rows_of(self, concept_id: str) -> list[int]:
        """Rows of every name of ``concept_id``."""
        if self._rows_of is None:
            table: dict[str, list[int]] = {}
            for row, cid in enumerate(self.concept_ids):
                table.setdefault(cid, []).append(row)
            self._rows_of = table
        return self._rows_of.get(concept_id, [])

    def concept_scores(self, query: np.ndarray,
                       concept_ids: Sequence[str]) -> list[tuple[float, int] | None]:
        """Best inner product of ``query`` with any name of each concept, and that name's row
        (the highest row among equal scores); None for a concept without names.

        Why: when the name sieve has already narrowed a mention to a few concepts, these
        scores are all the dense side must supply, at the cost of a handful of dot products
        instead of a search of the whole KB.
        """
        out: list[tuple[float, int] | None] = []
        for cid in concept_ids:
            rows = np.asarray(self.rows_of(cid), dtype=np.int64)
            if not len(rows):
                out.append(None)
                continue
            scores = self.searcher.rows_dot(query, rows)
            best = scores.max()
            out.append((float(best), int(rows[scores == best].max())))
        return out

    @classmethod
    def build(cls, kb, encoder: TextEncoder, cache_dir: str | os.PathLike | None | bool = None,
              batch_size: int = 256, progress: bool = True,
              max_names_per_concept: int | None = None, kind: str = "auto",
              memory_budget_mb: float | None = None,
              params: SearchParams | None = None) -> EntityIndex:
        """Encode every name of ``kb`` (reusing cached vectors) and index them.

        ``cache_dir=False`` disables the disk cache (training refreshes: weights change).
        ``max_names_per_concept`` keeps each concept's first names only (a cheaper index for
        training-time hard negatives). ``kind`` and ``memory_budget_mb`` pick the search
        backend (:func:`e2e_linker.vector_search.choose_kind`); an approximate index is built
        once and cached beside the vectors.
        """
        pairs = kb_names(kb, max_names_per_concept)
        names = [n for n, _ in pairs]
        cids = [c for _, c in pairs]
        types = [kb.concepts[c].type or "" for c in cids]
        if cache_dir is False:
            vectors = encoder.encode(names, batch_size=batch_size, dtype=np.float16,
                                     progress="encoding KB names" if progress else False)
            return cls(names, cids, types, vectors, kind, memory_budget_mb, params)
        cache = NameVectorCache(Path(cache_dir or default_cache_dir()), encoder)
        vectors, path = cache.kb_matrix(names, batch_size=batch_size, progress=progress)
        return cls(names, cids, types, vectors, kind, memory_budget_mb, params,
                   cache_stem=path.with_suffix(""))

    def search(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` names by inner product: (scores, name indices), each (n, k)."""
        if len(queries) == 0:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        return self.searcher.search(queries, min(k, len(self)))

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
