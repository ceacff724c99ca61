"""The exact label index: type filtering and ties."""

from __future__ import annotations

import numpy as np

from e2e_linker.kb_search.label_index import ExactIndex
from e2e_linker.kb_search.unit_vectors import unit_rows


def test_type_filter_and_ties():
    vectors = unit_rows(np.array([[1.0, 0], [1.0, 0], [0.0, 1]])).astype(np.float16)
    types = {"X": frozenset({"Chemical"}), "Y": frozenset({"Disease"}), "Z": frozenset()}
    index = ExactIndex(vectors, [("X",), ("Y",), ("Z",)], types)
    q = unit_rows(np.array([[1.0, 0.0]]))
    assert [label for label, _ in index.search(q, 3)[0]] == ["X", "Y", "Z"]  # tie: lowest row
    assert [label for label, _ in index.search(q, 3, ["Disease"])[0]] == ["Y", "Z"]
    # an unknown type does not filter
    assert [label for label, _ in index.search(q, 3, ["SpecificDisease"])[0]] == ["X", "Y", "Z"]


def test_a_shortlist_covering_every_row_answers_as_the_exact_index(tiny_encoder, tmp_path):
    """Same ties (lowest row), same type filter: only the shortlist's reach differs."""
    from e2e_linker.kb_search.backends import SearchParams, build_faiss
    from e2e_linker.kb_search.label_index import ExactIndex, ShortlistIndex
    from e2e_linker.kb_search.partial_matrix import PartialKBMatrix

    rng = np.random.default_rng(0)
    texts = [f"text {i}" for i in range(300)]
    vectors = rng.standard_normal((300, 32)).astype(np.float32)
    vectors[7] = vectors[3]  # a tie: row 3 must win
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)
    labels = [(f"C{i % 120}",) for i in range(300)]
    types = {f"C{i}": frozenset({"Chemical" if i % 2 else "Disease"}) for i in range(120)}
    rows = PartialKBMatrix(tmp_path / "list.npy", texts, tiny_encoder, tmp_path, progress=False)
    np.save(rows.full_path, vectors)  # the "encoded" rows: the test's own vectors
    rows = PartialKBMatrix(tmp_path / "list.npy", texts, tiny_encoder, tmp_path, progress=False)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=4, train_size=300),
                        progress=False)
    short = ShortlistIndex(rows, labels, index, types, shortlist=300, nprobe=4)
    exact = ExactIndex(vectors, labels, types)
    queries = np.asarray(vectors[[3, 10, 200]], dtype=np.float32)
    for query_types in (None, ["Chemical", "Disease", None]):
        got, want = short.search(queries, 5, query_types), exact.search(queries, 5, query_types)
        assert [[label for label, _ in r] for r in got] == [[label for label, _ in r] for r in want]
        assert np.allclose([s for r in got for _, s in r], [s for r in want for _, s in r],
                           atol=1e-6)  # products of other shapes differ in the last bits
    assert short.search(queries[:1], 1)[0][0][0] == labels[3][0]
