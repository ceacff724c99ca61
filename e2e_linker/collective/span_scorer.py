"""Mention detection heads over token states: exhaustive spans (default) or BIO tags.

Exhaustive (Bhowmik et al. 2021): every span ``(i, j)`` with ``j - i < L`` gets
``p(m|(i,j)) = σ(w_s·h_i + w_e·h_j + Σ_{q=i..j} w_m·h_q + b)``. The three projections are one
``Linear(H, 3)``; the inner sum is a cumulative-sum difference, so scoring all ``T·L`` spans of a
batch is a handful of tensor ops with no Python loop over spans.

BIO: a ``Linear(H, 3)`` tagger; spans are decoded from tags and get the mean of their tokens'
B/I probabilities as mention score, so the rest of the pipeline is the same.
"""

from __future__ import annotations

import torch
from torch import nn

BIO_TAGS = ("O", "B", "I")


class SpanScorer(nn.Module):
    """Scores all spans of up to L tokens, L being the last size of the validity mask;
    returns logits shaped (B, T, L).

    Why L comes from the mask: the score has no width term, so the longest span scored is
    the caller's choice (the model's ``max_span_len``, which annotate may raise above the
    training length: :class:`e2e_linker.collective.settings.AnnotateSettings`)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.proj = nn.Linear(hidden_size, 3)

    def forward(self, states: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """``valid`` (B, T, L) masks spans that may be mentions; invalid ones get -inf-ish."""
        s, e, m = self.proj(states).float().unbind(-1)  # each (B, T)
        batch, length = s.shape
        csum = torch.nn.functional.pad(m.cumsum(-1), (1, 0))  # (B, T+1); csum[k] = Σ_{q<k} m_q
        widths = torch.arange(valid.shape[-1], device=states.device)
        ends = torch.arange(length, device=states.device)[:, None] + widths[None, :]  # (T, L)
        ends_c = ends.clamp(max=length - 1)
        e_end = e[:, ends_c]  # (B, T, L)
        inner = csum[:, ends_c + 1] - csum[:, :length, None]
        logits = s[:, :, None] + e_end + inner
        return logits.masked_fill(~valid, -1e4)


def span_validity(
    attention_mask: torch.Tensor,
    word_start: torch.Tensor,
    word_end: torch.Tensor,
    segment: torch.Tensor,
    owned: torch.Tensor | None,
    max_span_len: int,
) -> torch.Tensor:
    """Mask (B, T, L) of spans that start a word, end a word, stay in one passage and chunk.

    With ``owned`` given, the span must also start in the chunk's owned range (so overlapping
    chunks never predict the same span twice).
    """
    batch, length = attention_mask.shape
    widths = torch.arange(max_span_len, device=attention_mask.device)
    ends = torch.arange(length, device=attention_mask.device)[:, None] + widths[None, :]
    in_range = ends < length
    ends_c = ends.clamp(max=length - 1)
    valid = in_range[None] & word_start[:, :, None] & word_end[:, ends_c]
    valid &= attention_mask[:, :, None].bool() & attention_mask[:, ends_c].bool()
    valid &= segment[:, :, None] == segment[:, ends_c]
    valid &= segment[:, :, None] >= 0
    if owned is not None:
        valid &= owned[:, :, None]
    return valid


def span_vectors(states: torch.Tensor, batch_idx: torch.Tensor, starts: torch.Tensor,
                 ends: torch.Tensor) -> torch.Tensor:
    """Mean of token states ``h_i…h_j`` for each selected span (inclusive ``ends``)."""
    csum = torch.nn.functional.pad(states.float().cumsum(1), (0, 0, 1, 0))  # (B, T+1, H)
    total = csum[batch_idx, ends + 1] - csum[batch_idx, starts]
    return total / (ends - starts + 1).unsqueeze(-1).to(total.dtype)


class BioTagger(nn.Module):
    """Token tagger for the BIO alternative; logits (B, T, 3) in the order of ``BIO_TAGS``."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.proj = nn.Linear(hidden_size, len(BIO_TAGS))

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.proj(states).float()


def decode_bio(
    probs: torch.Tensor, valid_tokens: torch.Tensor, word_start: torch.Tensor,
    max_span_len: int, threshold: float = 0.5,
) -> list[tuple[int, int, int, float]]:
    """Spans ``(batch, i, j, score)`` from BIO probabilities (B, T, 3) by greedy decoding.

    A span opens at a word-start token whose B probability beats O and I, and extends over
    following tokens tagged I (or word continuations). Score = mean of (B+I) probability.
    """
    tags = probs.argmax(-1).tolist()
    mention_p = (probs[..., 1] + probs[..., 2]).tolist()
    valid = valid_tokens.tolist()
    wstart = word_start.tolist()
    spans: list[tuple[int, int, int, float]] = []
    for b, row in enumerate(tags):
        t = 0
        length = len(row)
        while t < length:
            if valid[b][t] and wstart[b][t] and row[t] == 1:
                j = t
                while (j + 1 < length and valid[b][j + 1] and j + 1 - t < max_span_len
                       and (row[j + 1] == 2 or not wstart[b][j + 1])):
                    j += 1
                # do not end a span inside a word
                while j + 1 < length and valid[b][j + 1] and not wstart[b][j + 1]:
                    j += 1
                score = sum(mention_p[b][t : j + 1]) / (j + 1 - t)
                if score >= threshold and j - t < max_span_len:
                    spans.append((b, t, j, score))
                t = j + 1
            else:
                t += 1
    return spans
