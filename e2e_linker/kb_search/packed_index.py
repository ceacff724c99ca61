"""A compact IVF-PQ index of a KB's name vectors, stored as plain arrays so it can ship inside a
model directory.

Why: the first ``linker annotate`` on a new machine would otherwise encode every KB name
(the bc5cdr KB's whole encode: docs/decisions/0031-packed-index.md) before it links anything. A product-quantised index of
those vectors is ~30 MB: it proposes a shortlist for each mention at once, and only the
shortlisted names are then encoded exactly (:mod:`e2e_linker.kb_search.partial_matrix`) and
re-ranked, so scores are true inner products and only the shortlist's recall is approximate.

The file is safetensors holding only numbers (no pickles, no faiss binary): the coarse centroids,
the PQ codebooks, the codes and row ids grouped by inverted list, and a 64-bit hash of each
row's name (:func:`name_hashes`). :func:`read_packed` rebuilds a faiss ``IndexIVFPQ`` from them
that searches exactly as the index that was packed (tested). The header records what the index
is valid for: the encoder fingerprint and the digest of the KB's name list
(:func:`names_digest`).

A KB that grows by a little costs a little: when the name list differs from the packed one
(the user's own drugs added to the model's KB), the row hashes say which names the index holds
(:func:`coverage`). If the KB adds or drops at most :data:`MAX_CHANGE` of the names, the index
keeps serving the names it holds, the names it lacks are encoded and searched exactly beside
it, and the names it holds that the KB no longer has are never returned
(:class:`~e2e_linker.kb_search.backends.FaissShortlistSearch` with a coverage).

A KB that is a part of the packed one costs little too: when it adds at most
:data:`MAX_CHANGE` of its names but drops more of the packed ones (a MEDIC-only KB under the
default model's index: :meth:`PackedCoverage.narrowed`), the index serves it with the rows it
dropped masked inside the faiss search, so that they take no place in a shortlist, and the
rows its re-rank needs are taken from the other lists the same index serves, found by their
names' hashes, before any is encoded (:mod:`e2e_linker.kb_search.shared_rows`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from e2e_linker.kb_search.integrity import atomic_write
from e2e_linker.kb_search.shipped import update_manifest

PACKED_FORMAT = "e2e_linker.ivfpq.v1"

#: The most a KB may differ from a packed index's names and still be served by it: names added
#: (a share of the KB's) and names dropped (a share of the packed index's), each. Why 10 %:
#: the added names are all encoded before the first output and searched exactly for every
#: query, so their cost grows with their number (at 10 % of the BC5CDR KB, about a tenth of the
#: whole encode of docs/decisions/0031-packed-index.md), and every dropped name still takes a place in the
#: IVF-PQ shortlist, so the shortlist that reaches the re-rank shrinks by about that share.
#: Beyond that the KB is another KB: it is encoded whole (and ``linker kb pack`` can ship an
#: index for it). docs/decisions/0031-packed-index.md has the one-concept case.
MAX_CHANGE = 0.10


def names_digest(names: Sequence[str]) -> str:
    """The key of a KB name list: the same digest the name cache files its KB matrices under."""
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]


def name_hashes(names: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per name (blake2b of its UTF-8 text): what a packed index stores to say
    which name each of its rows holds, in 8 bytes a row instead of the text.

    Why 64 bits: a name the KB adds is taken for a packed one only if their hashes collide,
    about one chance in 2**64 / 10**6 per added name for a KB of a million names."""
    return np.fromiter((int.from_bytes(hashlib.blake2b(name.encode("utf-8"),
                                                       digest_size=8).digest(), "little")
                        for name in names), dtype=np.uint64, count=len(names))


@dataclass(frozen=True)
class PackedCoverage:
    """What a packed index holds of a KB's name list.

    ``kb_rows``: for each packed row, the KB row holding the same name, −1 where the KB no longer
    has it; ``added``: the KB rows no packed row holds, ascending; ``added_hashes``: the
    :func:`name_hashes` of their names, in the same order (None: a coverage kept before they
    were recorded), what lets another list of the same index find these rows by name
    (:mod:`e2e_linker.kb_search.shared_rows`). A name that occurs several times (several
    concepts share it) pairs its occurrences in order."""

    kb_rows: np.ndarray
    added: np.ndarray
    added_hashes: np.ndarray | None = None

    @property
    def removed(self) -> int:
        """Packed rows whose name the KB no longer has."""
        return int((self.kb_rows < 0).sum())

    @property
    def kb_size(self) -> int:
        """Names of the KB's list."""
        return len(self.kb_rows) - self.removed + len(self.added)

    def within(self, max_change: float) -> bool:
        """Whether the KB adds at most ``max_change`` of its names and drops at most that share
        of the packed ones (:data:`MAX_CHANGE`)."""
        return (len(self.added) <= max_change * self.kb_size
                and self.removed <= max_change * len(self.kb_rows))

    def narrowed(self, max_change: float) -> bool:
        """Whether the KB is a part of the packed list: it adds at most ``max_change`` of its
        names but drops more than that share of the packed ones (a MEDIC-only KB under the
        default model's index). Such a KB is served with the dropped rows masked inside the
        search; a KB :meth:`within` the change keeps today's search, the dropped rows taken
        out of each shortlist after it is made."""
        return (len(self.added) <= max_change * self.kb_size
                and self.removed > max_change * len(self.kb_rows))


def _occurrences(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order that sorts ``hashes`` stably, the occurrence number of each sorted entry among the
    entries with its hash)."""
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    first = np.ones(len(ordered), bool)
    first[1:] = ordered[1:] != ordered[:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(len(ordered)), 0))
    return order, np.arange(len(ordered)) - starts


def coverage(packed_hashes: np.ndarray, names: Sequence[str]) -> PackedCoverage:
    """Which of ``names`` (a KB's list) a packed index with rows ``packed_hashes`` holds: the
    k-th occurrence of a name in the KB pairs with its k-th occurrence in the index."""
    packed_hashes = np.asarray(packed_hashes, dtype=np.uint64)
    kb_hashes = name_hashes(names)
    p_order, _ = _occurrences(packed_hashes)
    p_sorted = packed_hashes[p_order]
    k_order, k_occurrence = _occurrences(kb_hashes)
    k_sorted = kb_hashes[k_order]
    first = np.searchsorted(p_sorted, k_sorted, side="left")
    count = np.searchsorted(p_sorted, k_sorted, side="right") - first
    held = k_occurrence < count
    kb_rows = np.full(len(packed_hashes), -1, dtype=np.int64)
    kb_rows[p_order[first[held] + k_occurrence[held]]] = k_order[held]
    added = np.sort(k_order[~held]).astype(np.int64)
    return PackedCoverage(kb_rows=kb_rows, added=added, added_hashes=kb_hashes[added])


def save_coverage(path: str | os.PathLike, covered: PackedCoverage) -> None:
    """Write ``covered`` to ``path`` (safetensors, atomically), so that a later load of the same
    packed index with the same name list reads it instead of hashing every name again.

    Why: the default model's KB is its packed index's list plus the names it mined, so every
    load asked which names the index holds and hashed every name to answer: most of what the
    gene model's start-up cost over the Chemical/Disease model's
    (docs/decisions/0028-default-model.md)."""
    from safetensors.numpy import save

    arrays = {"kb_rows": np.ascontiguousarray(covered.kb_rows, dtype=np.int64),
              "added": np.ascontiguousarray(covered.added, dtype=np.int64)}
    if covered.added_hashes is not None:
        arrays["added_hashes"] = np.ascontiguousarray(covered.added_hashes, dtype=np.uint64)
    data = save(arrays)
    atomic_write(path, lambda handle: handle.write(data))


def load_coverage(path: str | os.PathLike, packed_names: int | None, kb_names: int
                  ) -> PackedCoverage | None:
    """The coverage :func:`save_coverage` wrote to ``path`` for an index of ``packed_names``
    rows (None: any) and a list of ``kb_names`` names; None when there is none or it is not
    one (a file cut short, or whose rows do not pair each name once: computed again, never
    used). A file written before the added names' hashes were kept reads with
    ``added_hashes`` None."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            kb_rows, added = handle.get_tensor("kb_rows"), handle.get_tensor("added")
            added_hashes = handle.get_tensor("added_hashes") \
                if "added_hashes" in handle.keys() else None
    except Exception:  # noqa: BLE001 - absent, cut short or not safetensors: recompute
        return None
    if kb_rows.dtype != np.int64 or added.dtype != np.int64 or kb_rows.ndim != 1 \
            or added.ndim != 1 or packed_names not in (None, len(kb_rows)):
        return None
    if added_hashes is not None and (added_hashes.dtype != np.uint64
                                     or added_hashes.shape != added.shape):
        return None
    held = kb_rows[kb_rows >= 0]
    if len(held) + len(added) != kb_names or (kb_rows < -1).any() \
            or (len(held) and held.max() >= kb_names) \
            or (len(added) and (added.min() < 0 or added.max() >= kb_names)):
        return None
    seen = np.zeros(kb_names, dtype=bool)
    seen[held] = True
    seen[added] = True
    if not seen.all():  # some name paired twice, so another never
        return None
    return PackedCoverage(kb_rows=kb_rows, added=added, added_hashes=added_hashes)


@dataclass(frozen=True)
class PackedInfo:
    """What a packed index was built from (its safetensors header)."""

    fingerprint: str
    names_digest: str
    names: int
    dim: int
    nlist: int
    pq_bytes: int
    kb: str = ""
    #: whether the file holds a hash of each row's name (files packed before they existed do not)
    hashed: bool = False


def _invlists_arrays(index) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes grouped by list, their row ids, list sizes) of a faiss IVF index."""
    import faiss

    invlists = index.invlists
    sizes = np.array([invlists.list_size(i) for i in range(index.nlist)], dtype=np.int64)
    codes = np.empty((int(sizes.sum()), index.code_size), dtype=np.uint8)
    ids = np.empty(int(sizes.sum()), dtype=np.int64)
    at = 0
    for list_no, size in enumerate(sizes.tolist()):
        if not size:
            continue
        codes[at:at + size] = faiss.rev_swig_ptr(invlists.get_codes(list_no),
                                                 size * index.code_size).reshape(size, -1)
        ids[at:at + size] = faiss.rev_swig_ptr(invlists.get_ids(list_no), size)
        at += size
    return codes, ids, sizes


def write_packed(index, path: str | os.PathLike, info: PackedInfo,
                 hashes: np.ndarray | None = None) -> Path:
    """Store a trained and filled faiss ``IndexIVFPQ`` (8-bit codes, inner product) as arrays,
    with ``hashes`` (:func:`name_hashes` of its names, one per row) when given."""
    import faiss

    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    if not isinstance(ivf, faiss.IndexIVFPQ) or ivf.pq.nbits != 8:
        raise ValueError("only IndexIVFPQ with 8-bit codes can be packed")
    if ivf.ntotal != info.names:
        raise ValueError(f"index holds {ivf.ntotal} vectors, info says {info.names}")
    if ivf.ntotal >= 2**31:
        raise ValueError("row ids are stored as int32")
    quantizer = faiss.downcast_index(ivf.quantizer)
    centroids = quantizer.reconstruct_n(0, ivf.nlist)
    codebooks = faiss.vector_to_array(ivf.pq.centroids).reshape(ivf.pq.M, ivf.pq.ksub,
                                                                 ivf.pq.dsub)
    codes, ids, sizes = _invlists_arrays(ivf)
    arrays = {"coarse_centroids": centroids.astype(np.float32),
              "pq_codebooks": codebooks.astype(np.float32),
              "codes": codes, "row_ids": ids.astype(np.int32),
              "list_sizes": sizes.astype(np.int32)}
    return _save(arrays, hashes, path, info, int(ivf.by_residual))


def _save(arrays: dict[str, np.ndarray], hashes: np.ndarray | None, path: str | os.PathLike,
          info: PackedInfo, by_residual: int) -> Path:
    """Write a packed file atomically, readable by all (a file to ship)."""
    from safetensors.numpy import save_file

    if hashes is not None:
        if len(hashes) != info.names:
            raise ValueError(f"{len(hashes)} name hashes for an index of {info.names} names")
        arrays = {**arrays, "name_hashes": np.asarray(hashes, dtype=np.uint64)}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    save_file(arrays, str(tmp),
              metadata={"format": PACKED_FORMAT, "fingerprint": info.fingerprint,
                        "names_digest": info.names_digest, "names": str(info.names),
                        "dim": str(info.dim), "nlist": str(info.nlist),
                        "pq_bytes": str(info.pq_bytes), "kb": info.kb,
                        "by_residual": str(by_residual)})
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # a file to ship: as readable as any other
    os.replace(tmp, out)
    update_manifest(out)  # a shipped tree's manifest (default_model/SHA256SUMS) follows it
    return out


def add_name_hashes(path: str | os.PathLike, names: Sequence[str]) -> Path:
    """Give a packed file written before name hashes existed the hashes of ``names``, the list
    it was built for (checked against its digest); its index arrays are copied unchanged, so
    it searches as before. How the shipped default model's index got its hashes without
    encoding its KB again."""
    from safetensors import safe_open

    info = read_info(path)
    if info.names_digest != names_digest(names):
        raise ValueError(f"{path} was built for another name list ({info.names:,} names)")
    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        arrays = {key: handle.get_tensor(key) for key in handle.keys() if key != "name_hashes"}
    return _save(arrays, name_hashes(names), path, info, int(meta.get("by_residual", "1")))


def read_name_hashes(path: str | os.PathLike) -> np.ndarray | None:
    """The hash of each row's name (:func:`name_hashes`), None for a file packed without."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        return handle.get_tensor("name_hashes") if "name_hashes" in handle.keys() else None


def built_for(info: PackedInfo, fingerprint: str, texts: Sequence[str], *,
              digest: str | None = None) -> bool:
    """Whether a packed index (its header ``info``) holds the vectors of exactly ``texts``
    under the encoder ``fingerprint``: only then may its shortlists stand for a full search.
    ``digest``: :func:`names_digest` of ``texts`` when the caller has it."""
    return info.fingerprint == fingerprint and \
        info.names_digest == (digest or names_digest(texts))


def pack_vectors(vectors: np.ndarray, texts: Sequence[str], fingerprint: str, kb: str,
                 target: str | os.PathLike, pq_bytes: int = 16, nlist: int | None = None,
                 progress: bool = True) -> Path:
    """Build an IVF-PQ index over ``vectors`` (one row per text of ``texts``, under the encoder
    ``fingerprint``) and store it packed at ``target``: what ``linker kb pack`` writes, for a
    collective model's KB names and a normalizer's ontology texts alike."""
    from e2e_linker.kb_search.backends import SearchParams, build_faiss

    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=pq_bytes, ivf_nlist=nlist),
                        progress=progress)
    return write_packed(index, target, PackedInfo(
        fingerprint=fingerprint, names_digest=names_digest(texts), names=len(texts),
        dim=int(vectors.shape[1]), nlist=int(index.nlist), pq_bytes=pq_bytes, kb=kb),
        name_hashes(texts))


def read_info(path: str | os.PathLike) -> PackedInfo:
    """The header of a packed index, without reading its arrays."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        hashed = "name_hashes" in handle.keys()
    if meta.get("format") != PACKED_FORMAT:
        raise ValueError(f"{path}: not a packed KB index ({meta.get('format')!r})")
    return PackedInfo(fingerprint=meta["fingerprint"], names_digest=meta["names_digest"],
                      names=int(meta["names"]), dim=int(meta["dim"]), nlist=int(meta["nlist"]),
                      pq_bytes=int(meta["pq_bytes"]), kb=meta.get("kb", ""), hashed=hashed)


def read_packed(path: str | os.PathLike):
    """A faiss ``IndexIVFPQ`` rebuilt from a packed file (flat coarse quantizer)."""
    import faiss
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        arrays = {key: handle.get_tensor(key) for key in handle.keys() if key != "name_hashes"}
    centroids = arrays["coarse_centroids"]
    nlist, dim = centroids.shape
    m, ksub, dsub = arrays["pq_codebooks"].shape
    if ksub != 256 or m * dsub != dim:
        raise ValueError(f"{path}: codebooks {arrays['pq_codebooks'].shape} do not fit d={dim}")
    quantizer = faiss.IndexFlatIP(dim)
    quantizer.add(np.ascontiguousarray(centroids))
    index = faiss.IndexIVFPQ(quantizer, dim, nlist, m, 8, faiss.METRIC_INNER_PRODUCT)
    index.own_fields = True
    quantizer.this.disown()
    faiss.copy_array_to_vector(np.ascontiguousarray(arrays["pq_codebooks"]).ravel(),
                               index.pq.centroids)
    index.by_residual = bool(int(meta.get("by_residual", "1")))
    index.is_trained = True
    index.precompute_table()
    codes, ids, sizes = arrays["codes"], arrays["row_ids"].astype(np.int64), arrays["list_sizes"]
    if len(codes) != len(ids) or int(sizes.sum()) != len(ids) or len(sizes) != nlist:
        raise ValueError(f"{path}: codes, ids and list sizes disagree")
    at = 0
    for list_no, size in enumerate(sizes.tolist()):
        if size:
            index.invlists.add_entries(list_no, size, faiss.swig_ptr(ids[at:at + size]),
                                       faiss.swig_ptr(np.ascontiguousarray(codes[at:at + size])))
            at += size
    index.ntotal = len(ids)
    return index
