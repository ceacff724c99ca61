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
    earning_table,
    markdown,
    step_verdict,
    steps_off_cell,
    table_views,
)
from eval.ood_dev import DEV_TABLE, FAIR_NAMES, only_types
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
    # each row's per-document counts, for the gain intervals (eval.paired_bootstrap)
    counts = rows[len(labels)]["strict_by_document"]
    assert list(counts) == list(rows[len(labels)]["table"])
    assert sorted(next(iter(counts.values()))) == sorted(d.id for d in docs)
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


def test_biored_gives_a_gene_row_when_the_model_predicts_genes():
    cd = ("Chemical", "Disease")
    assert table_views("biored:dev", cd, ("Chemical", "Disease", "Gene")) == {
        "biored:dev (Chemical, Disease)": cd, "biored:dev (Gene)": ("Gene",)}
    assert table_views("biored:dev", cd, cd) == {"biored:dev (Chemical, Disease)": cd}
    assert table_views("nlmgene:dev", ("Gene",), ("Gene",)) == {"nlmgene:dev (Gene)": ("Gene",)}


def test_a_step_is_kept_only_if_it_earns_on_the_combined_score_without_trading_rows():
    every = {"a": 0.80, "b": 0.70, "c": 0.60}
    assert step_verdict(every, {"a": 0.79, "b": 0.69, "c": 0.60}).startswith("keep")
    # off, the combined score barely moves (0.0003 < 0.001)
    assert step_verdict(every, {"a": 0.799, "b": 0.70, "c": 0.60}).startswith("drop (combined")
    # a step that helps: switching it off raises the combined score
    assert step_verdict(every, {"a": 0.81, "b": 0.70, "c": 0.60}).startswith("drop (combined")
    # gains a 0.01, costs b and c 0.006 each: no row loses more than a gains, combined
    # below the bar
    assert step_verdict(every, {"a": 0.79, "b": 0.706, "c": 0.606}).startswith("drop (comb")
    # gains a 0.05, costs b 0.03: a trade, but a gains more than b loses
    assert step_verdict(every, {"a": 0.75, "b": 0.73, "c": 0.59}).startswith("keep")
    # gains a and c 0.02 each (combined +0.0033), costs b 0.03: a trade it loses
    verdict = step_verdict(every, {"a": 0.78, "b": 0.73, "c": 0.58})
    assert verdict == "drop (costs b 0.0300, gains a 0.0200)"


def test_steps_the_declaration_leaves_out_get_a_row_each_when_asked(annotator):
    from e2e_linker.pipeline.declaration import STEPS

    docs = synthetic_docs(2)
    corpora = {"one": (docs, ("Chemical", "Disease"), None)}
    plain = ablation_table_rows(annotator, "tiny", corpora)
    rows = ablation_table_rows(annotator, "tiny", corpora, undeclared=True)
    added = rows[len(plain):]
    left_out = [n for n, s in STEPS.items() if not s.required and not annotator.pipeline.has(n)]
    assert left_out and [r["row"] for r in added] == [f"with {n}" for n in left_out]
    first = added[0]
    assert first["steps_added"] == [left_out[0]] and left_out[0] in first["steps"]
    assert steps_off_cell(first, 3) == f"+ {left_out[0]}"


#: the widened dev table's row labels, for hand-made earning-table records
TABLE_LABELS = [f"{spec} (T)" for spec in DEV_TABLE] + ["biored:dev (Gene)"]


def table_records(label: str, value: float) -> list[dict]:
    """One ablation record a dev-table row, each scoring ``value``, for the row ``label``."""
    return [{"model": "m", "row": label, "table": {name: value}} for name in TABLE_LABELS]


def test_a_step_left_out_is_declared_on_the_terms_a_declared_one_is_kept():
    result = {"rows": table_records("all declared steps", 0.7) + table_records("with x", 0.702)
              + table_records("with y", 0.7005)}
    lines = earning_table({"rows": result["rows"]})
    assert any(line.startswith("| with x |") and "| declare (combined +0.0020) |" in line
               for line in lines)
    assert any(line.startswith("| with y |") and "| stay off (combined +0.0005) |" in line
               for line in lines)


def test_the_earning_table_needs_every_row_of_the_dev_table():
    result = {"rows": table_records("all declared steps", 0.7)
              + table_records("without x", 0.69) + table_records("every rule step off", 0.6)}
    lines = earning_table(result)
    assert lines[0].startswith("Rule re-earning, model m")
    body = [line for line in lines if line.startswith("| without x")]
    assert body == ["| without x | " + " | ".join(["0.6900"] * len(TABLE_LABELS))
                    + " | 0.6900 | -0.0100 | keep (combined +0.0100) |  |"]
    assert any(line.startswith("| every rule step off |") and line.endswith(" |  |")
               for line in lines)
    assert earning_table({"rows": result["rows"][1:]}) == []  # a row missing: no table


def test_each_steps_gain_comes_with_its_interval_over_resampled_documents():
    from eval.accuracy_ablation import gain_interval

    every = {"bc5cdr:dev (T)": {f"d{i}": [1, 0, 0] for i in range(20)}}
    # the step off: one document in four loses its one right answer
    without = {"bc5cdr:dev (T)": {f"d{i}": [0, 0, 1] if i % 4 == 0 else [1, 0, 0]
                                  for i in range(20)}}
    cell = gain_interval(every, without)
    gain, interval = cell.split(" ", 1)
    assert float(gain) == pytest.approx(1 - 30 / 35, abs=1e-4)  # F1 1.0 against 2·15/35
    low, high = (float(x) for x in interval.strip("[]").split(", "))
    assert 0 < low < float(gain) < high
    assert gain_interval({}, without) == ""  # a result written before the counts: no cell


def test_dev_table_scores_its_corpora_with_names_from_training_splits(annotator, monkeypatch,
                                                                      tmp_path):
    import data_tools.registry
    import e2e_linker.collective.loading

    names = []
    monkeypatch.setattr(e2e_linker.collective.loading, "load_annotator", lambda s: annotator)
    monkeypatch.setattr(accuracy_ablation, "model_with_names_from",
                        lambda corpora, *a, **k: names.append(corpora))
    monkeypatch.setattr(data_tools.registry, "load_kb",
                        lambda name: SimpleNamespace(resolve=str.upper))
    monkeypatch.setattr(accuracy_ablation, "gold_of", lambda spec, n: synthetic_docs(2))
    out = tmp_path / "out"
    assert accuracy_ablation.main(["--dev-table", "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    assert [c["corpus"] for c in result["corpora"]] == list(DEV_TABLE)
    assert names == [list(FAIR_NAMES)]
    with pytest.raises(SystemExit):
        accuracy_ablation.main(["--dev-table", "--split", "test", "--out", str(out)])
