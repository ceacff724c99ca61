"""The collective model directory: the KB manifest, activation statistics, the default model."""

from __future__ import annotations

import json

import pytest
import torch

from e2e_linker.collective import model_dir
from e2e_linker.collective.model_dir import (
    CONFIG_FILE,
    MANIFEST_FILE,
    STATS_FILE,
    load_stats,
    read_manifest,
    save_stats,
)
from e2e_linker.errors import UserError


def test_read_manifest_is_empty_without_a_file_and_the_json_with_one(tmp_path):
    assert read_manifest(tmp_path) == {}
    manifest = {"kb": "tsv:/somewhere/kb.tsv", "kb_hash": "ab" * 32, "concepts": 3,
                "names": 5, "extra_names": None}
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    assert read_manifest(tmp_path) == manifest
    assert read_manifest(str(tmp_path)) == manifest  # a str works as well as a Path


def test_stats_round_trip_exactly(tmp_path):
    assert load_stats(tmp_path) is None
    stats = {"encoder.layer.0.attention.self.query": torch.tensor([0.5, 2.0, 7.25]),
             # a transposed view is not contiguous: safetensors needs the copy save_stats makes
             "encoder.layer.0.output.dense": torch.arange(6, dtype=torch.float32).reshape(2, 3).T}
    path = save_stats(stats, tmp_path)
    assert path == tmp_path / STATS_FILE and path.is_file()
    loaded = load_stats(tmp_path)
    assert loaded is not None and sorted(loaded) == sorted(stats)
    for name, value in stats.items():
        assert torch.equal(loaded[name], value)


def test_default_linker_dir_names_the_fix_when_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(model_dir, "DEFAULT_MODEL_DIR", tmp_path / "absent")
    with pytest.raises(UserError, match="--model"):
        model_dir.default_linker_dir()
    # a folder without the config file is not a model either
    (tmp_path / "absent").mkdir()
    with pytest.raises(UserError, match="no embedded default model"):
        model_dir.default_linker_dir()
    (tmp_path / "absent" / CONFIG_FILE).write_text("{}")
    assert model_dir.default_linker_dir() == tmp_path / "absent"
