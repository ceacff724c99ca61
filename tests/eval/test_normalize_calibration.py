"""eval.normalize_calibration: the spelling rule chosen on dev rows (no Acc@1 lost, a bounded
rise of the gold NIL rate, the most made-up mentions NIL) and the confidence fitted on them."""

from __future__ import annotations

import pytest

from eval import normalize_calibration as calibration


def row(kind: str, score: float | None, share: float | None, right: bool = False) -> dict:
    return {"kind": kind, "score": score, "share": share, "right": right}


def dev_rows() -> list[dict]:
    """Gold mentions mostly right and well spelt, one right link with little spelling at a
    high score, one wrong gold mention with little spelling; made-up mentions with little
    spelling at scores the threshold lets through."""
    gold = [row("gold", 0.95, 0.9, True) for _ in range(300)]
    gold += [row("gold", 0.97, 0.1, True), row("gold", 0.80, 0.1, False),
             row("gold", 0.5, 0.9, False)]
    made_up = [row("nonsense", 0.82, 0.05) for _ in range(8)]
    made_up += [row("n_gram", 0.83, 0.6), row("n_gram", 0.6, 0.1), row("nonsense", None, None)]
    return gold + made_up


def test_a_link_is_nil_below_the_threshold_or_with_little_spelling_below_the_bar():
    assert calibration.is_nil(row("gold", 0.7, 1.0), 0.78, 0.3, 0.85)
    assert calibration.is_nil(row("gold", 0.8, 0.1), 0.78, 0.3, 0.85)
    assert not calibration.is_nil(row("gold", 0.9, 0.1), 0.78, 0.3, 0.85)
    assert not calibration.is_nil(row("gold", 0.8, 0.5), 0.78, 0.3, 0.85)
    assert calibration.is_nil(row("gold", None, None), 0.78, 0.3, 0.85)


def test_figures_count_acc1_the_gold_nil_rate_and_the_made_up_recall():
    figures = calibration.rule_figures(dev_rows(), 0.78, 0.3, 0.85)
    assert figures["acc1"] == round(301 / 303, 4)
    assert figures["gold_nil_rate"] == round(2 / 303, 4)
    assert figures["nil_recall"] == round(10 / 11, 4)
    assert figures["nil_recall_nonsense"] == 1.0 and figures["nil_recall_n_grams"] == 0.5


def test_the_rule_chosen_keeps_acc1_and_bounds_the_gold_nil_rate():
    grid = calibration.spelling_grid({"dev": dev_rows()}, 0.78)
    assert (grid[0]["share"], grid[0]["bar"]) == (0.0, 0.0)  # the threshold alone first
    chosen = calibration.chosen_rule(grid)
    base, mine = grid[0]["cases"]["dev"], chosen["cases"]["dev"]
    assert mine["acc1"] >= base["acc1"]
    assert mine["gold_nil_rate"] <= base["gold_nil_rate"] + calibration.NIL_RATE_COST + 1e-9
    assert mine["nil_recall_nonsense"] == 1.0 > base["nil_recall_nonsense"]
    # the right link with little spelling at 0.97 stays linked: the bar is under it
    assert chosen["bar"] <= 0.97


def test_the_confidence_fitted_reads_the_rows_evidence():
    from e2e_linker.normalizer.confidence import features_of

    model = calibration.fit_normalize_confidence(dev_rows())
    good = model.probability(features_of(0.95, 0.9))
    nonsense = model.probability(features_of(0.82, 0.05))
    assert good > 0.8 and nonsense < good - 0.2
    report = calibration.reliability_of(model, dev_rows())
    assert report["n"] == len(dev_rows()) - 1  # the row without a candidate is left out
    nil = calibration.nil_answers(model, dev_rows(), 0.78, 0.3, 0.85)
    # answers without a candidate carry no confidence and are left out
    assert nil["n"] == 11 and nil["made_up_share"] == pytest.approx(9 / 11, abs=1e-4)


def test_markdown_shows_both_rules_and_the_calibration():
    rows = dev_rows()
    grid = calibration.spelling_grid({"dev": rows}, 0.78)
    model = calibration.fit_normalize_confidence(rows)
    result = {"model": "m", "made_up_per_set": 11, "seed": 0, "nil_threshold": 0.78,
              "grid": grid, "chosen": calibration.chosen_rule(grid), "seconds": 1.0,
              "confidence": {"bias": model.bias, "weights": model.weights,
                             "in_sample": {"dev": calibration.reliability_of(model, rows)},
                             "held_out": {}, "nil_answers": {"dev": {"n": 0}}}}
    table = calibration.markdown(result)
    assert "| dev | threshold alone |" in table and "| dev | with the spelling rule |" in table
    assert "| both → dev |" in table and "Confidence: sigmoid(" in table
