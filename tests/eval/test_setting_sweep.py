"""eval.setting_sweep: the grid a user writes is every combination, in order, as rows that
change the declared pipeline the way ``linker annotate --set`` does."""

from __future__ import annotations

import pytest

from eval.setting_rows import Row, setting_rows
from eval.setting_sweep import GAMMA, axis_columns, declared_values, grid_axes, parse_grid
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_annotator


def test_grid_is_the_product_of_the_axes_as_overrides_and_thresholds():
    grid = parse_grid(["propagation.threshold=0.2,0.3", "lexical_gate.gate=1.01"], "0.4,0.5")
    assert [(r.overrides, r.threshold) for r in grid] == [
        (("propagation.threshold=0.2", "lexical_gate.gate=1.01"), 0.4),
        (("propagation.threshold=0.2", "lexical_gate.gate=1.01"), 0.5),
        (("propagation.threshold=0.3", "lexical_gate.gate=1.01"), 0.4),
        (("propagation.threshold=0.3", "lexical_gate.gate=1.01"), 0.5),
    ]
    assert all(r.disable == () for r in grid)
    assert grid[0].label == "propagation.threshold=0.2, lexical_gate.gate=1.01, γ=0.4"
    assert parse_grid([]) == [Row("declared pipeline")]  # no axis: the model's own pipeline


@pytest.mark.parametrize("item", ["propagation.threshold=", "propagation.threshold",
                                  "threshold=0.4", "propagation.threshold=0.2,,0.3"])
def test_malformed_axes_are_refused(item):
    with pytest.raises(SystemExit, match="STEP.PARAM=V1,V2"):
        parse_grid([item])


@pytest.mark.parametrize("item, said", [("gamma.x=1", "no step named gamma"),
                                        ("propagation.gate=0.2", "no parameter gate"),
                                        ("propagation.threshold=high", "not a value")])
def test_what_annotate_would_refuse_is_refused_before_loading(item, said):
    with pytest.raises(SystemExit, match=said):
        parse_grid([item])


def test_a_parameter_twice_or_a_bad_threshold_is_refused():
    with pytest.raises(SystemExit, match="given twice"):
        grid_axes(["propagation.threshold=0.2", "propagation.threshold=0.3"])
    with pytest.raises(SystemExit, match="--threshold"):
        grid_axes([], "0.4,high")


def test_rows_run_with_a_step_the_pipeline_lacks_added(tmp_path):
    annotator = tiny_annotator(tmp_path, threshold=0.3)
    assert not annotator.pipeline.has("dictionary")  # off unless declared
    grid = parse_grid(["dictionary.threshold=0.1,0.2"], "0.3")
    out = setting_rows(annotator, synthetic_docs(3), grid)
    assert all("dictionary" in row["steps"] for row in out)
    columns = axis_columns(list(grid_axes(["dictionary.threshold=0.1,0.2"], "0.3")))
    assert [[show(row) for show in columns.values()] for row in out] == [["0.1", 0.3],
                                                                       ["0.2", 0.3]]
    values = declared_values(annotator.pipeline, ["dictionary.threshold",
                                                  "name_extension.floor_score", GAMMA],
                             annotator.settings.threshold)
    assert values == {"dictionary.threshold": "not declared",
                      "name_extension.floor_score": 0.02, GAMMA: 0.3}
