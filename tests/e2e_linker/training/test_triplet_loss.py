"""Batch-hard soft-margin triplet loss against a hand computation."""

from __future__ import annotations

import math

import torch

from e2e_linker.training.triplet_loss import (
    batch_hard_soft_margin_loss,
    euclidean_similarity,
    hardest_pairs,
)

# e0, e1: concept 0; e2, e3: concept 1. Distances: d01=1, d02=2, d03=3, d12=√5, d13=2, d23=√13.
EMB = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
LABELS = torch.tensor([0, 0, 1, 1])


def test_hardest_positive_and_negative():
    pos, neg, valid = hardest_pairs(euclidean_similarity(EMB), LABELS)
    assert pos.tolist() == [1, 0, 3, 2]  # the only other text of the same concept
    assert neg.tolist() == [2, 3, 0, 1]  # the closest text of the other concept
    assert valid.all()


def test_hardest_positive_is_the_least_similar():
    emb = torch.tensor([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.0, 3.0]])
    pos, neg, _ = hardest_pairs(euclidean_similarity(emb), torch.tensor([0, 0, 0, 1]))
    assert pos[0] == 2 and pos[1] == 2 and pos[2] == 0
    assert neg.tolist() == [3, 3, 3, 0]


def test_loss_equals_hand_computation():
    softplus = lambda x: math.log1p(math.exp(x))  # noqa: E731
    # anchors 0, 1: S_ip = -1, S_in = -2; anchors 2, 3: S_ip = -√13, S_in = -2
    expected = (2 * softplus(-2 + 1) + 2 * softplus(-2 + math.sqrt(13))) / 4
    loss = batch_hard_soft_margin_loss(EMB, LABELS)
    assert math.isclose(float(loss), expected, rel_tol=1e-5)


def test_loss_has_finite_gradients_with_duplicates():
    emb = torch.tensor([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], requires_grad=True)
    loss = batch_hard_soft_margin_loss(emb, LABELS)
    loss.backward()
    assert torch.isfinite(emb.grad).all()


def test_batch_without_positives_gives_zero():
    emb = torch.randn(3, 4, requires_grad=True)
    loss = batch_hard_soft_margin_loss(emb, torch.tensor([0, 1, 2]))
    assert float(loss.detach()) == 0.0
    loss.backward()
