"""The confidence of a normalizer answer: an estimate, in [0, 1], that the answer is right.

Why not the link score: it is a cosine (1.0 for an exact name or the lexical sieve), and a
cosine says how near the nearest name is, not how often such a link is right; nonsense reaches
cosines the NIL threshold lets through (:mod:`e2e_linker.normalizer.spelling`). The
confidence is the same kind of number ``linker annotate`` writes
(:mod:`e2e_linker.collective.confidence`: a logistic model, fitted by its
:func:`~e2e_linker.collective.confidence.fit_confidence`), over the normalizer's own
features (:func:`features_of`): the link score, whether it reads 1.0000 (an exact name,
training mention or lexical-sieve match), and the link's spelling share
(:func:`~e2e_linker.normalizer.spelling.spelling_share`).

What it estimates: for a linked answer, that its concept is right; for a no-match (NIL)
answer, 1 − that estimate for its best candidate: that the best link is wrong, which is what
"no concept" asserts (it does not say whether some other concept would fit). An answer with
no candidate at all (nothing of the type to search) has none (None).

:data:`NORMALIZE_CONFIDENCE` was fitted on the default normalizer's answers on BC5CDR dev and
NCBI disease dev gold mentions (right or wrong best concept) and on made-up mentions that name
no concept (always wrong), by ``python -m eval.normalize_calibration``; docs/results.md
("Confidence of a normalize answer") says how well it is calibrated. It is fitted for the
default normalizer: another model's cosines may be spread differently, so read its
confidences as approximate.
"""

from __future__ import annotations

from e2e_linker.collective.confidence import ConfidenceModel

#: a link score at least this reads 1.0000 as written (4 places): an exact match
EXACT_SCORE = 0.99995

#: the fitted model (see the module docstring; its ``fitted`` says on what)
NORMALIZE_CONFIDENCE = ConfidenceModel(
    weights={"exact": 2.347052, "link_score": 10.111188, "spelling_share": 2.680442},
    bias=-11.164345,
    fitted={"label": "the best concept is right (made-up mentions: never)",
            "fit_on": ["bc5cdr:dev", "ncbi_disease:dev"], "rows": 11319,
            "method": "logistic regression, Newton's method (fit_confidence)",
            "command": "python -m eval.normalize_calibration"})


def features_of(score: float, share: float) -> dict[str, float]:
    """The named features of a normalizer link with link score ``score`` and spelling share
    ``share``: ``link_score`` (capped at 1), ``exact`` (1 when it reads 1.0000) and
    ``spelling_share``."""
    score = min(score, 1.0)
    return {"link_score": score, "exact": float(score >= EXACT_SCORE),
            "spelling_share": share}


def answer_confidence(score: float | None, share: float | None, linked: bool,
                      model: ConfidenceModel = NORMALIZE_CONFIDENCE) -> float | None:
    """The confidence of an answer whose best candidate has link score ``score`` and
    spelling share ``share``: the estimate that the candidate is right when the answer
    ``linked`` it, 1 − it when the answer is NIL; None without a candidate (``score``
    None)."""
    if score is None or share is None:
        return None
    right = model.probability(features_of(score, share))
    return right if linked else 1.0 - right
