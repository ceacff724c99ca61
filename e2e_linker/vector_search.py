"""Maximum-inner-product search over KB name vectors: exact, HNSW or IVF-PQ, chosen by size.

Why several: exact search costs ``n·d`` multiply-adds per query, which for the 750k names of the
BC5CDR KB is about as much as encoding the mention's share of its chunk, and for a UMLS-sized KB
(millions of names) neither the time nor the fp32 matrix (4·d bytes a name) is affordable.

* ``exact`` — a blocked fp32 matrix product in torch (several times faster than faiss's
  ``IndexFlatIP`` on the CPUs we measured, same results).
* ``hnsw`` — faiss ``IndexHNSWSQ`` (8-bit scalar-quantised vectors in a graph): fast, ~d+8·M
  bytes a name.
* ``ivfpq`` — faiss ``IndexIVFPQ``: ``pq_bytes`` bytes a name, for KBs that must fit a small
  memory budget.

The approximate kinds return a shortlist that is re-ranked exactly against the fp16 vectors
(memory-mapped from disk), so scores are always true inner products and only the shortlist's
recall is approximate (``eval.kb_scale`` measures recall@1 against exact search). The fp16
file is used as a disk-resident store, as in DiskANN: it is read at random rows and the pages a
search touched are unmapped after it (:func:`release_pages`), so what this process holds in
memory is the index alone, whatever the size of the KB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

SEARCH_KINDS = ("auto", "exact", "hnsw", "ivfpq")

#: Above this many names ``auto`` leaves exact search for HNSW. Measured on the bc5cdr KB
#: (744k names, BC5CDR test, ``python -m eval.speed_accuracy --kinds hnsw``): exact linking took
#: 92.5 s for 500 documents, HNSW 6.3 s (after a one-time 100 s build, cached on disk), with
#: strict F1 0.7557 vs 0.7550 and 99.3 % of spans given the same concept. Below a few hundred
#: thousand names exact search is cheap enough and loses nothing.
EXACT_MAX_NAMES = 200_000


@dataclass
class SearchParams:
    """Build and search knobs of the approximate indexes (defaults tuned in eval.kb_scale)."""

    hnsw_m: int = 32
    hnsw_ef_construction: int = 40
    hnsw_ef_search: int = 256
    ivf_nlist: int | None = None  # None: 4·√n, rounded to a power of two
    ivf_nprobe: int = 64
    pq_bytes: int = 96  # sub-quantizers of 8 bits; must divide the dimension
    train_size: int = 200_000
    shortlist: int = 128  # candidates re-ranked exactly per query


def estimated_mb(kind: str, n: int, dim: int, params: SearchParams | None = None) -> float:
    """Resident memory of an index kind for ``n`` vectors of ``dim`` (codes + graph/lists)."""
    p = params or SearchParams()
    if kind == "exact":
        per = 4 * dim
    elif kind == "hnsw":
        per = dim + 4 * 2 * p.hnsw_m * 1.1  # 8-bit codes + level-0 links (+ upper levels)
    elif kind == "ivfpq":
        per = p.pq_bytes + 8  # codes + ids
    else:
        raise ValueError(f"unknown search kind {kind!r}")
    return n * per / 2**20


def choose_kind(n: int, dim: int, memory_budget_mb: float | None = None,
                params: SearchParams | None = None) -> str:
    """The fastest kind whose memory fits ``memory_budget_mb`` (None: no limit).

    Exact search for KBs up to :data:`EXACT_MAX_NAMES` names (no recall loss at all), then
    HNSW (about 15x faster linking at 744k names for -0.06 points strict F1), then IVF-PQ, the
    smallest; IVF-PQ is returned even if it does not fit, as nothing smaller exists.
    """
    candidates = ["hnsw", "ivfpq"]
    if n <= EXACT_MAX_NAMES:
        candidates.insert(0, "exact")
    for kind in candidates:
        if memory_budget_mb is None or estimated_mb(kind, n, dim, params) <= memory_budget_mb:
            return kind
    return "ivfpq"


class VectorSearch:
    """Top-k inner-product search over a fixed ``(n, d)`` matrix of name vectors."""

    kind = "base"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)``, each ``(len(queries), k)``, best first; rows −1 past the end."""
        raise NotImplementedError

    def rows_dot(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact inner products of one query with the given rows (used by the name sieve)."""
        raise NotImplementedError

    def describe(self) -> str:
        return self.kind


def ties_to_higher_rows(scores: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order each query's results by score, equal scores by descending row.

    Why: names shared by several concepts have identical vectors, so exact ties decide which
    concept a mention gets; faiss's flat index (which the shipped model was tuned and scored
    with) returns the higher row first, and results must not change with the backend.
    """
    order = np.lexsort((-rows, -scores), axis=1)
    return np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)


def _topk_merge(scores: torch.Tensor, rows: torch.Tensor, k: int) -> tuple[torch.Tensor,
                                                                           torch.Tensor]:
    best, where = scores.topk(min(k, scores.shape[1]), dim=1)
    return best, rows.gather(1, where)


def _sharing_machine() -> bool:
    """Whether other processes of a multi-process run work on this machine (launchers set
    LOCAL_WORLD_SIZE; see e2e_linker.distributed)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1) > 1


def fp32_twin(vectors: np.memmap, block_rows: int = 262_144) -> np.ndarray:
    """The fp32 copy of a memory-mapped fp16 matrix, written once beside its file and mapped.

    Why: processes sharing a machine would each hold their own fp32 copy of the KB matrix
    (4·d bytes a name, 1.1 GB for the BC5CDR KB); mapping one file shares it through the page
    cache. Copy-on-write mapping, so torch accepts it as a writable array (it is never written).
    """
    source = Path(vectors.filename)
    twin = source.with_name(f"{source.stem}.f32.npy")
    if not twin.is_file():
        tmp = twin.with_name(f".{twin.stem}.{os.getpid()}.tmp.npy")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=vectors.shape)
        for start in range(0, len(vectors), block_rows):
            out[start:start + block_rows] = vectors[start:start + block_rows]
        out.flush()
        del out
        os.replace(tmp, twin)
    return np.load(twin, mmap_mode="c")


class ExactSearch(VectorSearch):
    """Blocked fp32 matrix products in torch; the vectors are held once, as fp32.

    With several processes on the machine and memory-mapped vectors, that fp32 matrix is a
    file mapped by all of them (:func:`fp32_twin`; the process that builds the index first
    writes it), not a copy per process; the products, hence the results, are the same.
    """

    kind = "exact"

    def __init__(self, vectors: np.ndarray, block_rows: int = 262_144,
                 shared: bool | None = None):
        if shared is None:
            shared = (isinstance(vectors, np.memmap) and vectors.filename is not None
                      and _sharing_machine())
        self.matrix = torch.from_numpy(fp32_twin(vectors) if shared else np.ascontiguousarray(
            vectors, dtype=np.float32))
        self.block_rows = block_rows

    @torch.inference_mode()
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.matrix.shape[0]
        q = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))
        k = min(k, n)
        if k == 0 or len(q) == 0:
            return np.zeros((len(q), k), np.float32), np.zeros((len(q), k), np.int64)
        scores = torch.empty((len(q), k))
        rows = torch.empty((len(q), k), dtype=torch.long)
        q_block = max(1, (1 << 24) // max(1, min(n, self.block_rows)))  # ~64 MB of scores
        for qs in range(0, len(q), q_block):
            qb = q[qs:qs + q_block]
            best_s = best_r = None
            for start in range(0, n, self.block_rows):
                block = self.matrix[start:start + self.block_rows]
                s, r = (qb @ block.T).topk(min(k, len(block)), dim=1)
                r += start
                if best_s is not None:
                    s, r = _topk_merge(torch.cat([best_s, s], 1), torch.cat([best_r, r], 1), k)
                best_s, best_r = s, r
            scores[qs:qs + len(qb)] = best_s
            rows[qs:qs + len(qb)] = best_r
        return ties_to_higher_rows(scores.numpy(), rows.numpy())

    def rows_dot(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.matrix.numpy()[rows] @ query.astype(np.float32)


class FaissShortlistSearch(VectorSearch):
    """A faiss index proposes a shortlist; the fp16 vectors (memory-mapped) re-rank it."""

    #: queries shortlisted and re-ranked together before the mapped pages are released
    query_block = 32

    def __init__(self, kind: str, vectors: np.ndarray, params: SearchParams | None = None,
                 index_path: str | os.PathLike | None = None):
        import faiss

        if kind not in ("hnsw", "ivfpq"):
            raise ValueError(f"not an approximate kind: {kind!r}")
        self.kind = kind
        self.vectors = vectors  # fp16, ideally a read-only memmap
        self.params = params or SearchParams()
        path = Path(index_path) if index_path else None
        if path is not None and path.is_file():
            self.index = faiss.read_index(str(path))
        else:
            self.index = build_faiss(kind, vectors, self.params)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                faiss.write_index(self.index, str(tmp))
                os.replace(tmp, path)
        if self.index.ntotal != len(vectors):
            raise ValueError(f"{path}: index holds {self.index.ntotal} vectors, not {len(vectors)}")
        advise_random(vectors)
        self._configure()

    def _configure(self) -> None:
        import faiss

        if self.kind == "hnsw":
            self.index.hnsw.efSearch = max(self.params.hnsw_ef_search, self.params.shortlist)
        else:
            faiss.extract_index_ivf(self.index).nprobe = self.params.ivf_nprobe

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Shortlist and exact re-rank, ``query_block`` queries at a time: the pages of the
        memory-mapped vectors that a block read are released before the next block, so at
        most ``query_block × shortlist`` rows are ever mapped in this process at once."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(self.vectors))
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)
        rows = np.full((len(q), k), -1, dtype=np.int64)
        for start in range(0, len(q), self.query_block):
            block = q[start:start + self.query_block]
            _, short = self.index.search(block, max(k, self.params.shortlist))
            for n, cand in enumerate(short, start):
                cand = np.unique(cand[cand >= 0])[::-1]  # file order (reversed: ties → higher row)
                exact = self.rows_dot(q[n], cand)
                order = np.argsort(-exact, kind="stable")[:k]
                scores[n, :len(order)] = exact[order]
                rows[n, :len(order)] = cand[order]
            release_pages(self.vectors)
        return scores, rows

    def rows_dot(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[rows], dtype=np.float32) @ query.astype(np.float32)

    def describe(self) -> str:
        p = self.params
        if self.kind == "hnsw":
            return f"hnsw (SQ8, M={p.hnsw_m}, efSearch={self.index.hnsw.efSearch}, " \
                   f"re-rank {p.shortlist})"
        import faiss

        ivf = faiss.extract_index_ivf(self.index)
        return f"ivfpq (nlist={ivf.nlist}, nprobe={ivf.nprobe}, {p.pq_bytes} B/vector, " \
               f"re-rank {p.shortlist})"


def _madvise(vectors: np.ndarray, advice_name: str) -> bool:
    import mmap

    handle = getattr(vectors, "_mmap", None)
    advice = getattr(mmap, advice_name, None)
    if handle is None or advice is None:
        return False
    try:
        handle.madvise(advice)
    except (OSError, ValueError):
        return False
    return True


def advise_random(vectors: np.ndarray) -> bool:
    """Tell the kernel a memory-mapped matrix is read at random rows (``MADV_RANDOM``).

    Why: the re-rank reads ``shortlist`` scattered rows per query; with the default
    read-around every fault pulls in ~128 KB around the row, so a few thousand queries make
    much of the file resident although a few percent of it is ever read.
    Returns whether the advice was given (False for in-memory arrays or where unsupported).
    """
    return _madvise(vectors, "MADV_RANDOM")


def release_pages(vectors: np.ndarray) -> bool:
    """Unmap the pages a search touched in a memory-mapped matrix (``MADV_DONTNEED``).

    Why: the fp16 vectors are a disk-resident store for the exact re-rank, as in DiskANN; the
    index in memory is the codes (or graph). Left mapped, the rows read by many queries
    accumulate in this process's RSS. Released, they stay in the kernel's page cache (shared
    and reclaimable), so reading them again is a minor fault, not disk I/O; the file is
    read-only, so nothing is lost.
    """
    return _madvise(vectors, "MADV_DONTNEED")


def _sample(vectors: np.ndarray, size: int) -> np.ndarray:
    """A training sample read in row order (cheap on a memmap)."""
    if len(vectors) <= size:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    rows = np.sort(np.random.default_rng(0).choice(len(vectors), size, replace=False))
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


def build_faiss(kind: str, vectors: np.ndarray, params: SearchParams | None = None,
                add_block: int = 65_536):
    """Train and fill an approximate faiss index from (possibly memory-mapped) vectors."""
    import faiss

    p = params or SearchParams()
    n, dim = vectors.shape
    if kind == "hnsw":
        index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, p.hnsw_m,
                                  faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = p.hnsw_ef_construction
    elif kind == "ivfpq":
        nlist = p.ivf_nlist or int(2 ** round(np.log2(max(16, 4 * np.sqrt(n)))))
        if dim % p.pq_bytes:
            raise ValueError(f"pq_bytes={p.pq_bytes} must divide the dimension {dim}")
        # the coarse quantizer is itself an HNSW graph: assigning millions of vectors to
        # thousands of lists by brute force would dominate the build on a small CPU
        quantizer = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        index = faiss.IndexIVFPQ(quantizer, dim, nlist, p.pq_bytes, 8,
                                 faiss.METRIC_INNER_PRODUCT)
    else:
        raise ValueError(f"not an approximate kind: {kind!r}")
    index.train(_sample(vectors, max(p.train_size, 40 * 256)))
    for start in range(0, n, add_block):
        index.add(np.ascontiguousarray(vectors[start:start + add_block], dtype=np.float32))
    return index


def make_search(kind: str, vectors: np.ndarray, memory_budget_mb: float | None = None,
                params: SearchParams | None = None,
                index_path: str | os.PathLike | None = None) -> VectorSearch:
    """The search backend for ``kind`` (``auto``: :func:`choose_kind`)."""
    if kind not in SEARCH_KINDS:
        raise ValueError(f"index kind must be one of {SEARCH_KINDS}, not {kind!r}")
    if kind == "auto":
        kind = choose_kind(len(vectors), int(vectors.shape[1]) if len(vectors) else 0,
                           memory_budget_mb, params)
    if kind == "exact" or len(vectors) < 10_000:  # tiny KBs: a graph or lists buy nothing
        return ExactSearch(vectors)
    return FaissShortlistSearch(kind, vectors, params, index_path)
