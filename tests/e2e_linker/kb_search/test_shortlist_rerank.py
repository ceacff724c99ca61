"""The one shortlist re-rank: exact scores over a shortlist, the caller's tie rule and mask."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.shortlist_rerank import candidate_table, rerank_shortlist

# rows 2, 5 and 7 hold the same vector; the query is that vector
VECTORS = np.array([[0.6, 0.8], [0.0, 1.0], [1.0, 0.0], [0.8, 0.6], [-1.0, 0.0], [1.0, 0.0],
                    [0.0, -1.0], [1.0, 0.0]], np.float16)


class FixedShortlist:
    """A stand-in for a faiss index: the same shortlist (with a repeat and a −1) per query."""

    def __init__(self):
        self.calls: list[int] = []

    def search(self, queries, k):
        self.calls.append(len(queries))
        short = np.array([7, 2, 3, -1, 5, 2, 4, 0], np.int64)
        return None, np.tile(short, (len(queries), 1))


def _rerank(ties, k=4, mask=None, query_block=32, ensured=None, queries=1):
    query = np.tile(np.array([[1.0, 0.0]], np.float32), (queries, 1))
    return rerank_shortlist(query, FixedShortlist(), lambda rows: VECTORS[rows], k, ties,
                            shortlist=8, query_block=query_block, mask=mask,
                            ensure=None if ensured is None else ensured.append)


def test_annotates_rule_takes_the_higher_row_and_the_normalizers_the_lowest():
    scores, rows = _rerank("higher")
    assert rows.tolist() == [[7, 5, 2, 3]] and scores[0, :3].tolist() == [1.0, 1.0, 1.0]
    assert _rerank("lower")[1].tolist() == [[2, 5, 7, 3]]


def test_a_mask_drops_rows_before_scoring_and_the_rest_is_padded():
    mask = np.ones(len(VECTORS), bool)
    mask[[5, 3]] = False
    scores, rows = _rerank("lower", k=8, mask=mask)
    assert rows.tolist() == [[2, 7, 0, 4, -1, -1, -1, -1]]
    assert np.isneginf(scores[0, 4:]).all()


def test_each_block_of_queries_is_shortlisted_and_ensured_once():
    ensured: list[np.ndarray] = []
    index = FixedShortlist()
    rerank_shortlist(np.ones((5, 2), np.float32), index, lambda rows: VECTORS[rows], 3,
                     "higher", shortlist=8, query_block=2, ensure=ensured.append)
    assert index.calls == [2, 2, 1]
    assert [e.tolist() for e in ensured] == [[0, 2, 3, 4, 5, 7]] * 3


def test_candidates_come_once_each_in_the_rules_order():
    short = np.array([[4, -1, 2, 4, 9], [-1, -1, 3, 3, 3]])
    table, counts = candidate_table(short, "higher")
    assert table.tolist() == [[9, 4, 2, -1, -1], [3, -1, -1, -1, -1]] and counts.tolist() == [3, 1]
    table, counts = candidate_table(short, "lower")
    assert table.tolist() == [[2, 4, 9, -1, -1], [3, -1, -1, -1, -1]]
    mask = np.ones(10, bool)
    mask[4] = False
    table, counts = candidate_table(short, "lower", mask)
    assert table.tolist() == [[2, 9, -1, -1, -1], [3, -1, -1, -1, -1]] and counts.tolist() == [2, 1]


def _one_query_at_a_time(q, short, vectors, k, ties, mask):
    """The re-rank's definition, query by query: the rows once each in the tie rule's order,
    their exact products, a stable sort by score."""
    scores = np.full((len(q), k), -np.inf, np.float32)
    rows = np.full((len(q), k), -1, np.int64)
    for n, shortlisted in enumerate(short):
        cand = np.unique(shortlisted[shortlisted >= 0])
        cand = cand[::-1] if ties == "higher" else cand
        if mask is not None:
            cand = cand[mask[cand]]
        if not len(cand):
            continue
        exact = np.asarray(vectors[cand], dtype=np.float32) @ q[n]
        order = np.argsort(-exact, kind="stable")[:k]
        scores[n, :len(order)] = exact[order]
        rows[n, :len(order)] = cand[order]
    return scores, rows


class RandomShortlist:
    """A stand-in for a faiss index: a fixed random shortlist per query, with repeats, −1s and
    queries that get fewer rows than others."""

    def __init__(self, short):
        self.short = short
        self.at = 0

    def search(self, queries, k):
        block = self.short[self.at:self.at + len(queries)]
        self.at += len(queries)
        return None, block


@pytest.mark.parametrize("ties", ["higher", "lower"])
@pytest.mark.parametrize("query_block", [16, 64])  # 64: a block re-ranked in two parts
def test_a_block_reranked_together_is_the_same_to_the_bit_as_query_by_query(ties, query_block):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 48)).astype(np.float16)
    vectors[10] = vectors[11]  # a tie
    q = rng.standard_normal((70, 48)).astype(np.float32)
    short = rng.integers(-1, 300, size=(70, 24))
    short[::5, 12:] = -1  # fewer rows for some queries
    short[3] = -1  # none for one
    short[::7, :4] = [10, 11, 10, 11]
    mask = rng.random(300) > 0.2
    for m in (None, mask):
        want = _one_query_at_a_time(q, short, vectors, 9, ties, m)
        got = rerank_shortlist(q, RandomShortlist(short), lambda rows: vectors[rows], 9, ties,
                               shortlist=24, query_block=query_block, mask=m)
        assert np.array_equal(got[1], want[1])
        assert got[0].tobytes() == want[0].tobytes()
    with pytest.raises(ValueError, match="tie rule"):
        _rerank("first")


def test_ids_of_an_index_over_another_list_are_translated_and_extra_rows_join():
    """A packed index serving a KB that grew: its ids become the KB's rows (−1: a name the KB
    dropped, never returned), and the rows it lacks join the shortlist, ordered by the same
    scores and tie rule as the rest."""
    # the index's 8 ids → KB rows; id 3 names a dropped name, KB row 1 is an added one
    translate = np.array([0, 6, 2, -1, 4, 5, 3, 7], np.int64)
    kb = VECTORS[[0, 1, 2, 3, 4, 5, 6, 7]].copy()
    kb[1] = [1.0, 0.0]  # the added name ties with rows 2, 5 and 7
    extra = np.array([[1, -1]], np.int64)
    query = np.array([[1.0, 0.0]], np.float32)
    ensured: list[np.ndarray] = []
    scores, rows = rerank_shortlist(query, FixedShortlist(), lambda r: kb[r], 8, "higher",
                                    shortlist=8, query_block=32, ensure=ensured.append,
                                    translate=translate, extra=extra)
    # shortlisted ids 7 2 3 5 2 4 0 → rows 7 2 −1 5 2 4 0, with row 1 added
    assert rows.tolist() == [[7, 5, 2, 1, 0, 4, -1, -1]]
    assert scores[0, :4].tolist() == [1.0, 1.0, 1.0, 1.0] and np.isneginf(scores[0, 6:]).all()
    assert [e.tolist() for e in ensured] == [[0, 1, 2, 4, 5, 7]]
