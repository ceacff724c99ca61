"""The one exact top-k: each caller's tie rule and type mask, passed as parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from e2e_linker.kb_search.entity_index import EntityIndex
from e2e_linker.kb_search.label_index import ExactIndex
from e2e_linker.kb_search.top_k import NumpyProducts, TorchProducts, exact_top_k

# rows 1, 4 and 6 hold the same vector (a name three concepts share); the query is that vector
VECTORS = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, 1.0], [0.8, 0.6], [1.0, 0.0], [-1.0, 0.0],
                    [1.0, 0.0]], np.float16)
QUERY = np.array([[1.0, 0.0]], np.float32)


def _torch(block_rows: int) -> TorchProducts:
    matrix = torch.from_numpy(VECTORS.astype(np.float32))
    return TorchProducts(lambda start: matrix[start:start + block_rows], len(VECTORS),
                         block_rows)


def _numpy(block_rows: int) -> NumpyProducts:
    return NumpyProducts(VECTORS, block_rows, query_block=1024)


@pytest.mark.parametrize("block_rows", [2, 3, 100])  # the tied rows in one block or several
def test_annotates_rule_takes_the_higher_row_and_the_normalizers_the_lowest(block_rows):
    scores, rows = exact_top_k(QUERY, 4, "higher", _torch(block_rows))
    assert rows.tolist() == [[6, 4, 1, 3]]  # annotate: TorchProducts, ties to the higher row
    assert scores[0, :3].tolist() == [1.0, 1.0, 1.0]
    scores, rows = exact_top_k(QUERY, 4, "lower", _numpy(block_rows))
    assert rows.tolist() == [[1, 4, 6, 3]]  # normalize: NumpyProducts, ties to the lowest row
    # the rule is the parameter, not the arithmetic
    assert exact_top_k(QUERY, 4, "lower", _torch(block_rows))[1].tolist() == [[1, 4, 6, 3]]
    assert exact_top_k(QUERY, 4, "higher", _numpy(block_rows))[1].tolist() == [[6, 4, 1, 3]]


def test_each_index_passes_its_own_rule_to_the_kernel():
    entity = EntityIndex([f"n{i}" for i in range(7)], [f"C{i}" for i in range(7)], ["T"] * 7,
                         VECTORS, kind="exact")
    assert entity.searcher.ties == "higher"
    assert entity.search(QUERY, 3)[1].tolist() == [[6, 4, 1]]
    labels = ExactIndex(VECTORS, [(f"C{i}",) for i in range(7)])
    assert labels.ties == "lower"
    assert [label for label, _ in labels.search(QUERY, 3)[0]] == ["C1", "C4", "C6"]


@pytest.mark.parametrize("make", [_torch, _numpy])
def test_a_mask_hides_rows_as_minus_infinity(make):
    mask = np.ones(len(VECTORS), bool)
    mask[[4, 6]] = False
    scores, rows = exact_top_k(QUERY, 7, "higher", make(3), mask)
    assert rows[0, :5].tolist() == [1, 3, 0, 2, 5]
    assert set(rows[0, 5:].tolist()) == {4, 6} and np.isneginf(scores[0, 5:]).all()


@pytest.mark.parametrize("make", [_torch, _numpy])
def test_empty_queries_k_zero_and_a_bad_rule(make):
    scores, rows = exact_top_k(np.zeros((0, 2), np.float32), 3, "lower", make(3))
    assert scores.shape == rows.shape == (0, 3)
    assert exact_top_k(QUERY, 0, "lower", make(3))[1].shape == (1, 0)
    assert exact_top_k(QUERY, 50, "lower", make(3))[1].shape == (1, len(VECTORS))
    with pytest.raises(ValueError, match="tie rule"):
        exact_top_k(QUERY, 3, "first", make(3))


def test_both_arithmetics_find_the_same_rows_on_random_data():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((500, 16)).astype(np.float16)
    queries = rng.standard_normal((20, 16)).astype(np.float32)
    matrix = torch.from_numpy(vectors.astype(np.float32))
    by_torch = exact_top_k(queries, 8, "lower",
                           TorchProducts(lambda s: matrix[s:s + 64], 500, 64))
    by_numpy = exact_top_k(queries, 8, "lower", NumpyProducts(vectors, 64, 7))
    assert (by_torch[1] == by_numpy[1]).all()
    np.testing.assert_allclose(by_torch[0], by_numpy[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_querys_torch_scores_do_not_depend_on_the_queries_beside_it(threads):
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((3000, 384)).astype(np.float16)
    queries = rng.standard_normal((40, 384)).astype(np.float32)
    matrix = torch.from_numpy(vectors.astype(np.float32))
    products = TorchProducts(lambda s: matrix[s:s + 1000], 3000, 1000)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        together = exact_top_k(queries, 5, "higher", products)
        for size in (1, 2, 3, 5, 7, 11):  # fewer rows than a kernel's block, alone
            part = exact_top_k(queries[:size], 5, "higher", products)
            assert np.array_equal(part[0], together[0][:size])  # to the bit
            assert np.array_equal(part[1], together[1][:size])
    finally:
        torch.set_num_threads(before)
