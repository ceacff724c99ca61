"""`linker annotate` end to end with a tiny model directory and a TSV KB."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from data_tools.formats import read_documents, write_documents
from e2e_linker.cli import main
from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.collective.model_kb import assemble_kb, save_model_kb
from tests.helpers.synthetic import CHEMICALS, DISEASES, synthetic_docs
from tests.helpers.tiny import tiny_encoder_dir


@pytest.fixture()
def model_dir(tmp_path):
    kb_file = tmp_path / "kb.tsv"
    rows = [f"{cid}\t{names[0]}\t{'|'.join(names[1:])}\t{t}"
            for table, t in ((CHEMICALS, "Chemical"), (DISEASES, "Disease"))
            for cid, names in table.items()]
    kb_file.write_text("\n".join(rows) + "\n")
    spec = f"tsv:{kb_file}"
    tiny = tiny_encoder_dir(tmp_path / "tiny")
    config = LinkerConfig(encoder=str(tiny), max_length=64, shared_encoder=False,
                          entity_encoder=str(tiny), freeze_entity_encoder=True,
                          entity_pooling="mean", kb=spec, threshold=0.0)
    model = CollectiveLinker.from_encoder(config)
    out = tmp_path / "model"
    kb = assemble_kb(spec)
    model.save(out, kb_manifest=save_model_kb(out, spec, None, kb))
    return out, kb_file


def test_annotate_bioc_preserves_everything(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    docs = synthetic_docs(6)
    write_documents(docs, tmp_path / "in.xml")
    result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.xml"), "-o",
                                       str(tmp_path / "out.xml"), "--model", str(directory)])
    assert result.exit_code == 0, result.output
    out = list(read_documents(tmp_path / "out.xml"))
    assert [d.id for d in out] == [d.id for d in docs]
    for before, after in zip(docs, out, strict=True):
        assert [p.text for p in after.passages] == [p.text for p in before.passages]
        gold = [(a.start, a.end) for a in before.annotations]
        assert [(a.start, a.end) for a in after.annotations if a.infons.get("annotator") != "e2e_linker"] == gold
        predicted = [a for a in after.annotations if a.infons.get("annotator") == "e2e_linker"]
        assert predicted and all(a.mention_score is not None for a in predicted)
    # the KB vectors were cached on the first run
    assert any((tmp_path / "cache").rglob("vectors.npy"))


def test_changed_kb_is_refused(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, kb_file = model_dir
    kb_file.write_text(kb_file.read_text() + "X1\tnew thing\t\tChemical\n")
    write_documents(synthetic_docs(1), tmp_path / "in.txt")
    result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.txt"), "-o",
                                       str(tmp_path / "o.txt"), "--model", str(directory)])
    assert result.exit_code == 2 and "differs from the one the model was built with" in result.output
    assert not (tmp_path / "o.txt").exists()


def test_pickle_checkpoint_is_refused(model_dir, tmp_path):
    directory, _ = model_dir
    (directory / "pytorch_model.bin").write_bytes(b"not really a pickle")
    write_documents(synthetic_docs(1), tmp_path / "in.txt")
    result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.txt"), "-o",
                                       str(tmp_path / "o.txt"), "--model", str(directory)])
    assert result.exit_code == 2 and "pickle" in result.output


def test_export_writes_fp16_and_a_loadable_model(model_dir, tmp_path):
    import json

    from safetensors import safe_open

    directory, kb_file = model_dir
    (directory / "train_config.json").write_text(json.dumps({"kb": f"tsv:{kb_file}",
                                                             "kb_corpus_names": []}))
    out = tmp_path / "exported"
    result = CliRunner().invoke(main, ["export", str(directory), str(out)])
    assert result.exit_code == 0, result.output
    with safe_open(str(out / "encoder" / "model.safetensors"), "pt") as handle:
        key = next(iter(handle.keys()))
        assert str(handle.get_tensor(key).dtype) == "torch.float16"
    model = CollectiveLinker.load(out)
    assert next(model.encoder.parameters()).dtype.is_floating_point
    assert json.loads((out / "kb_manifest.json").read_text())["concepts"] == 8
