"""eval.accuracy_ablation: the rows are the declared pipeline's steps, each off in turn and all
off, on every corpus asked for, and the table says which steps each row left out."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from eval import accuracy_ablation
from eval.accuracy_ablation import (
    ablation_table_rows,
    corpus_specs,
    corpus_types,
    markdown,
    steps_off_cell,
)
from eval.ood_dev import only_types
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_annotator


@pytest.fixture(scope="module")
def annotator(tmp_path_factory):
    return tiny_annotator(tmp_path_factory.mktemp("tiny"), threshold=0.3)


def test_the_corpora_follow_the_split_and_ood_devs_types():
    assert corpus_specs(["bc5cdr:SPLIT"], "test") == ["bc5cdr:test"]
    assert corpus_specs(["bc5cdr:SPLIT", "bc5cdr:dev", "biored:dev"], "dev") == [
        "bc5cdr:dev", "biored:dev"]
    assert corpus_types("bc5cdr:test") == ("Chemical", "Disease")
    assert corpus_types("ncbi_disease:dev") == ("Disease",)
    assert corpus_types("biored:dev") == ("Chemical", "Disease")


def test_rows_come_from_the_declaration_on_every_corpus(annotator):
    docs = synthetic_docs(3)
    corpora = {"one": (docs, ("Chemical", "Disease"), None),
               "two": (only_types(docs, ("Disease",)), ("Disease",), None)}
    rows = ablation_table_rows(annotator, "tiny", corpora)
    declared = annotator.pipeline.rule_steps()
    labels = ["all declared steps", *(f"without {n}" for n in declared), "every rule step off"]
    assert [r["row"] for r in rows] == labels * 2
    assert [r["corpus"] for r in rows] == ["one"] * len(labels) + ["two"] * len(labels)
    assert rows[0]["steps_off"] == [] and rows[0]["steps"] == annotator.pipeline.names
    assert rows[1]["steps_off"] == [declared[0]] and declared[0] not in rows[1]["steps"]
    assert rows[len(labels) - 1]["steps_off"] == declared
    assert rows[len(labels) - 1]["steps"] == ["score_floor", "overlaps", "link"]
    # the second corpus scores Disease only
    assert set(rows[len(labels)]["strict_by_type"]) <= {"Disease"}
    assert steps_off_cell(rows[0], len(declared)) == "—"
    assert steps_off_cell(rows[1], len(declared)) == declared[0]
    assert steps_off_cell(rows[len(labels) - 1], len(declared)) == \
        f"all {len(declared)} rule steps"


def test_main_writes_one_table_a_corpus(annotator, monkeypatch, tmp_path):
    import data_tools.registry
    import e2e_linker.collective.loading

    loaded = []

    def load_annotator(settings):
        loaded.append(settings)
        return annotator

    monkeypatch.setattr(e2e_linker.collective.loading, "load_annotator", load_annotator)
    monkeypatch.setattr(accuracy_ablation, "model_with_names_from", lambda *a, **k: None)
    monkeypatch.setattr(data_tools.registry, "load_kb",
                        lambda name: SimpleNamespace(resolve=str.upper))
    out = tmp_path / "out"
    assert accuracy_ablation.main(["--corpora", "biored:dev", "ncbi_disease:dev",
                                   "--max-docs", "2", "--out", str(out)]) == 0
    assert len(loaded) == 1  # one load a model, every corpus scored with it
    result = json.loads((out / "results.json").read_text())
    declared = annotator.pipeline.rule_steps()
    assert [c["corpus"] for c in result["corpora"]] == ["biored:dev", "ncbi_disease:dev"]
    assert result["rule_steps"] == {"shipped": declared}
    assert len(result["rows"]) == 2 * (len(declared) + 2)
    table = (out / "results.md").read_text()
    assert table == markdown(result)
    assert "| model | row | steps off | strict F1 | Disease strict | partial F1 | " \
           "mention F1 |" in table
    assert f"| shipped | every rule step off | all {len(declared)} rule steps |" in table
    assert "biored:dev, 2 documents, Chemical + Disease scored, IDs through the bc5cdr KB" \
        in table
