"""The collective model's joint loss: mention BCE (or BIO CE), type CE and linking CE.

Chunks of a corpus that annotates only some of the model's types (a gene corpus in a
Chemical/Disease/Gene model) take a partial-label mention loss instead of plain BCE: a span
that is not annotated there is only known not to be a mention *of an annotated type*, so its
label's probability is ``1 − p·q_A`` (mention probability ``p = σ(s)``, ``q_A`` the type head's
probability of an annotated type), which is 1 − p when the corpus annotates every type.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

#: the masked-out value of a log-probability: exp() of it is 0 in fp32, and unlike -inf it
#: keeps the gradient of an all-masked logsumexp finite (0, not NaN)
_MASKED = -1e4


def missed_positive_weights(logits: torch.Tensor, gold: torch.Tensor, below: float,
                            weight: float) -> torch.Tensor:
    """Each span's weight in the mention loss: ``weight`` for a gold span the model now scores
    below ``below`` (a mention it would miss at γ), 1 for every other span.

    Why: recall is where the model fails on other groups' text — gold spans scored low in
    their document ("infertility" 0.18 where NCBI and BioRED annotate it; docs/results.md,
    "Where the errors are") — and plain BCE spends most of its positive gradient on mentions
    it already keeps. The weight reads the scores without a gradient: it chooses which
    positives count more, it is not itself learnt (``TrainConfig.missed_positive_weight``)."""
    with torch.no_grad():
        missed = gold & (torch.sigmoid(logits.float()) < below)
        return torch.where(missed, torch.full_like(logits, weight, dtype=torch.float32),
                           torch.ones_like(logits, dtype=torch.float32))


def mention_bce(logits: torch.Tensor, valid: torch.Tensor, gold: torch.Tensor,
                weights: torch.Tensor | None = None) -> torch.Tensor:
    """BCE over every valid span, gold spans positive; summed and divided by the gold count
    (``weights``: each span's weight, :func:`missed_positive_weights`; None: all 1).

    Dividing by the number of gold mentions (not spans) keeps the mention loss on the same
    scale as the per-mention linking loss however long the chunks are.
    """
    loss = F.binary_cross_entropy_with_logits(
        logits[valid], gold[valid].float(), reduction="sum",
        weight=None if weights is None else weights[valid])
    return loss / gold.sum().clamp(min=1)


def all_span_type_logits(states: torch.Tensor, type_head: torch.nn.Linear,
                         max_span_len: int) -> torch.Tensor:
    """The type head's logits (B, T, L, K) for every span ``(i, i + w)`` of every row, without
    materialising span vectors.

    Why not ``type_head(span_vectors(...))``: that is (B·T·L, H) floats (4 × 512 × 10 × 384 with
    gradients for a training batch). The head is linear, so the logits of a mean-pooled span
    are the mean of its tokens' projections plus the bias: project once (B, T, K), then the
    same cumulative-sum difference as ``span_vectors``. Spans running past the end of a row
    are averaged over the tokens they have; they are never valid.
    """
    proj = F.linear(states, type_head.weight).float()  # (B, T, K)
    length = proj.shape[1]
    csum = F.pad(proj.cumsum(1), (0, 0, 1, 0))  # (B, T+1, K); csum[:, k] = Σ_{q<k}
    starts = torch.arange(length, device=proj.device)[:, None]
    ends = (starts + torch.arange(max_span_len, device=proj.device)[None, :]).clamp(
        max=length - 1)  # (T, L)
    sums = csum[:, ends + 1] - csum[:, :length, None]  # (B, T, L, K)
    width = (ends - starts + 1).to(proj.dtype)[None, :, :, None]
    return sums / width + type_head.bias.float()


def partial_mention_nll(logits: torch.Tensor, valid: torch.Tensor, gold: torch.Tensor,
                        type_logits: torch.Tensor, annotated: torch.Tensor,
                        weights: torch.Tensor | None = None) -> torch.Tensor:
    """Summed mention loss of chunks whose corpus annotates only the types ``annotated``.

    ``logits``, ``valid``, ``gold``: (P, T, L); ``type_logits``: (P, T, L, K); ``annotated``:
    (P, K) bool, the types each row's corpus annotates. A gold span costs ``−log p`` (BCE's
    positive term). Any other valid span costs ``−log(1 − p·q_A)``, computed as
    ``−log((1 − p) + p·q_¬A)`` = ``−logaddexp(log σ(−s), log σ(s) + log q_¬A)``, which is exact
    and stable at both ends: it is BCE's negative term ``−log σ(−s)`` when ``A`` holds every
    type (``q_¬A`` = 0), and near 0 when the type head puts the span in an unannotated type.
    """
    s = logits.float()
    log_q = torch.log_softmax(type_logits.float(), -1)
    log_q_other = torch.logsumexp(log_q.masked_fill(annotated[:, None, None, :], _MASKED), -1)
    negative = -torch.logaddexp(F.logsigmoid(-s), F.logsigmoid(s) + log_q_other)
    positive = -F.logsigmoid(s)
    if weights is not None:
        positive = positive * weights
        negative = negative * weights
    return positive[valid & gold].sum() + negative[valid & ~gold].sum()


def mention_loss(logits: torch.Tensor, valid: torch.Tensor, gold: torch.Tensor,
                 partial: torch.Tensor | None = None, type_logits: torch.Tensor | None = None,
                 annotated: torch.Tensor | None = None,
                 weights: torch.Tensor | None = None) -> torch.Tensor:
    """The exhaustive head's mention loss over a batch, divided by its gold count.

    ``partial`` (B,) bool marks the rows from partially annotated corpora; ``type_logits``
    (:func:`all_span_type_logits`) and ``annotated`` are given for those rows only. Without
    such rows this *is* :func:`mention_bce` (the same computation, so a config whose corpora
    annotate every type trains exactly as before); the others take
    :func:`partial_mention_nll`. ``weights`` (None: all 1): each span's weight
    (:func:`missed_positive_weights`).
    """
    if partial is None or not bool(partial.any()):
        return mention_bce(logits, valid, gold, weights)
    if type_logits is None or annotated is None:
        raise ValueError("partial rows need their type logits and annotated types")
    full = ~partial
    full_valid = valid[full]
    total = F.binary_cross_entropy_with_logits(
        logits[full][full_valid], gold[full][full_valid].float(), reduction="sum",
        weight=None if weights is None else weights[full][full_valid])
    total = total + partial_mention_nll(logits[partial], valid[partial], gold[partial],
                                        type_logits, annotated,
                                        None if weights is None else weights[partial])
    return total / gold.sum().clamp(min=1)


def linking_ce(mentions: torch.Tensor, candidates: torch.Tensor,
               positive: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each mention over the candidate names, with several positive names.

    ``positive[m, c]`` is true when candidate name ``c`` belongs to mention ``m``'s gold concept;
    the gold probability is the total over those names (−log Σ_pos e^s + log Σ_all e^s).
    """
    scores = mentions @ candidates.T
    pos = scores.masked_fill(~positive, float("-inf"))
    return (torch.logsumexp(scores, -1) - torch.logsumexp(pos, -1)).mean()
