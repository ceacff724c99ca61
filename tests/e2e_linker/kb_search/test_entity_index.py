"""The entity index of ``linker annotate`` on a hand-made index: ties toward the higher row,
the two type policies, concept scores and per-concept name caps."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.kb import KB, Concept
from e2e_linker.kb_search.entity_index import EntityIndex, kb_names


def _index() -> EntityIndex:
    # rows 0 and 2 have the same vector (a name two concepts share); row 1 is a Disease name a
    # little off the query; row 3 is a Disease name in the opposite direction
    names = ["lithium", "lithium toxicity", "lithium carbonate", "mania"]
    concept_ids = ["C1", "D1", "C2", "D2"]
    types = ["Chemical", "Disease", "Chemical", "Disease"]
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [1.0, 0.0], [-1.0, 0.0]], np.float16)
    return EntityIndex(names, concept_ids, types, vectors, kind="exact")


Q = np.array([[1.0, 0.0]], np.float32)


def test_ties_go_to_the_higher_row():
    scores, rows = _index().search(Q, k=4)
    assert rows.tolist() == [[2, 0, 1, 3]]
    assert scores[0].tolist() == pytest.approx([1.0, 1.0, 0.8, -1.0], abs=1e-3)
    assert [cid for cid, _ in _index().link(Q, k=4)[0]] == ["C2", "C1", "D1", "D2"]


def test_rank_last_puts_other_types_after_the_querys_type():
    ranked = _index().link(Q, ["Disease"], k=4)[0]
    assert [cid for cid, _ in ranked] == ["D1", "D2", "C2", "C1"]
    assert ranked[0][1] == pytest.approx(0.8, abs=1e-3)
    chemical = _index().link(Q, ["Chemical"], k=4, type_policy="rank_last")[0]
    assert [cid for cid, _ in chemical] == ["C2", "C1", "D1", "D2"]


def test_filter_drops_other_types():
    assert [cid for cid, _ in _index().link(Q, ["Disease"], k=4, type_policy="filter")[0]] == \
        ["D1", "D2"]
    # a query without a type is not filtered
    assert [cid for cid, _ in _index().link(Q, [None], k=4, type_policy="filter")[0]] == \
        ["C2", "C1", "D1", "D2"]


def test_a_joined_type_matches_each_of_its_parts():
    index = EntityIndex(["x", "y"], ["X", "Y"], ["Chemical|Disease", "Chemical"],
                        np.array([[0.6, 0.8], [1.0, 0.0]], np.float16), kind="exact")
    assert [cid for cid, _ in index.link(Q, ["Disease"], type_policy="filter")[0]] == ["X"]


def test_only_k_names_are_searched_and_a_concept_appears_once():
    index = EntityIndex(["a", "a2", "b"], ["A", "A", "B"], ["T", "T", "T"],
                        np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]], np.float16), kind="exact")
    assert [cid for cid, _ in index.link(Q, k=3)[0]] == ["A", "B"]
    assert [cid for cid, _ in index.link(Q, k=2)[0]] == ["A"]  # both top rows are A's names


def test_bad_policy_and_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="type_policy"):
        _index().link(Q, type_policy="prefer")
    with pytest.raises(ValueError, match="same length"):
        EntityIndex(["a"], ["A", "B"], ["T"], np.zeros((1, 2), np.float16), kind="exact")


def test_concept_scores_best_name_and_highest_row_among_equals():
    index = EntityIndex(["a", "a again", "b"], ["A", "A", "B"], ["T", "T", "T"],
                        np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]], np.float16),
                        kind="exact")
    got = index.concept_scores(Q[0], ["B", "A", "missing"])
    assert got[0][1] == 2 and got[0][0] == pytest.approx(0.6, abs=1e-3)
    assert got[1][1] == 1 and got[1][0] == pytest.approx(1.0, abs=1e-3)
    assert got[2] is None
    assert index.rows_of("A") == [0, 1] and index.rows_of("missing") == []


def test_empty_queries_and_kb_names_cap():
    scores, rows = _index().search(np.zeros((0, 2), np.float32), k=3)
    assert scores.shape == rows.shape == (0, 3)
    kb = KB([Concept("A", "a1", ["a2", "a3"], "T"), Concept("B", "b1", [], "T")])
    assert kb_names(kb) == [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B")]
    assert kb_names(kb, 2) == [("a1", "A"), ("a2", "A"), ("b1", "B")]
