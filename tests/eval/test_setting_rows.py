"""eval.setting_rows: rows are changes of the declared pipeline, read from the declaration,
scored from one detection pass low enough for every row."""

from __future__ import annotations

import pytest

from eval.setting_rows import Row, ablation_rows, plain_row, setting_rows
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_annotator


@pytest.fixture(scope="module")
def annotator(tmp_path_factory):
    annotator = tiny_annotator(tmp_path_factory.mktemp("tiny"), threshold=0.3)
    annotator.pipeline = annotator.pipeline.changed(overrides=("propagation.threshold=0.2",))
    return annotator


def test_the_ablation_rows_come_from_the_declaration(annotator):
    rows = ablation_rows(annotator.pipeline)
    declared = annotator.pipeline.rule_steps()
    assert [r.label for r in rows] == ["all declared steps",
                                       *(f"without {n}" for n in declared),
                                       "every rule step off"]
    assert rows[-1].disable == tuple(declared) and "propagation" in declared
    # the plain row leaves only the steps the pipeline cannot run without
    plain = annotator.pipeline.changed(plain_row(annotator.pipeline).disable)
    assert plain.names == ["score_floor", "overlaps", "link"]


def test_one_detection_pass_low_enough_for_every_row(annotator, monkeypatch):
    floors = []
    real = annotator.detect

    def detect(docs, threshold=None, resolve=True):
        floors.append(threshold)
        return real(docs, threshold=threshold, resolve=resolve)

    monkeypatch.setattr(annotator, "detect", detect)
    docs = synthetic_docs(3)
    rows = [Row("declared"), Row("no extension", ("name_extension",)),
            Row("dictionary", ("name_extension",), ("dictionary.threshold=0.1",)),
            Row("higher γ", ("name_extension", "propagation"), (), 0.6)]
    out = setting_rows(annotator, docs, rows)
    assert floors == [0.02]  # the name extension's floor, the lowest of all rows
    assert [r["row"] for r in out] == [r.label for r in rows]
    assert "dictionary" in out[2]["steps"] and "name_extension" not in out[1]["steps"]
    assert out[3]["threshold"] == 0.6 and out[0]["threshold"] == 0.3
    floors.clear()
    setting_rows(annotator, docs, rows[3:])
    assert floors == [0.6]  # no row reads below its γ
    # a row is what annotating with that pipeline gives
    runner = annotator.with_pipeline(annotator.pipeline.changed(("name_extension",)))
    expected = sum(len([a for a in d.annotations if a.infons.get("annotator") == "e2e_linker"])
                   for d in runner.annotate(docs, replace=True))
    assert out[1]["spans"] == expected
