"""`linker export`: a run packaged as a model directory, optionally interpolated with the model
it started from, with a record of how it was made."""

from __future__ import annotations

import json

import torch
from click.testing import CliRunner

from e2e_linker.cli import main
from e2e_linker.collective.model import CollectiveLinker
from tests.helpers.tiny_linker import tiny_linker_dir


def test_an_export_interpolated_with_its_start_sits_between_the_two(tmp_path):
    start_dir, kb_file = tiny_linker_dir(tmp_path / "start")
    run = tmp_path / "run"
    tuned = CollectiveLinker.load(start_dir)
    with torch.no_grad():
        tuned.span_scorer.proj.weight.add_(1.0)
    tuned.save(run)
    (run / "train_config.json").write_text(json.dumps({"kb": f"tsv:{kb_file}"}))
    (tmp_path / "training_summary.json").write_text(json.dumps({"best": {"epoch": 3}}))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(run), str(out), "--no-half",
                                       "--interpolate-with", str(start_dir),
                                       "--run-share", "0.25"])
    assert result.exit_code == 0, result.output
    exported = CollectiveLinker.load(out)
    start = CollectiveLinker.load(start_dir)
    moved = exported.span_scorer.proj.weight - start.span_scorer.proj.weight
    assert torch.allclose(moved, torch.full_like(moved, 0.25), atol=1e-6)
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["best"] == {"epoch": 3}  # the run folder's summary, one level up
    assert summary["export"]["run_share"] == 0.25
    assert summary["export"]["interpolate_with"] == str(start_dir)
    refused = CliRunner().invoke(main, ["export", str(run), str(tmp_path / "bad"),
                                        "--interpolate-with", str(start_dir),
                                        "--run-share", "2"])
    assert refused.exit_code != 0 and "--run-share" in refused.output
    assert "warning" not in result.output  # the same guidelines (none): nothing to say


def test_a_tagged_run_mixed_with_an_untagged_model_is_exported_with_a_warning(tmp_path):
    start_dir, kb_file = tiny_linker_dir(tmp_path / "start")
    run = tmp_path / "run"
    tuned = CollectiveLinker.load(start_dir)
    tuned.config.guidelines, tuned.config.default_guideline = ["biored"], "biored"
    tuned.save(run)
    (run / "train_config.json").write_text(json.dumps({"kb": f"tsv:{kb_file}"}))
    result = CliRunner().invoke(main, ["export", str(run), str(tmp_path / "out"), "--no-half",
                                       "--interpolate-with", str(start_dir),
                                       "--run-share", "0.5"])
    assert result.exit_code == 0, result.output
    assert "warning: the run reads guideline tags (biored; default biored)" in result.output
    assert CollectiveLinker.load(tmp_path / "out").config.default_guideline == "biored"
