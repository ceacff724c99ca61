"""The collective model's losses against hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from e2e_linker.training.collective_losses import (
    all_span_type_logits,
    linking_ce,
    mention_bce,
    mention_loss,
    missed_positive_weights,
    partial_mention_nll,
)


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


def _spans(seed: int = 0, rows: int = 3, length: int = 7, width: int = 4, types: int = 3):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, length, width, generator=g) * 3
    valid = torch.rand(rows, length, width, generator=g) < 0.7
    gold = valid & (torch.rand(rows, length, width, generator=g) < 0.2)
    type_logits = torch.randn(rows, length, width, types, generator=g) * 2
    return logits, valid, gold, type_logits


def test_partial_loss_is_the_standard_bce_when_the_corpus_annotates_every_type():
    logits, valid, gold, type_logits = _spans()
    every = torch.ones(3, 3, dtype=torch.bool)
    bce = float(mention_bce(logits, valid, gold)) * int(gold.sum())
    assert float(partial_mention_nll(logits, valid, gold, type_logits, every)) == \
        pytest.approx(bce, rel=1e-5)
    # through mention_loss, with every row marked partial, or with none (plain BCE)
    rows = torch.ones(3, dtype=torch.bool)
    assert float(mention_loss(logits, valid, gold, rows, type_logits, every)) == \
        pytest.approx(float(mention_bce(logits, valid, gold)), rel=1e-5)
    assert mention_loss(logits, valid, gold) is not None
    assert torch.equal(mention_loss(logits, valid, gold, torch.zeros(3, dtype=torch.bool)),
                       mention_bce(logits, valid, gold))


def test_partial_loss_matches_its_formula_and_mixes_with_full_rows():
    logits, valid, gold, type_logits = _spans(1)
    annotated = torch.tensor([[True, True, True], [False, False, True], [True, False, False]])
    p = torch.sigmoid(logits)
    q = torch.softmax(type_logits, -1)
    q_a = (q * annotated[:, None, None, :]).sum(-1)
    expected = torch.where(gold, -torch.log(p), -torch.log(1 - p * q_a))[valid].sum()
    got = partial_mention_nll(logits, valid, gold, type_logits, annotated)
    assert float(got) == pytest.approx(float(expected), rel=1e-4)
    # rows 1 and 2 partial, row 0 plain BCE: the sum over rows over the batch's gold count
    rows = torch.tensor([False, True, True])
    full = torch.nn.functional.binary_cross_entropy_with_logits(
        logits[0][valid[0]], gold[0][valid[0]].float(), reduction="sum")
    part = partial_mention_nll(logits[1:], valid[1:], gold[1:], type_logits[1:], annotated[1:])
    assert float(mention_loss(logits, valid, gold, rows, type_logits[1:], annotated[1:])) == \
        pytest.approx(float((full + part) / gold.sum()), rel=1e-5)


def test_a_span_typed_as_an_unannotated_type_costs_nothing_in_a_partial_corpus():
    """A confident non-gold span (σ(8)) that the type head calls Chemical: in a gene-only
    corpus it may well be a chemical, so ~no loss; in a corpus annotating every type it is a
    false mention and pays the full BCE."""
    logits = torch.tensor([[[8.0]]])
    valid = torch.ones(1, 1, 1, dtype=torch.bool)
    gold = torch.zeros(1, 1, 1, dtype=torch.bool)
    chemical = torch.tensor([[[[12.0, 0.0, -3.0]]]])  # Chemical, Disease, Gene
    genes_only = torch.tensor([[False, False, True]])
    every = torch.ones(1, 3, dtype=torch.bool)
    assert float(partial_mention_nll(logits, valid, gold, chemical, genes_only)) < 1e-3
    assert float(partial_mention_nll(logits, valid, gold, chemical, every)) == \
        pytest.approx(_bce(8.0, 0), rel=1e-5)
    # typed Gene instead: a gene corpus would have annotated it, so the full loss again
    gene = torch.tensor([[[[-3.0, 0.0, 12.0]]]])
    assert float(partial_mention_nll(logits, valid, gold, gene, genes_only)) == \
        pytest.approx(_bce(8.0, 0), rel=1e-2)


def test_partial_loss_and_its_gradient_stay_finite_at_the_extremes():
    logits = torch.tensor([[[60.0, -60.0, 0.0]]], requires_grad=True)
    valid = torch.ones(1, 1, 3, dtype=torch.bool)
    gold = torch.zeros(1, 1, 3, dtype=torch.bool)
    type_logits = torch.tensor([[[[80.0, -80.0, 0.0]] * 3]], requires_grad=True)
    for annotated in ([True, False, False], [False, True, True], [True, True, True]):
        loss = partial_mention_nll(logits, valid, gold, type_logits, torch.tensor([annotated]))
        logits.grad = type_logits.grad = None
        loss.backward()
        assert torch.isfinite(loss)
        assert torch.isfinite(logits.grad).all() and torch.isfinite(type_logits.grad).all()
    # a certain mention of an annotated type, not annotated: about 60, as BCE says
    with torch.no_grad():
        certain = partial_mention_nll(logits[..., :1], valid[..., :1], gold[..., :1],
                                      type_logits[..., :1, :],
                                      torch.tensor([[True, False, False]]))
    assert float(certain) == pytest.approx(60.0, rel=1e-3)


def test_all_span_type_logits_equal_the_type_head_on_mean_pooled_span_vectors():
    from e2e_linker.collective.span_scorer import span_vectors

    torch.manual_seed(0)
    states = torch.randn(2, 9, 16)
    head = torch.nn.Linear(16, 3)
    got = all_span_type_logits(states, head, max_span_len=4)
    assert got.shape == (2, 9, 4, 3)
    b, i, w = torch.meshgrid(torch.arange(2), torch.arange(6), torch.arange(4), indexing="ij")
    b, i, j = b.reshape(-1), i.reshape(-1), (i + w).reshape(-1)
    expected = head(span_vectors(states, b, i, j))
    assert torch.allclose(got[b, i, j - i], expected, atol=1e-5)


def test_missed_positive_weights_weigh_only_gold_spans_scored_below_the_bar():
    logits = torch.tensor([[-2.0, 2.0], [-2.0, 0.0]])  # σ: 0.12, 0.88 / 0.12, 0.5
    gold = torch.tensor([[True, True], [False, False]])
    weights = missed_positive_weights(logits, gold, below=0.25, weight=3.0)
    assert weights.tolist() == [[3.0, 1.0], [1.0, 1.0]]
    assert not weights.requires_grad


def test_weighted_mention_losses_scale_the_missed_positive_terms_and_nothing_else():
    logits = torch.tensor([[-2.0, 2.0], [0.5, -1.0]])
    valid = torch.ones(2, 2, dtype=torch.bool)
    gold = torch.tensor([[True, True], [False, False]])
    weights = missed_positive_weights(logits, gold, below=0.25, weight=3.0)
    expected = (3 * _bce(-2.0, 1) + _bce(2.0, 1) + _bce(0.5, 0) + _bce(-1.0, 0)) / 2
    assert float(mention_bce(logits, valid, gold, weights)) == pytest.approx(expected, rel=1e-5)
    # the partial loss, with every type annotated, is the same BCE, weighted alike
    type_logits = torch.zeros(2, 1, 2, 3)
    every = torch.ones(2, 3, dtype=torch.bool)
    rows = torch.ones(2, dtype=torch.bool)
    assert float(mention_loss(logits[:, None], valid[:, None], gold[:, None], rows,
                              type_logits, every, weights[:, None])) == \
        pytest.approx(expected, rel=1e-5)
    # all weights 1: exactly the unweighted loss
    ones = torch.ones(2, 2)
    assert float(mention_bce(logits, valid, gold, ones)) == \
        pytest.approx(float(mention_bce(logits, valid, gold)), rel=1e-6)
