"""The exact label index: type filtering and ties."""

from __future__ import annotations

import numpy as np

from e2e_linker.kb_search.cache import unit_rows
from e2e_linker.kb_search.label_index import ExactIndex


def test_type_filter_and_ties():
    vectors = unit_rows(np.array([[1.0, 0], [1.0, 0], [0.0, 1]])).astype(np.float16)
    types = {"X": frozenset({"Chemical"}), "Y": frozenset({"Disease"}), "Z": frozenset()}
    index = ExactIndex(vectors, [("X",), ("Y",), ("Z",)], types)
    q = unit_rows(np.array([[1.0, 0.0]]))
    assert [label for label, _ in index.search(q, 3)[0]] == ["X", "Y", "Z"]  # tie: lowest row
    assert [label for label, _ in index.search(q, 3, ["Disease"])[0]] == ["Y", "Z"]
    # an unknown type does not filter
    assert [label for label, _ in index.search(q, 3, ["SpecificDisease"])[0]] == ["X", "Y", "Z"]
