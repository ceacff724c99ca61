"""eval.models: model directories assembled from the parts of two by links."""

from __future__ import annotations

from pathlib import Path

from eval.models import model_with_packed_index_of


def test_a_model_takes_another_models_packed_index_and_keeps_everything_else(tmp_path):
    model, shipped = tmp_path / "model", tmp_path / "shipped"
    for folder, files in ((model, ("linker_config.json", "kb_manifest.json",
                                   "kb_index.safetensors")),
                          (shipped, ("linker_config.json", "kb_index.safetensors"))):
        folder.mkdir()
        for name in files:
            (folder / name).write_text(f"{folder.name}/{name}")
    out = model_with_packed_index_of(model, tmp_path / "out", shipped)
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "linker_config.json": "model/linker_config.json",
        "kb_manifest.json": "model/kb_manifest.json",
        "kb_index.safetensors": "shipped/kb_index.safetensors"}


def test_a_probe_reads_an_untrained_entry_past_the_models_own_tags(tmp_path):
    import dataclasses
    import json

    import pytest

    from e2e_linker.collective.guidelines import tag_token
    from e2e_linker.collective.model import LinkerConfig
    from eval.models import model_with_probe_tag

    def model_dir(name: str, **config) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        data = dataclasses.asdict(LinkerConfig(**config))
        (folder / "linker_config.json").write_text(json.dumps(data))
        (folder / "heads.safetensors").write_text("weights")
        return folder

    untagged = model_dir("untagged")
    out = model_with_probe_tag(untagged, tmp_path / "probe", 2)
    config = LinkerConfig.from_dict(json.loads((out / "linker_config.json").read_text()))
    assert config.guidelines == ["noise_probe_1", "noise_probe_2"]
    assert config.default_guideline == "noise_probe_2"
    assert tag_token(config.guidelines.index(config.default_guideline)) == "[unused2]"
    # the weights are the model's own file; its config is left as it was
    assert (out / "heads.safetensors").is_symlink()
    assert (out / "heads.safetensors").read_text() == "weights"
    assert "noise_probe" not in (untagged / "linker_config.json").read_text()

    tagged = model_dir("tagged", guidelines=["biored", "ncbi_disease"],
                       default_guideline="biored")
    config = LinkerConfig.from_dict(json.loads(
        (model_with_probe_tag(tagged, tmp_path / "probe_tagged", 1)
         / "linker_config.json").read_text()))
    assert config.guidelines == ["biored", "ncbi_disease", "noise_probe_1"]
    assert tag_token(config.guidelines.index(config.default_guideline)) == "[unused3]"
    with pytest.raises(ValueError, match="start at 1"):
        model_with_probe_tag(tagged, tmp_path / "probe_zero", 0)
