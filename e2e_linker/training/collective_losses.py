"""The collective model's joint loss: mention BCE (or BIO CE), type CE and linking CE."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def mention_bce(logits: torch.Tensor, valid: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """BCE over every valid span, gold spans positive; summed and divided by the gold count.

    Dividing by the number of gold mentions (not spans) keeps the mention loss on the same
    scale as the per-mention linking loss however long the chunks are.
    """
    loss = F.binary_cross_entropy_with_logits(logits[valid], gold[valid].float(), reduction="sum")
    return loss / gold.sum().clamp(min=1)


def linking_ce(mentions: torch.Tensor, candidates: torch.Tensor,
               positive: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each mention over the candidate names, with several positive names.

    ``positive[m, c]`` is true when candidate name ``c`` belongs to mention ``m``'s gold concept;
    the gold probability is the total over those names (−log Σ_pos e^s + log Σ_all e^s).
    """
    scores = mentions @ candidates.T
    pos = scores.masked_fill(~positive, float("-inf"))
    return (torch.logsumexp(scores, -1) - torch.logsumexp(pos, -1)).mean()
