"""The one shortlist re-rank: an approximate index proposes rows, their exact products decide.

Both linkers search a KB through a faiss shortlist when the full matrix is not worth (or not
yet) holding: ``linker annotate``'s HNSW / IVF-PQ / packed entity index
(:class:`e2e_linker.kb_search.backends.FaissShortlistSearch`) and the normalizer's packed
ontology index (:class:`e2e_linker.kb_search.label_index.ShortlistIndex`). Scores are true
inner products, so only the shortlist's recall is approximate; the tie rule and the type mask
are the caller's. A packed index serving a KB that grew
(:func:`~e2e_linker.kb_search.packed_index.coverage`) runs the same re-rank: its ids are
translated to the KB's rows, and the best of the names it lacks join each query's shortlist,
so one re-rank merges both with one arithmetic and one tie rule.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from e2e_linker.kb_search.top_k import check_ties

#: queries whose vectors are gathered and scored together: bounds the float32 copies a
#: re-rank holds (the normalizer shortlists 256 rows for 256 queries a block: 100 MB each
#: at once, 13 MB this way)
RERANKED_TOGETHER = 32


def candidate_table(short: np.ndarray, ties: str,
                    mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each query's shortlisted rows (a row of ``short``), each once, without the rows
    ``mask`` drops, in the order the tie rule prefers them: descending for ``"higher"``,
    ascending for ``"lower"``. ``(table, counts)``: each query's rows first in its row of the
    table, −1 after them, and how many it has.

    Why the order matters twice: a stable sort by score then keeps tied rows in this order,
    and the products are computed over the rows in this order (a matrix-vector product over
    rows in another order may differ in the last bits). Why a table: a block's queries are
    re-ranked together (:func:`rerank_shortlist`), one sort for the block."""
    ordered = np.sort(short, axis=1)
    if ties == "higher":
        ordered = ordered[:, ::-1]
    keep = ordered >= 0
    keep[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]  # each row once
    if mask is not None:
        keep &= mask[np.maximum(ordered, 0)]
    # the kept rows first, in their order (a stable sort on "not kept")
    order = np.argsort(~keep, axis=1, kind="stable")
    table = np.where(np.take_along_axis(keep, order, axis=1),
                     np.take_along_axis(ordered, order, axis=1), -1)
    return table, keep.sum(axis=1)


def rerank_shortlist(queries: np.ndarray, index, rows_of: Callable[[np.ndarray], np.ndarray],
                     k: int, ties: str, shortlist: int, query_block: int, *,
                     ensure: Callable[[np.ndarray], None] | None = None,
                     mask: np.ndarray | None = None, translate: np.ndarray | None = None,
                     extra: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, rows)``, each ``(len(queries), k)``, best first; −inf and −1 past the end.

    ``index`` (faiss) shortlists ``max(k, shortlist)`` rows for ``query_block`` queries at a
    time; ``ensure`` (rows encoded on demand) is handed each block's shortlisted rows first, so
    they are encoded together; ``rows_of(rows)`` gives their vectors. ``mask`` (one bool per
    row) drops the rows a query may not see before they are scored.

    ``translate`` (one entry per row of ``index``) gives the caller's row for each id the index
    returns, −1 where the caller has none (never returned); ``extra`` (one row per query, −1
    padded) adds rows of the caller's to each query's shortlist. Both serve a packed index
    whose KB grew: ids of the index are not the KB's rows, and the names it lacks are
    searched exactly and handed in as ``extra``.

    A block's vectors are read and made float32 once, and its queries with as many candidates
    each are scored by one stacked product: each query's products are then the same
    matrix-vector product over the same rows in the same order as one query's alone (a
    product over rows padded to another count may differ in the last bits: docs/results.md,
    "Host time per document"), so the result is the same to the bit as re-ranking query by
    query.
    """
    check_ties(ties)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    rows = np.full((len(q), k), -1, dtype=np.int64)
    for start in range(0, len(q), query_block):
        _, short = index.search(q[start:start + query_block], max(k, shortlist))
        if translate is not None:
            short = np.where(short >= 0, translate[np.maximum(short, 0)], -1)
        if extra is not None:
            short = np.concatenate([short, extra[start:start + len(short)]], axis=1)
        if ensure is not None:
            ensure(np.unique(short[short >= 0]))
        table, counts = candidate_table(short, ties, mask)
        for part in range(0, len(table), RERANKED_TOGETHER):
            first = start + part
            _rerank_part(q[first:first + RERANKED_TOGETHER],
                         table[part:part + RERANKED_TOGETHER],
                         counts[part:part + RERANKED_TOGETHER], rows_of, k,
                         scores[first:first + RERANKED_TOGETHER],
                         rows[first:first + RERANKED_TOGETHER])
    return scores, rows


def _rerank_part(q: np.ndarray, table: np.ndarray, counts: np.ndarray,
                 rows_of: Callable[[np.ndarray], np.ndarray], k: int, scores: np.ndarray,
                 rows: np.ndarray) -> None:
    """Re-rank the queries ``q`` over their :func:`candidate_table` rows, writing into
    ``scores`` and ``rows`` (views of the caller's arrays)."""
    held = np.unique(table[table >= 0])
    if not len(held):
        return
    vectors = np.asarray(rows_of(held), dtype=np.float32)
    at = np.searchsorted(held, np.maximum(table, 0))  # each candidate's row of ``vectors``
    for count in np.unique(counts[counts > 0]).tolist():
        group = np.flatnonzero(counts == count)
        stacked = vectors[at[group, :count]]  # (queries, count, dim)
        exact = np.matmul(stacked, q[group][:, :, None])[:, :, 0]
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        taken = order.shape[1]
        scores[group, :taken] = np.take_along_axis(exact, order, axis=1)
        rows[group, :taken] = np.take_along_axis(table[group, :count], order, axis=1)
