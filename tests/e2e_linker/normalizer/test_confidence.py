"""A normalizer answer's confidence: in [0, 1], rising with the link score and the spelling
share, the complement for a no-match answer, none without a candidate."""

from __future__ import annotations

import pytest

from e2e_linker.collective.confidence import ConfidenceModel
from e2e_linker.normalizer.confidence import (
    NORMALIZE_CONFIDENCE,
    answer_confidence,
    features_of,
)


def test_features_cap_the_score_and_flag_an_exact_match():
    assert features_of(1.00007, 1.0) == {"link_score": 1.0, "exact": 1.0, "spelling_share": 1.0}
    assert features_of(0.9, 0.2)["exact"] == 0.0


def test_the_shipped_model_ranks_links_as_their_evidence_does():
    exact = answer_confidence(1.0, 1.0, True)
    near = answer_confidence(0.9, 0.8, True)
    nonsense = answer_confidence(0.84, 0.1, True)
    assert 0.0 <= nonsense < near < exact <= 1.0
    assert exact > 0.9 and nonsense < 0.5
    assert NORMALIZE_CONFIDENCE.fitted["fit_on"]  # says what it was fitted on


def test_a_no_match_answer_carries_the_complement_and_no_candidate_none():
    model = ConfidenceModel(weights={"link_score": 2.0}, bias=-1.0)
    right = answer_confidence(0.5, 0.0, True, model)
    assert right == pytest.approx(0.5)
    assert answer_confidence(0.9, 0.0, False, model) == pytest.approx(
        1 - answer_confidence(0.9, 0.0, True, model))
    assert answer_confidence(None, None, False) is None
