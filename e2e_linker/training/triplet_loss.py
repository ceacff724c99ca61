"""Batch-hard soft-margin triplet loss (Hermans et al. 2017; Xu & Bethard 2021).

Why batch-hard: with hundreds of thousands of concept names, sampling triples offline wastes
most of them on easy negatives. Inside each mini-batch every text is an anchor; its hardest
positive is the *least* similar text of the same concept and its hardest negative the *most*
similar text of another concept, so the loss always works on the current model's worst cases.
The soft margin ``ln(1 + exp(S_in − S_ip))`` (softplus) needs no margin hyper-parameter.

Similarity while training is the negative Euclidean distance (as in the paper); search uses
cosine on L2-normalised vectors.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def euclidean_similarity(embeddings: torch.Tensor) -> torch.Tensor:
    """``S[i, j] = −‖e_i − e_j‖``; the square root is kept away from 0 so gradients stay finite."""
    squared = (embeddings * embeddings).sum(-1)
    dist2 = squared[:, None] + squared[None, :] - 2.0 * embeddings @ embeddings.T
    return -torch.sqrt(dist2.clamp(min=1e-12))


def cosine_similarity_matrix(embeddings: torch.Tensor) -> torch.Tensor:
    unit = F.normalize(embeddings, dim=-1)
    return unit @ unit.T


SIMILARITIES = {"euclidean": euclidean_similarity, "cosine": cosine_similarity_matrix}


def hardest_pairs(similarity: torch.Tensor, labels: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For each anchor: index of its hardest positive, of its hardest negative, and a validity mask.

    The hardest positive is the least similar *other* text with the same label; the hardest
    negative the most similar text with a different label. Anchors lacking either are invalid
    (the batcher makes that not happen, but the loss must not crash on it). Ties go to the
    lowest index (``argmax``/``argmin`` take the first), so results are deterministic.
    """
    n = labels.shape[0]
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(n, dtype=torch.bool, device=labels.device)
    positive = same & ~eye
    negative = ~same
    big = torch.finfo(similarity.dtype).max
    pos_sim = similarity.masked_fill(~positive, big)
    neg_sim = similarity.masked_fill(~negative, -big)
    hardest_pos = pos_sim.argmin(dim=1)
    hardest_neg = neg_sim.argmax(dim=1)
    valid = positive.any(dim=1) & negative.any(dim=1)
    return hardest_pos, hardest_neg, valid


def batch_hard_soft_margin_loss(embeddings: torch.Tensor, labels: torch.Tensor,
                                similarity: str = "euclidean") -> torch.Tensor:
    """Mean over valid anchors of ``softplus(S_in − S_ip)`` with batch-hard mining.

    ``labels`` are integer concept indices, one per row of ``embeddings``. Returns a scalar
    (0 with a graph if no anchor is valid, so a degenerate batch does not break training).
    """
    sim = SIMILARITIES[similarity](embeddings)
    pos, neg, valid = hardest_pairs(sim.detach(), labels)
    rows = torch.arange(labels.shape[0], device=labels.device)
    s_ip = sim[rows, pos]
    s_in = sim[rows, neg]
    losses = F.softplus(s_in - s_ip)
    if not bool(valid.any()):
        return embeddings.sum() * 0.0
    return losses[valid].mean()
