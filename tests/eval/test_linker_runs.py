"""eval.linker_runs: ``linker`` run as a user runs it."""

from __future__ import annotations

import json

import pytest

from eval import linker_runs


def test_scores_reads_linker_score_json():
    assert linker_runs.scores(json.dumps({"f1": 0.8})) == {"f1": 0.8}


def test_a_failing_linker_command_stops_the_evaluation(tmp_path):
    with pytest.raises(SystemExit, match="failed"):
        linker_runs.linker(["no-such-command"], tmp_path / "cache")
