"""eval.neleval_crosscheck (and eval.neleval_shim): ours and neleval's figures side by side."""

from __future__ import annotations

import json

from eval import neleval_crosscheck, neleval_shim

GOLD = ("1|t|Aspirin causes asthma.\n1|a|Rarely.\n"
        "1\t0\t7\tAspirin\tChemical\tD001241\n1\t15\t21\tasthma\tDisease\tD001249\n\n")
DNORM = "1|t|Aspirin causes asthma.\n1|a|Rarely.\n1\t15\t21\tasthma\tDisease\tD001249\n\n"
TMCHEM = "1|t|Aspirin causes asthma.\n1|a|Rarely.\n1\t0\t7\tAspirin\tChemical\tD000001\n\n"


def test_crosscheck_writes_both_scorers_figures(tmp_path, monkeypatch):
    root = tmp_path / "data" / "bc5cdr"
    (root / "baselines").mkdir(parents=True)
    (root / "CDR_TestSet.PubTator.txt").write_text(GOLD)
    (root / "baselines" / "TestSet.DNorm.PubTator.txt").write_text(DNORM)
    (root / "baselines" / "TestSet.tmChem.PubTator.txt").write_text(TMCHEM)
    monkeypatch.setattr(neleval_crosscheck, "data_dir", lambda: tmp_path / "data")
    rows = neleval_crosscheck.main(["--out", str(tmp_path / "out")])
    assert set(rows) == set(neleval_crosscheck.MODES)
    for mode, row in rows.items():
        assert row["ours"]["f1"] == row["neleval"]["fscore"], mode
    assert rows["strict"]["ours"]["f1"] == 0.5
    assert rows["mentions"]["ours"]["f1"] == 1.0
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["strict"]["neleval"]["fscore"] == 0.5
    assert "| strict |" in (tmp_path / "out" / "results.md").read_text()


def test_shim_names_a_measure_for_every_mode():
    assert set(neleval_crosscheck.MODES) <= set(neleval_shim.MEASURES)
