"""eval.paired_bootstrap: per-document strict counts, and paired resamples of documents."""

from __future__ import annotations

import json

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.errors import UserError
from e2e_linker.scoring import score
from eval import paired_bootstrap as pb

TEXT = "IL-8 and aspirin raised TNF in asthma patients."


def _doc(doc_id: str, spans: list[tuple[int, int, str, str]]) -> Document:
    doc = Document(doc_id, [Passage(0, TEXT, {})])
    for n, (start, end, type_, cid) in enumerate(spans):
        doc.add_annotation(Annotation(start, end, TEXT[start:end], type_, [cid], id=str(n)))
    return doc


def test_per_document_counts_sum_to_the_corpus_counts():
    gold = [_doc("1", [(9, 16, "Chemical", "D001241"), (31, 37, "Disease", "D001249")]),
            _doc("2", [(9, 16, "Chemical", "D001241")]),
            _doc("3", [(31, 37, "Disease", "D001249")])]
    pred = [_doc("1", [(9, 16, "Chemical", "D001241"), (31, 37, "Disease", "D000001")]),
            _doc("2", [(9, 16, "Chemical", "D001241"), (24, 27, "Chemical", "D0")])]
    counts = pb.document_counts(gold, pred)
    assert counts == {"1": [1, 1, 1], "2": [1, 1, 0], "3": [0, 0, 1]}  # "3": not predicted
    report = score(gold, pred, "strict")
    assert np.sum(list(counts.values()), axis=0).tolist() == [report.tp, report.fp, report.fn]
    assert pb.micro_f1(np.array([2, 2, 2])) == pytest.approx(report.f1)
    assert pb.micro_f1(np.array([0, 0, 0])) == 0.0


def _run(per_doc: list[list[int]], corpus: str = "c:dev", label: str = "c:dev (T)") -> dict:
    return {label: {f"{corpus}-{i}": c for i, c in enumerate(per_doc)}}


def test_identical_runs_differ_by_nothing_in_every_resample():
    run = _run([[1, 0, 1], [2, 1, 0], [0, 1, 1]] * 5)
    row = pb.paired_bootstrap(run, run, samples=500)["c:dev (T)"]
    assert (row["delta"], row["low"], row["high"], row["equal"]) == (0.0, 0.0, 0.0, 1.0)
    assert pb.verdict(row) == "within sampling"


def test_a_run_better_on_every_document_is_outside_sampling_and_one_document_is_not():
    a = _run([[1, 1, 1]] * 30)
    b = _run([[2, 0, 0]] * 30)
    row = pb.paired_bootstrap(a, b, samples=500)["c:dev (T)"]
    assert row["delta"] == pytest.approx(0.5) and row["low"] > 0 and row["b_above"] == 1.0
    assert pb.verdict(row) == "B above A"
    assert pb.verdict(pb.paired_bootstrap(b, a, samples=500)["c:dev (T)"]) == "B below A"
    # the same gain made by one document of thirty: another draw may leave it out
    one = _run([[5, 0, 0]] + [[1, 0, 0]] * 29)
    other = _run([[0, 0, 5]] + [[1, 0, 0]] * 29)
    row = pb.paired_bootstrap(other, one, samples=2000)["c:dev (T)"]
    assert row["delta"] > 0 and pb.verdict(row) == "within sampling"


def test_rows_of_one_corpus_share_its_draw_and_the_combined_score_is_their_mean():
    a, b = _run([[1, 1, 1], [2, 0, 1], [0, 1, 0]] * 4), _run([[2, 0, 1], [1, 1, 1], [1, 0, 0]] * 4)
    twice_a = {**a, "c:dev (Gene)": a["c:dev (T)"]}
    twice_b = {**b, "c:dev (Gene)": b["c:dev (T)"]}
    out = pb.paired_bootstrap(twice_a, twice_b, samples=300)
    # the same counts under two labels, drawn once: the mean of the two equals either
    assert (out[pb.COMBINED]["low"], out[pb.COMBINED]["high"]) == \
        (out["c:dev (T)"]["low"], out["c:dev (T)"]["high"])
    assert out[pb.COMBINED]["documents"] == 12  # one corpus, counted once
    other = {**a, **_run([[1, 0, 0]] * 5, "d:dev", "d:dev (T)")}
    assert pb.paired_bootstrap(other, {**b, **_run([[1, 0, 0]] * 5, "d:dev", "d:dev (T)")},
                               samples=10)[pb.COMBINED]["documents"] == 17


def test_runs_over_different_documents_or_without_counts_are_refused():
    with pytest.raises(UserError, match="different documents"):
        pb.paired_bootstrap(_run([[1, 0, 0]] * 3), _run([[1, 0, 0]] * 4), samples=10)
    with pytest.raises(UserError, match="no dev-table row in common"):
        pb.paired_bootstrap(_run([[1, 0, 0]]), _run([[1, 0, 0]], label="x"), samples=10)
    with pytest.raises(UserError, match="rerun the command"):
        pb.by_document({"rows": [{"corpus": "c:dev", "scores": {}}]})


def test_main_compares_two_dev_table_results_and_writes_the_table(tmp_path, capsys):
    def result(per_doc):
        return {"command": "python -m eval.ood_dev", "rows": [
            {"corpus": "c:dev", "strict_by_document": _run(per_doc)},
            {"corpus": "d:dev", "strict_by_document": _run([[1, 0, 0]] * 4, "d:dev",
                                                           "d:dev (T)")}]}
    paths = []
    for name, per_doc in (("a", [[1, 1, 1]] * 10), ("b", [[2, 0, 0]] * 10)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(result(per_doc)))
        paths.append(str(path))
    out = tmp_path / "out"
    assert pb.main([*paths, "--samples", "200", "--out", str(out)]) == 0
    written = json.loads((out / "results.json").read_text())
    assert written["rows"]["c:dev (T)"]["delta"] == 0.5
    assert written["rows"]["d:dev (T)"]["delta"] == 0.0
    assert written["rows"][pb.COMBINED]["delta"] == 0.25
    table = (out / "results.md").read_text()
    assert "| c:dev (T) | 10 | 0.5000 | 1.0000 | +0.5000 |" in table
    assert table.splitlines()[-1].startswith("| combined | 14 |")
    assert "B above A" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        pb.main([*paths, "--samples", "0"])


def test_a_missing_result_or_one_without_counts_is_one_line_and_exit_2(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"rows": [{"corpus": "c:dev", "scores": {}}]}))
    for paths in ([str(tmp_path / "missing.json"), str(old)], [str(old), str(old)]):
        with pytest.raises(SystemExit) as stopped:
            pb.main(paths)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert f"error: {paths[0]}: " in err.strip().splitlines()[-1]
    assert not (tmp_path / "results.json").exists()
