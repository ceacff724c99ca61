"""A compact IVF-PQ index of a KB's name vectors, stored as plain arrays so it can ship inside a
model directory.

Why: the first ``linker annotate`` on a new machine would otherwise encode every KB name
(the bc5cdr KB's whole encode: eval/results/kb_build) before it links anything. A product-quantised index of
those vectors is ~30 MB: it proposes a shortlist for each mention at once, and only the
shortlisted names are then encoded exactly (:mod:`e2e_linker.kb_search.partial_matrix`) and
re-ranked, so scores are true inner products and only the shortlist's recall is approximate.

The file is safetensors holding only numbers (no pickles, no faiss binary): the coarse centroids,
the PQ codebooks, and the codes and row ids grouped by inverted list. :func:`read_packed`
rebuilds a faiss ``IndexIVFPQ`` from them that searches exactly as the index that was packed
(tested). The header records what the index is valid for: the encoder fingerprint and the
digest of the KB's name list (:func:`names_digest`); a mismatch means "not for this KB".
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PACKED_FORMAT = "e2e_linker.ivfpq.v1"


def names_digest(names: Sequence[str]) -> str:
    """The key of a KB name list: the same digest the name cache files its KB matrices under."""
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]


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


def write_packed(index, path: str | os.PathLike, info: PackedInfo) -> Path:
    """Store a trained and filled faiss ``IndexIVFPQ`` (8-bit codes, inner product) as arrays."""
    import faiss
    from safetensors.numpy import save_file

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
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    save_file({"coarse_centroids": centroids.astype(np.float32),
               "pq_codebooks": codebooks.astype(np.float32),
               "codes": codes, "row_ids": ids.astype(np.int32),
               "list_sizes": sizes.astype(np.int32)}, str(tmp),
              metadata={"format": PACKED_FORMAT, "fingerprint": info.fingerprint,
                        "names_digest": info.names_digest, "names": str(info.names),
                        "dim": str(info.dim), "nlist": str(info.nlist),
                        "pq_bytes": str(info.pq_bytes), "kb": info.kb,
                        "by_residual": str(int(ivf.by_residual))})
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # a file to ship: as readable as any other
    os.replace(tmp, out)
    return out


def built_for(info: PackedInfo, fingerprint: str, texts: Sequence[str]) -> bool:
    """Whether a packed index (its header ``info``) holds the vectors of exactly ``texts``
    under the encoder ``fingerprint``: only then may its shortlists stand for a full search."""
    return info.fingerprint == fingerprint and info.names_digest == names_digest(texts)


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
        dim=int(vectors.shape[1]), nlist=int(index.nlist), pq_bytes=pq_bytes, kb=kb))


def read_info(path: str | os.PathLike) -> PackedInfo:
    """The header of a packed index, without reading its arrays."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
    if meta.get("format") != PACKED_FORMAT:
        raise ValueError(f"{path}: not a packed KB index ({meta.get('format')!r})")
    return PackedInfo(fingerprint=meta["fingerprint"], names_digest=meta["names_digest"],
                      names=int(meta["names"]), dim=int(meta["dim"]), nlist=int(meta["nlist"]),
                      pq_bytes=int(meta["pq_bytes"]), kb=meta.get("kb", ""))


def read_packed(path: str | os.PathLike):
    """A faiss ``IndexIVFPQ`` rebuilt from a packed file (flat coarse quantizer)."""
    import faiss
    from safetensors import safe_open
    from safetensors.numpy import load_file

    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
    arrays = load_file(str(path))
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
