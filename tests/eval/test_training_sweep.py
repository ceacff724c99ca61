"""eval.training_sweep: variants parsed and checked before training, finished runs read back
(not retrained), a run finished with another config refused, seed spread from seed-only rows."""

from __future__ import annotations

import json

import pytest
import yaml

from e2e_linker.errors import UserError
from e2e_linker.training.config import TrainConfig
from eval import training_sweep


def _history(scores: list[float]) -> list[dict]:
    return [{"epoch": i + 1, "threshold": 0.5, "strict_f1": s, "mention_f1": s + 0.1}
            for i, s in enumerate(scores)]


def test_parse_variant_reads_numbers_as_numbers():
    assert training_sweep.parse_variant("base") == ("base", {})
    name, overrides = training_sweep.parse_variant("fast:lr=1e-4,n_hard=20,seed=7")
    assert name == "fast"
    assert overrides == {"lr": 1e-4, "n_hard": 20, "seed": 7}
    assert isinstance(overrides["lr"], float)
    with pytest.raises(SystemExit):
        training_sweep.parse_variant("bad name:lr=1")
    with pytest.raises(SystemExit):
        training_sweep.parse_variant("x:lr")


def test_misspelt_key_stops_before_training(tmp_path):
    with pytest.raises(UserError, match="n_hrad"):
        training_sweep.variant_config({}, {"n_hrad": 5}, 2, tmp_path / "x")


@pytest.fixture
def fake_training(monkeypatch):
    """linker train replaced by a writer of training_summary.json: scores by learning rate."""
    calls = []

    def train_variant(config_path, run):
        calls.append(run.name)
        config = yaml.safe_load(config_path.read_text())
        cfg = TrainConfig.from_dict(config).to_dict()
        cfg["model"]["threshold"] = 0.3  # as linker train saves it: the γ it chose
        base = 0.7 + (0.01 if config["lr"] > 5e-5 else 0.0) + 0.001 * (config["seed"] - 13)
        run.mkdir(parents=True, exist_ok=True)
        scores = [base - 0.05 * (cfg["epochs"] - 1 - e) for e in range(cfg["epochs"])]
        (run / training_sweep.SUMMARY).write_text(json.dumps(
            {"best": {}, "history": _history(scores), "config": cfg}))
        return 3.0

    monkeypatch.setattr(training_sweep, "train_variant", train_variant)
    return calls


def test_sweep_trains_each_variant_once_and_tabulates(tmp_path, fake_training):
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"lr": 5e-5, "seed": 13}))
    argv = ["--config", str(base), "--epochs", "2", "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out"), "--variant", "base", "--variant", "seed15:seed=15",
            "--variant", "lr1e-4:lr=1e-4"]
    assert training_sweep.main(argv) == 0
    assert fake_training == ["base", "seed15", "lr1e-4"]
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = {r["variant"]: r for r in result["rows"]}
    assert rows["lr1e-4"]["strict_f1"] == pytest.approx(0.71)
    assert rows["base"]["strict_by_epoch"] == [0.65, 0.7]
    assert rows["base"]["best_epoch"] == 2
    assert result["seed_spread"] == pytest.approx(0.002)  # base vs seed15, not the lr row
    assert "| lr1e-4 | lr=0.0001 |" in (tmp_path / "out" / "results.md").read_text()
    # a second invocation reads the finished runs back
    assert training_sweep.main(argv) == 0
    assert fake_training == ["base", "seed15", "lr1e-4"]


def test_run_finished_with_another_config_is_refused(tmp_path, fake_training):
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"lr": 5e-5, "seed": 13}))
    common = ["--config", str(base), "--runs", str(tmp_path / "runs"),
              "--out", str(tmp_path / "out"), "--variant", "base"]
    training_sweep.main([*common, "--epochs", "2"])
    with pytest.raises(SystemExit, match="epochs"):
        training_sweep.main([*common, "--epochs", "3"])
