"""eval.models: model directories assembled from the parts of two by links."""

from __future__ import annotations

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
