"""The collective model's losses against hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from e2e_linker.training.collective_losses import linking_ce, mention_bce


def _bce(logit: float, target: float) -> float:
    p = 1 / (1 + math.exp(-logit))
    return -(target * math.log(p) + (1 - target) * math.log(1 - p))


def test_mention_bce_sums_valid_spans_and_divides_by_the_gold_count():
    logits = torch.tensor([[2.0, -1.0], [0.5, 3.0]])
    valid = torch.tensor([[True, True], [True, False]])  # the 3.0 span is invalid: ignored
    gold = torch.tensor([[1, 0], [1, 0]])
    expected = (_bce(2.0, 1) + _bce(-1.0, 0) + _bce(0.5, 1)) / 2
    assert float(mention_bce(logits, valid, gold)) == pytest.approx(expected, rel=1e-5)
    # no gold mention: divided by 1, not 0
    none = torch.zeros_like(gold)
    assert float(mention_bce(logits, valid, none)) == pytest.approx(
        _bce(2.0, 0) + _bce(-1.0, 0) + _bce(0.5, 0), rel=1e-5)


def test_linking_ce_pools_several_positive_names():
    mentions = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    candidates = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    positive = torch.tensor([[True, True, False], [False, False, True]])
    s = [[1.0, 0.5, 0.0], [0.0, 1.0, 2.0]]
    first = math.log(sum(math.exp(x) for x in s[0])) - math.log(math.exp(1.0) + math.exp(0.5))
    second = math.log(sum(math.exp(x) for x in s[1])) - 2.0
    assert float(linking_ce(mentions, candidates, positive)) == pytest.approx(
        (first + second) / 2, rel=1e-5)
