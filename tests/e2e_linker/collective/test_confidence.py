"""One confidence per annotation (``e2e_linker.collective.confidence``): in [0, 1], monotone
in the mention score, the mention score alone without a fitted file, a fitted model read back
from the model directory, and a fit that learns which steps to trust."""

from __future__ import annotations

import json
import random

import pytest

from data_tools.documents import Annotation
from data_tools.formats.mentions_jsonl import CONFIDENCE, LINK_METHOD
from e2e_linker.collective.confidence import (
    CONFIDENCE_FILE,
    FALLBACK,
    OTHER,
    ConfidenceModel,
    assign_confidence,
    features_of,
    fit_confidence,
    load_confidence,
)

FITTED = ConfidenceModel(weights={"mention_logit": 0.8, "has_link_score": -1.0,
                                  "link_score": 0.3, "method=exact": 2.0,
                                  "method=other": -3.0, "type=Gene": -0.5},
                         bias=0.2, methods=("dense", "exact"), types=("Chemical", "Gene"))


def annotation(p: float | None, link: float | None = None, method: str | None = "dense",
               type_: str = "Chemical") -> Annotation:
    return Annotation(0, 7, "aspirin", type_, ["MESH:D001241"], mention_score=p,
                      link_score=link, infons={LINK_METHOD: method} if method else {})


@pytest.mark.parametrize("model", [FALLBACK, FITTED])
@pytest.mark.parametrize("link,method,type_", [(None, "exact", "Chemical"),
                                               (25.0, "dense", "Gene"),
                                               (None, "ortholog", "Species"), (None, None, "")])
def test_in_the_unit_interval_and_monotone_in_the_mention_score(model, link, method, type_):
    scores = [0.0, 1e-9, 0.01, 0.25, 0.5, 0.9, 0.999, 1.0]
    found = [model(annotation(p, link, method, type_)) for p in scores]
    assert all(0.0 <= c <= 1.0 for c in found)
    assert found == sorted(found) and found[0] < found[-1]


def test_the_fallback_is_the_mention_score_itself():
    for p in (0.01, 0.3, 0.77, 0.99):
        assert FALLBACK(annotation(p, 30.0, "exact")) == pytest.approx(p)
    assert FALLBACK(annotation(None)) == 0.5  # no mention score: even odds, never null


def test_unlisted_steps_and_types_fall_into_other():
    feats = features_of(annotation(0.5, 12.0, "abbreviation", "Species"), ("dense",), ("Gene",))
    assert feats == {"has_link_score": 1.0, "link_score": 1.2, f"method={OTHER}": 1.0,
                     f"type={OTHER}": 1.0}
    # the deciding step counts: an exact link beats an unknown step at the same mention score
    assert FITTED(annotation(0.6, None, "exact")) > FITTED(annotation(0.6, None, "sieve_x"))


def test_a_model_directory_without_the_file_gets_the_fallback(tmp_path):
    assert load_confidence(tmp_path) is FALLBACK
    assert load_confidence(None) is FALLBACK


def test_the_fitted_file_is_read_back_as_written(tmp_path):
    (tmp_path / CONFIDENCE_FILE).write_text(json.dumps(FITTED.to_json()))
    loaded = load_confidence(tmp_path)
    assert loaded == FITTED
    ann = annotation(0.4, 18.0, "dense", "Gene")
    assert loaded(ann) == FITTED(ann) != FALLBACK(ann)


@pytest.mark.parametrize("content,message", [
    ("{not json", "cannot read it as JSON"),
    ("[]", "expected an object with a 'weights' object"),
    ('{"bias": 1}', "expected an object with a 'weights' object"),
    ('{"weights": {"mention_logit": "high"}}', "could not convert string to float"),
])
def test_a_damaged_fitted_file_is_one_error_naming_it(tmp_path, content, message):
    from e2e_linker.collective.species_choice import SPECIES_CHOICE_FILE, load_species_choice
    from e2e_linker.errors import UserError

    for name, load in ((CONFIDENCE_FILE, load_confidence),
                       (SPECIES_CHOICE_FILE, load_species_choice)):
        (tmp_path / name).write_text(content)
        with pytest.raises(UserError, match=f"{name}: .*{message}"):
            load(tmp_path)


def test_assign_writes_the_infon_on_every_kept_annotation():
    anns = [annotation(0.9), None, annotation(0.2, None, "exact")]
    assign_confidence(anns, FALLBACK)
    assert [a.infons[CONFIDENCE] for a in anns if a is not None] == ["0.9000", "0.2000"]


def test_the_fit_learns_which_step_is_right_and_is_calibrated_on_its_data():
    """Synthetic predictions: exact links right 90% of the time, dense ones 30%, whatever the
    mention score: the fitted model gives exact links the higher confidence, and its mean
    confidence per step matches that step's accuracy."""
    rng = random.Random(0)
    rows, correct = [], []
    for _ in range(2000):
        method = rng.choice(["exact", "dense"])
        ann = annotation(rng.uniform(0.3, 0.99), 20.0 if method == "dense" else None, method)
        rows.append(ann)
        correct.append(rng.random() < (0.9 if method == "exact" else 0.3))
    model = fit_confidence([features_of(a, ("dense", "exact"), ("Chemical",)) for a in rows],
                           correct, ("dense", "exact"), ("Chemical",), fitted={"data": "test"})
    assert model.fitted == {"data": "test"}
    for method, rate in (("exact", 0.9), ("dense", 0.3)):
        mine = [i for i, a in enumerate(rows) if a.infons[LINK_METHOD] == method]
        mean = sum(model(rows[i]) for i in mine) / len(mine)
        observed = sum(correct[i] for i in mine) / len(mine)
        assert mean == pytest.approx(observed, abs=0.02) and observed == pytest.approx(rate,
                                                                                   abs=0.05)
