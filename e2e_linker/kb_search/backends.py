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
recall is approximate (docs/decisions/0032-kb-backends.md: recall@1 against exact search). Under a
memory budget the fp16 file is a disk-resident store, as in DiskANN: the shortlisted rows are
read with ``pread`` (:class:`RowReader`), so what this process holds is the index alone,
whatever the size of the KB. Without a budget the file stays memory-mapped, which is faster
once its pages are resident.

Every kind orders equal scores by the caller's tie rule (``ties``; ``linker annotate``'s entity
index passes ``"higher"``): exact search is the one exact top-k
(:func:`~e2e_linker.kb_search.top_k.exact_top_k` with torch products), the approximate kinds
the one shortlist re-rank (:func:`~e2e_linker.kb_search.shortlist_rerank.rerank_shortlist`),
which the normalizer's label index runs too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    check_file,
    discard_damaged,
    record_path,
    seal,
)
from e2e_linker.kb_search.shortlist_rerank import rerank_shortlist
from e2e_linker.kb_search.top_k import TorchProducts, check_ties, exact_top_k

SEARCH_KINDS = ("auto", "exact", "hnsw", "ivfpq", "packed")

#: Above this many names ``auto`` leaves exact search for HNSW: on the bc5cdr KB HNSW links an
#: order of magnitude faster than exact search (after a one-time build, cached on disk) for a
#: strict F1 within noise and nearly every span given the same concept
#: (docs/decisions/0032-kb-backends.md). Below a few
#: hundred thousand names exact search is cheap enough and loses nothing.
EXACT_MAX_NAMES = 200_000


@dataclass
class SearchParams:
    """Build and search knobs of the approximate indexes (defaults tuned on 1M synthetic concepts: docs/decisions/0032-kb-backends.md)."""

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
    HNSW (much faster linking at the bc5cdr KB's size for a strict F1 within noise:
    docs/decisions/0032-kb-backends.md), then IVF-PQ, the
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

    def describe(self) -> str:
        return self.kind


def _sharing_machine() -> bool:
    """Whether other processes of a multi-process run work on this machine (launchers set
    LOCAL_WORLD_SIZE; see e2e_linker.jobs.distributed)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1) > 1


def read_checked_index(path: Path):
    """The faiss index in ``path`` when its integrity record agrees (or it has none yet: an
    index written before records existed is sealed now); None after discarding a damaged or
    unreadable file, so that the caller rebuilds it."""
    import faiss

    verdict = check_file(path, npy=False)
    if verdict.state == DAMAGED:
        discard_damaged(path, verdict.why, "discarded; the index is built again",
                        also=[record_path(path)])
        return None
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:  # faiss's own check of a file cut short or garbled
        discard_damaged(path, f"faiss cannot read it: {str(exc).splitlines()[0]}",
                        "discarded; the index is built again", also=[record_path(path)])
        return None
    if verdict.state != OK:
        seal(path, npy=False)
    return index


def fp32_twin(vectors: np.memmap, block_rows: int = 262_144) -> np.ndarray:
    """The fp32 copy of a memory-mapped fp16 matrix, written once beside its file and mapped.

    Why: processes sharing a machine would each hold their own fp32 copy of the KB matrix
    (4·d bytes a name, 1.1 GB for the BC5CDR KB); mapping one file shares it through the page
    cache. Copy-on-write mapping, so torch accepts it as a writable array (it is never written).
    """
    source = Path(vectors.filename)
    twin = source.with_name(f"{source.stem}.f32.npy")
    if twin.is_file():
        verdict = check_file(twin, shape=vectors.shape, dtype=np.float32)
        if verdict.state == DAMAGED:
            discard_damaged(twin, verdict.why, "discarded; it is copied again",
                            also=[record_path(twin)])
        elif verdict.state != OK:
            seal(twin)
    if not twin.is_file():
        tmp = twin.with_name(f".{twin.stem}.{os.getpid()}.tmp.npy")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=vectors.shape)
        for start in range(0, len(vectors), block_rows):
            out[start:start + block_rows] = vectors[start:start + block_rows]
        out.flush()
        del out
        os.replace(tmp, twin)
        seal(twin)
    return np.load(twin, mmap_mode="c")


class ExactSearch(VectorSearch):
    """Blocked fp32 matrix products in torch; the vectors are held once, as fp32.

    The search is :func:`~e2e_linker.kb_search.top_k.exact_top_k` with
    :class:`~e2e_linker.kb_search.top_k.TorchProducts` and the caller's tie rule ``ties``
    (``linker annotate``'s entity index: ``"higher"``).

    With several processes on the machine and memory-mapped vectors, that fp32 matrix is a
    file mapped by all of them (:func:`fp32_twin`; the process that builds the index first
    writes it), not a copy per process; the products, hence the results, are the same.

    ``disk_resident`` (a memory-mapped matrix under a memory budget) holds no matrix at all:
    every search streams the fp16 file through a ``stream_rows`` buffer with ``pread``
    (:class:`RowReader`), so memory stays at the buffer whatever the KB's size and recall
    is exact, at the price of reading the whole file once per batch of queries.
    """

    kind = "exact"
    stream_rows = 32_768  # 24 MB of fp16 rows (d=384) read per block when disk-resident

    def __init__(self, vectors: np.ndarray, block_rows: int = 262_144,
                 shared: bool | None = None, disk_resident: bool = False,
                 ties: str = "higher"):
        check_ties(ties)
        self.ties = ties
        self.n = len(vectors)
        self.reader = RowReader(vectors) if disk_resident and _is_file_backed(vectors) else None
        if self.reader is not None:
            self.matrix = None
            self.block_rows = min(block_rows, self.stream_rows)
            return
        if shared is None:
            shared = (isinstance(vectors, np.memmap) and vectors.filename is not None
                      and _sharing_machine())
        self.matrix = torch.from_numpy(fp32_twin(vectors) if shared else np.ascontiguousarray(
            vectors, dtype=np.float32))
        self.block_rows = block_rows

    def _rows(self, start: int) -> torch.Tensor:
        if self.reader is None:
            return self.matrix[start:start + self.block_rows]
        stop = min(self.n, start + self.block_rows)
        return torch.from_numpy(self.reader.read_range(start, stop).astype(np.float32))

    def describe(self) -> str:
        if self.reader is None:
            return self.kind
        return f"exact, streamed from disk ({self.block_rows:,}-row blocks)"

    @torch.inference_mode()
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return exact_top_k(queries, k, self.ties,
                           TorchProducts(self._rows, self.n, self.block_rows))


class FaissShortlistSearch(VectorSearch):
    """A faiss index proposes a shortlist; the fp16 vectors (memory-mapped) re-rank it
    (:func:`~e2e_linker.kb_search.shortlist_rerank.rerank_shortlist`, with the caller's tie
    rule ``ties``; ``linker annotate``'s entity index: ``"higher"``).

    ``vectors`` may also be a matrix whose rows are encoded on demand
    (:class:`e2e_linker.kb_search.partial_matrix.PartialKBMatrix`: anything with ``rows(ids)``
    and ``ensure(ids)``), paired with a ready ``index`` (a packed index shipped with the model):
    then each block's shortlisted names are encoded, once, before the re-rank.

    ``kb_rows`` and ``added`` (a :class:`~e2e_linker.kb_search.packed_index.PackedCoverage`'s)
    pair such an index with a KB that grew a little beyond the names it was packed for: the
    index's ids are translated to the KB's rows by ``kb_rows`` (−1: a name the KB dropped,
    never returned), the ``added`` rows (the names it lacks) are encoded when the search is
    made and searched exactly (:class:`ExactSearch`: the one exact top-k), and their best ``k``
    join each query's shortlist, so the one re-rank scores and orders both (same products,
    same tie rule).

    ``masked`` (a KB that is a part of the index's list:
    :meth:`~e2e_linker.kb_search.packed_index.PackedCoverage.narrowed`) leaves the rows
    ``kb_rows`` marks −1 out inside the faiss search (an ``IDSelectorBitmap``) rather than out
    of each shortlist after it, so that a shortlist is the KB's rows only; the search then
    probes as many lists as it takes to scan as many of the KB's rows as the search over the
    whole list would scan rows (:func:`masked_nprobe`).
    """

    #: queries shortlisted by one faiss call
    query_block = 32

    def __init__(self, kind: str, vectors: np.ndarray, params: SearchParams | None = None,
                 index_path: str | os.PathLike | None = None, disk_resident: bool = False,
                 index=None, ties: str = "higher", kb_rows: np.ndarray | None = None,
                 added: np.ndarray | None = None, masked: bool = False):
        import faiss

        if kind not in ("hnsw", "ivfpq"):
            raise ValueError(f"not an approximate kind: {kind!r}")
        check_ties(ties)
        self.kind = kind
        self.ties = ties
        self.vectors = vectors  # fp16, ideally a read-only memmap
        self.params = params or SearchParams()
        self.on_demand = hasattr(vectors, "ensure")
        path = Path(index_path) if index_path else None
        if index is not None:
            self.index = index
        elif path is not None and path.is_file() and (loaded := read_checked_index(path)):
            self.index = loaded
        else:
            self.index = build_faiss(kind, vectors, self.params)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                faiss.write_index(self.index, str(tmp))
                os.replace(tmp, path)
                seal(path, npy=False)
        held = len(kb_rows) if kb_rows is not None else len(vectors)
        if self.index.ntotal != held:
            raise ValueError(f"{path}: index holds {self.index.ntotal} vectors, not {held}")
        #: under a memory budget the re-rank reads rows with pread (:class:`RowReader`)
        self.reader = RowReader(vectors) if disk_resident and _is_file_backed(vectors) else None
        self.kb_rows = kb_rows
        self.added_rows = added if added is not None else np.zeros(0, np.int64)
        #: the exact search over the names the index lacks (None: it lacks none)
        self.added: ExactSearch | None = None
        if len(self.added_rows):
            self.added = ExactSearch(self.rows(self.added_rows), ties=ties)
        if masked and (kb_rows is None or kind != "ivfpq"):
            raise ValueError("only an IVF-PQ index with kb_rows can be searched masked")
        #: what proposes each shortlist: the faiss index, or the index searched masked
        self.shortlister = self.index
        self._configure()
        if masked:
            self.shortlister = MaskedIVF(self.index, kb_rows >= 0)

    def _configure(self) -> None:
        import faiss

        if self.kind == "hnsw":
            self.index.hnsw.efSearch = max(self.params.hnsw_ef_search, self.params.shortlist)
        else:
            ivf = faiss.extract_index_ivf(self.index)
            ivf.nprobe = self.params.ivf_nprobe
            quantizer = faiss.downcast_index(ivf.quantizer)
            if hasattr(quantizer, "hnsw"):  # efSearch 16 chose the farther lists poorly
                quantizer.hnsw.efSearch = max(quantizer.hnsw.efSearch, self.params.ivf_nprobe)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Shortlist ``query_block`` queries at a time with faiss, then re-rank each exactly
        (with the best ``k`` of the names the index lacks, for a KB that grew)."""
        k = min(k, len(self.vectors))
        extra = None
        if self.added is not None and len(queries):
            _, found = self.added.search(queries, k)
            extra = self.added_rows[found]
        return rerank_shortlist(queries, self.shortlister, self.rows, k, self.ties,
                                self.params.shortlist, self.query_block,
                                ensure=self.vectors.ensure if self.on_demand else None,
                                translate=self.kb_rows, extra=extra)

    @property
    def disk_resident(self) -> bool:
        return self.reader is not None

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The stored (fp16) vectors of ``rows``: encoded on demand, read with pread, or
        from the memory map."""
        if self.on_demand:
            return self.vectors.rows(rows)
        return self.reader.read(rows) if self.reader is not None else self.vectors[rows]

    def describe(self) -> str:
        p = self.params
        if self.kind == "hnsw":
            return f"hnsw (SQ8, M={p.hnsw_m}, efSearch={self.index.hnsw.efSearch}, " \
                   f"re-rank {p.shortlist})"
        import faiss

        ivf = faiss.downcast_index(faiss.extract_index_ivf(self.index))
        masked = isinstance(self.shortlister, MaskedIVF)
        grown = "" if self.kb_rows is None else \
            f", {len(self.added_rows):,} names it lacks searched exactly beside it, " \
            f"{int((self.kb_rows < 0).sum()):,} it holds masked" + \
            (" in the search" if masked else "")
        nprobe = self.shortlister.nprobe if masked else ivf.nprobe
        return f"{'packed ' if self.on_demand else ''}ivfpq (nlist={ivf.nlist}, " \
               f"nprobe={nprobe}, {ivf.pq.M} B/vector, re-rank {p.shortlist}" \
               f"{', re-rank vectors encoded on demand' if self.on_demand else ''}{grown})"


def masked_nprobe(nprobe: int, nlist: int, rows: int, kept: int) -> int:
    """Lists a search of ``kept`` of an IVF index's ``rows`` probes so that it scans about as
    many kept rows as a search of every row probing ``nprobe`` lists scans rows (at most every
    list).

    Why: a list holds the kept rows in about their share of the index, so at the index's own
    ``nprobe`` a search of a tenth of its rows would scan a tenth of the candidates, and a
    small part of the index fewer than a shortlist; probing more lists only adds candidates
    (their products decide), never takes one away."""
    if kept <= 0:
        return min(nprobe, nlist)
    return int(min(nlist, max(nprobe, -(-nprobe * rows // kept))))


class MaskedIVF:
    """An IVF index searched over the rows ``keep`` marks only (a faiss ``IDSelectorBitmap``),
    probing :func:`masked_nprobe` lists: :class:`FaissShortlistSearch`'s shortlister for a KB
    that is a part of its index's list (``masked``)."""

    def __init__(self, index, keep: np.ndarray):
        import faiss

        ivf = faiss.extract_index_ivf(index)
        self.index = index
        self.nprobe = masked_nprobe(ivf.nprobe, ivf.nlist, len(keep), int(keep.sum()))
        # the selector reads the bitmap in place: both are kept alive with this object
        self._bitmap = np.packbits(np.asarray(keep, dtype=bool), bitorder="little")
        self._selector = faiss.IDSelectorBitmap(len(keep), faiss.swig_ptr(self._bitmap))
        self._params = faiss.SearchParametersIVF(sel=self._selector, nprobe=self.nprobe)

    @property
    def ntotal(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss's ``(scores, ids)`` over the kept rows; ids −1 past the kept rows found."""
        return self.index.search(queries, k, params=self._params)


class RowReader:
    """Rows of an ``.npy`` matrix read with ``pread``, never memory-mapped.

    Why: the disk-resident re-rank store must not count towards this process's memory. Read
    through a mapping, even with ``MADV_RANDOM`` and the pages released after every query
    block, each row faulted in the whole page-cache folio around it (~640 KB a row measured on
    the 1.9M-name synthetic KB: 32 queries × 128 rows mapped ~580 MB at once). ``pread`` copies
    only the rows asked for; the file's pages stay in the kernel's shared, reclaimable page
    cache, as DiskANN reads its full-precision vectors.
    """

    def __init__(self, vectors: np.memmap):
        """``vectors``: a whole-file memmap as ``np.load(..., mmap_mode=...)`` returns it (a
        slice of one keeps its parent's offset and would be read at the wrong rows)."""
        self.path = vectors.filename
        self.dtype = vectors.dtype
        self.dim = int(vectors.shape[1])
        self.offset = int(vectors.offset)
        self.row_bytes = self.dim * self.dtype.itemsize
        self.fd = os.open(self.path, os.O_RDONLY)

    def _fill(self, view: memoryview, offset: int) -> None:
        done = 0
        while done < len(view):  # a read may return fewer bytes than asked for
            got = os.preadv(self.fd, [view[done:]], offset + done)
            if got <= 0:
                raise OSError(f"{self.path}: file ends {offset + done} bytes in")
            done += got

    def read_range(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` in one read."""
        out = np.empty((stop - start, self.dim), dtype=self.dtype)
        self._fill(memoryview(out).cast("B"), self.offset + start * self.row_bytes)
        return out

    def read(self, rows: np.ndarray) -> np.ndarray:
        """The given rows, one read each (the re-rank's scattered shortlist)."""
        out = np.empty((len(rows), self.dim), dtype=self.dtype)
        view = memoryview(out).cast("B")
        for n, row in enumerate(rows.tolist()):
            self._fill(view[n * self.row_bytes:(n + 1) * self.row_bytes],
                       self.offset + row * self.row_bytes)
        return out

    def __del__(self) -> None:
        fd = getattr(self, "fd", None)
        if fd is not None:
            os.close(fd)


def _is_file_backed(vectors: np.ndarray) -> bool:
    return isinstance(vectors, np.memmap) and vectors.filename is not None and vectors.ndim == 2


def _sample(vectors: np.ndarray, size: int) -> np.ndarray:
    """A training sample read in row order (cheap on a memmap)."""
    if len(vectors) <= size:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    rows = np.sort(np.random.default_rng(0).choice(len(vectors), size, replace=False))
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


def build_faiss(kind: str, vectors: np.ndarray, params: SearchParams | None = None,
                add_block: int = 65_536, progress: bool = True):
    """Train and fill an approximate faiss index from (possibly memory-mapped) vectors, with a
    progress bar (names/s, time left) over the fill, the long part."""
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
    from e2e_linker.console import progress_bar

    with progress_bar(total=n, desc=f"building the {kind} index", unit="name",
                      enabled=progress) as bar:
        for start in range(0, n, add_block):
            index.add(np.ascontiguousarray(vectors[start:start + add_block], dtype=np.float32))
            bar.update(min(add_block, n - start))
    return index


def make_search(kind: str, vectors: np.ndarray, memory_budget_mb: float | None = None,
                params: SearchParams | None = None,
                index_path: str | os.PathLike | None = None, ties: str = "higher"
                ) -> VectorSearch:
    """The search backend for ``kind`` (``auto``: :func:`choose_kind`), ordering equal scores
    by the caller's tie rule ``ties`` (:data:`~e2e_linker.kb_search.top_k.TIE_RULES`)."""
    if kind not in SEARCH_KINDS:
        raise ValueError(f"index kind must be one of {SEARCH_KINDS}, not {kind!r}")
    if kind == "packed":
        raise ValueError("a packed index comes with its model: see EntityIndex.build")
    if kind == "auto":
        kind = choose_kind(len(vectors), int(vectors.shape[1]) if len(vectors) else 0,
                           memory_budget_mb, params)
    if kind == "exact" or len(vectors) < 10_000:  # tiny KBs: a graph or lists buy nothing
        dim = int(vectors.shape[1]) if len(vectors) else 0
        return ExactSearch(vectors, disk_resident=memory_budget_mb is not None and estimated_mb(
            "exact", len(vectors), dim, params) > memory_budget_mb, ties=ties)
    return FaissShortlistSearch(kind, vectors, params, index_path,
                                disk_resident=memory_budget_mb is not None, ties=ties)
