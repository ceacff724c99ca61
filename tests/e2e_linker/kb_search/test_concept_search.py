"""The 14 search modes against a brute-force reference, and the sieve rule."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.concept_search import MODES, ConceptSearcher, parse_mode, sieve
from e2e_linker.kb_search.label_index import LabeledTexts
from e2e_linker.kb_search.unit_vectors import unit_rows


class DictCache:
    """Stands in for a unit VectorStore: vectors looked up by text (injected, no encoder)."""

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table

    def matrix(self, texts, label=""):
        return np.stack([self.table[t] for t in texts]).astype(np.float16) if texts else \
            np.zeros((0, 8), np.float16)


def _random_setup(seed: int = 0):
    rng = np.random.default_rng(seed)
    concepts = [f"C{i}" for i in range(12)]
    o_pairs = [(f"name{i}_{j}", c, "Disease" if i % 2 else "Chemical")
               for i, c in enumerate(concepts) for j in range(1 + i % 3)]
    d_pairs = [(f"mention{i}", concepts[i % 7], "Disease" if (i % 7) % 2 else "Chemical")
               for i in range(10)]
    table = {t: unit_rows(rng.normal(size=(1, 8)))[0] for t, _, _ in o_pairs + d_pairs}
    # one training mention equal to an ontology name (cosine 1 → the sieve keeps D)
    d_pairs.append(("name3_0", "C5", "Disease"))
    return LabeledTexts.from_pairs(o_pairs), LabeledTexts.from_pairs(d_pairs), table


def _reference(source, kind, pools, table, query):
    """Plain-Python search: best label by max text cosine (T) or by centroid cosine (C)."""
    texts = [(t, label, s) for s in ("O", "D") if s in source
             for pool in [pools[s]] for t, labels in zip(pool.texts, pool.labels, strict=True)
             for label in labels]
    if kind == "T":
        best: dict[str, tuple[float, int]] = {}  # on an exact tie, a training text (D) wins
        for t, label, s in texts:
            key = (float(query @ table[t].astype(np.float32)), s == "D")
            best[label] = max(best.get(label, (-9.0, False)), key)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], not kv[1][1], kv[0]))
        return [(label, score) for label, (score, _) in ranked]
    else:
        sums: dict[str, np.ndarray] = {}
        for t, label, _ in texts:
            sums[label] = sums.get(label, 0) + table[t].astype(np.float16).astype(np.float32)
        scores = {label: float(query @ (v / np.linalg.norm(v))) for label, v in sums.items()}
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_matches_a_brute_force_reference(mode):
    ontology, training, table = _random_setup()
    searcher = ConceptSearcher(None, ontology, training, cache=DictCache(table))
    rng = np.random.default_rng(1)
    queries = unit_rows(np.vstack([rng.normal(size=(6, 8)), table["name3_0"][None, :]]))
    got = searcher.search(queries, mode, k=3)
    pools = {"O": ontology, "D": training}
    for q, ranked in zip(queries, got, strict=True):
        expected = None
        for source, kind in parse_mode(mode):
            expected = _reference(source, kind, pools, table, q)
            if expected[0][1] >= 0.95:  # the sieve rule: keep the first confident search
                break
        assert ranked[0][0] == expected[0][0]
        assert ranked[0][1] == pytest.approx(expected[0][1], abs=2e-3)
        scores = [s for _, s in ranked]
        assert all(a >= b - 1e-5 for a, b in zip(scores, scores[1:], strict=False))


def test_sieve_threshold_rule():
    first, second = [("D1", 0.95)], [("O1", 0.99)]
    assert sieve(first, second) == first  # at the threshold: keep the first search
    assert sieve([("D1", 0.9499)], second) == second
    assert sieve([], second) == second
    assert sieve([("D1", 0.9)], second, threshold=0.8) == [("D1", 0.9)]


def test_sieve_mode_on_hand_made_vectors():
    # O: A = {a1 (1,0), a2 (.6,.8)}, B = {b1 (0,1)}; D: mention m of B at (.8,.6)
    table = {"a1": np.array([1.0, 0]), "a2": np.array([0.6, 0.8]), "b1": np.array([0.0, 1]),
             "m": np.array([0.8, 0.6])}
    ontology = LabeledTexts.from_pairs([("a1", "A", ""), ("a2", "A", ""), ("b1", "B", "")])
    training = LabeledTexts.from_pairs([("m", "B", "")])
    searcher = ConceptSearcher(None, ontology, training, cache=DictCache(table))
    queries = unit_rows(np.array([[0.8, 0.6], [1.0, 0.0]]))
    assert [r[0][0] for r in searcher.search(queries, "O-T")] == ["A", "A"]
    assert [r[0][0] for r in searcher.search(queries, "D-T")] == ["B", "B"]
    # D-T is confident (cos 1) for the first query only; the second falls back to O-T
    assert [r[0][0] for r in searcher.search(queries, "D-T+O-T")] == ["B", "A"]
    # OD-T: both pools at once, the best text wins
    assert [r[0][0] for r in searcher.search(queries, "OD-T")] == ["B", "A"]


def test_empty_training_pool_falls_through():
    ontology, _, table = _random_setup()
    searcher = ConceptSearcher(None, ontology, None, cache=DictCache(table))
    q = unit_rows(table["name4_0"][None, :])
    assert searcher.search(q, "D-T")[0] == []
    assert searcher.search(q, "D-C+O-T")[0][0][0] == "C4"
    assert searcher.search(q, "OD-C")[0][0][0] == searcher.search(q, "O-C")[0][0][0]
