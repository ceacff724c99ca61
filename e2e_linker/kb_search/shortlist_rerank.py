"""The one shortlist re-rank: an approximate index proposes rows, their exact products decide.

Both linkers search a KB through a faiss shortlist when the full matrix is not worth (or not
yet) holding: ``linker annotate``'s HNSW / IVF-PQ / packed entity index
(:class:`e2e_linker.kb_search.backends.FaissShortlistSearch`) and the normalizer's packed
ontology index (:class:`e2e_linker.kb_search.label_index.ShortlistIndex`). Scores are true
inner products, so only the shortlist's recall is approximate; the tie rule and the type mask
are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from e2e_linker.kb_search.top_k import check_ties


def candidate_rows(shortlisted: np.ndarray, ties: str) -> np.ndarray:
    """One query's shortlisted rows, each once, in the order the tie rule prefers them:
    descending for ``"higher"``, ascending for ``"lower"``.

    Why the order matters twice: a stable sort by score then keeps tied rows in this order,
    and the products are computed over the rows in this order (a matrix-vector product over
    rows in another order may differ in the last bits)."""
    rows = np.unique(shortlisted[shortlisted >= 0])
    return rows[::-1] if ties == "higher" else rows


def rerank_shortlist(queries: np.ndarray, index, rows_of: Callable[[np.ndarray], np.ndarray],
                     k: int, ties: str, shortlist: int, query_block: int, *,
                     ensure: Callable[[np.ndarray], None] | None = None,
                     mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, rows)``, each ``(len(queries), k)``, best first; −inf and −1 past the end.

    ``index`` (faiss) shortlists ``max(k, shortlist)`` rows for ``query_block`` queries at a
    time; ``ensure`` (rows encoded on demand) is handed each block's shortlisted rows first, so
    they are encoded together; ``rows_of(rows)`` gives their vectors. ``mask`` (one bool per
    row) drops the rows a query may not see before they are scored.
    """
    check_ties(ties)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    rows = np.full((len(q), k), -1, dtype=np.int64)
    for start in range(0, len(q), query_block):
        _, short = index.search(q[start:start + query_block], max(k, shortlist))
        if ensure is not None:
            ensure(np.unique(short[short >= 0]))
        for n, shortlisted in enumerate(short, start):
            cand = candidate_rows(shortlisted, ties)
            if mask is not None:
                cand = cand[mask[cand]]
            if not len(cand):
                continue
            exact = np.asarray(rows_of(cand), dtype=np.float32) @ q[n]
            order = np.argsort(-exact, kind="stable")[:k]
            scores[n, :len(order)] = exact[order]
            rows[n, :len(order)] = cand[order]
    return scores, rows
