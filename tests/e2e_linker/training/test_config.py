"""``linker train`` configuration: YAML in, typos and malformed files refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_linker.collective.model import LinkerConfig
from e2e_linker.errors import UserError
from e2e_linker.training.config import TrainConfig, read_yaml_mapping, reject_unknown_keys

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def test_yaml_with_a_model_section(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("epochs: 2\ntrain: [bc5cdr:train, bc5cdr:dev]\nmodel:\n  threshold: 0.4\n")
    config = TrainConfig.from_yaml(path)
    assert config.epochs == 2 and config.train == ["bc5cdr:train", "bc5cdr:dev"]
    assert isinstance(config.model, LinkerConfig) and config.model.threshold == 0.4
    assert config.lr == TrainConfig().lr  # unset keys keep their defaults
    again = TrainConfig.from_dict(config.to_dict())
    assert again == config


def test_the_shipped_config_parses():
    config = TrainConfig.from_yaml(CONFIGS / "bc5cdr.yaml")
    assert config.kb and config.train


@pytest.mark.parametrize("content,message", [
    ("epochs: 2\nepoch: 3\nlearning_rate: 1\n", "unknown keys epoch, learning_rate"),
    ("model:\n  treshold: 0.4\n", "unknown model config keys: treshold"),
    ("- a\n- b\n", "expected a mapping of options"),
    ("epochs: [1\n", "not valid YAML"),
])
def test_bad_configs_are_user_errors(tmp_path, content, message):
    path = tmp_path / "train.yaml"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        TrainConfig.from_yaml(path)


def test_an_empty_file_is_an_empty_mapping_and_unknown_keys_name_the_source(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert read_yaml_mapping(path) == {}
    assert TrainConfig.from_yaml(path) == TrainConfig()
    with pytest.raises(UserError, match="^cli: unknown keys zz$"):
        reject_unknown_keys(TrainConfig, {"zz": 1, "epochs": 1}, "cli")
