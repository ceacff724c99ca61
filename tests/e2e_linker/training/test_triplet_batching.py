"""P×K batches: every anchor has a positive, every text is seen once per epoch."""

from __future__ import annotations

from collections import Counter

import pytest

from e2e_linker.training.triplet_batching import pk_batches


def _labels() -> list[int]:
    # concept sizes 1, 2, 3, 5, 9 and a few more singletons
    sizes = [1, 2, 3, 5, 9, 1, 1, 4]
    return [c for c, n in enumerate(sizes) for _ in range(n)]


@pytest.mark.parametrize("p,k", [(2, 2), (3, 4), (4, 3), (8, 2)])
def test_every_anchor_has_a_positive_and_a_negative(p, k):
    labels = _labels()
    batches = pk_batches(labels, p, k, seed=1)
    for batch in batches:
        counts = Counter(labels[i] for i in batch)
        assert all(counts[labels[i]] >= 2 for i in batch)
        assert len(counts) >= 2 or len(batches) == 1
        assert len(batch) <= p * k + k + 1  # a lone last chunk is folded into the previous batch


def test_every_text_is_visited_once_per_epoch():
    labels = _labels()
    seen = Counter(i for batch in pk_batches(labels, 3, 4, seed=0) for i in batch)
    assert set(seen) == set(range(len(labels)))


def test_deterministic_and_seed_dependent():
    labels = _labels()
    assert pk_batches(labels, 3, 2, seed=5) == pk_batches(labels, 3, 2, seed=5)
    assert pk_batches(labels, 3, 2, seed=5) != pk_batches(labels, 3, 2, seed=6)


def test_singletons_can_be_dropped():
    labels = _labels()
    seen = {i for batch in pk_batches(labels, 3, 2, seed=0, singletons="drop") for i in batch}
    singles = {i for i, c in enumerate(labels) if labels.count(c) == 1}
    assert not seen & singles


def test_k_below_two_is_refused():
    with pytest.raises(ValueError):
        pk_batches([0, 0, 1, 1], 2, 1)
