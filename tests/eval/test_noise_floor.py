"""eval.noise_floor: each probe a whole dev-table run of its own model, each row's spread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import noise_floor


def test_each_rows_differences_from_the_model_with_their_mean_spread_and_largest():
    base = {"a": 0.75, "combined": 0.70}
    spread = noise_floor.row_spread(base, [{"a": 0.76, "combined": 0.70},
                                           {"a": 0.73, "combined": 0.71}])
    assert spread["a"]["deltas"] == [0.01, -0.02]
    assert spread["a"]["mean"] == -0.005 and spread["a"]["largest"] == -0.02
    assert spread["a"]["sd"] == pytest.approx(0.0212, abs=1e-4)
    assert noise_floor.row_spread(base, [{"a": 0.75, "combined": 0.7}])["a"]["sd"] == 0.0


def test_main_scores_the_model_then_one_probe_model_each(tmp_path, monkeypatch):
    seen = []

    def scores(model, corpora, out):
        config = json.loads((model / "linker_config.json").read_text()) if model else {}
        seen.append(config.get("default_guideline"))
        return {"ncbi_disease:dev (Disease)": 0.75 + 0.01 * len(seen), "combined": 0.7}

    model = tmp_path / "model"
    model.mkdir()
    (model / "linker_config.json").write_text(json.dumps({"types": ["Disease"]}))
    monkeypatch.setattr(noise_floor, "dev_table_scores", scores)
    out = tmp_path / "out"
    assert noise_floor.main(["--model", str(model), "--probes", "2",
                             "--corpora", "ncbi_disease:dev", "--out", str(out)]) == 0
    assert seen == [None, "noise_probe_1", "noise_probe_2"]
    result = json.loads((out / "results.json").read_text())
    assert result["rows"]["ncbi_disease:dev (Disease)"]["deltas"] == [0.01, 0.02]
    table = Path(out / "results.md").read_text()
    assert "| ncbi_disease:dev (Disease) | 0.7600 | +0.0100 | +0.0200 |" in table


def test_no_probe_is_refused():
    with pytest.raises(SystemExit):
        noise_floor.main(["--probes", "0"])
