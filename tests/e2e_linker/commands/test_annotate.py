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


# ---- plain text in, mentions out ----------------------------------------------------------

TEXT = "Café patients on aspirin 🙂 had nausea.\n\nαβ: ibuprofen and headache.\n"


def _jsonl(output: str) -> list[dict]:
    import json

    return [json.loads(line) for line in output.splitlines()]


def _annotate(directory, *args, input=None):
    return CliRunner().invoke(main, ["annotate", *map(str, args), "--model", str(directory),
                                     "--index", "exact"], input=input)


def test_a_txt_file_is_one_document_and_jsonl_has_exact_offsets(model_dir, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    (tmp_path / "notes.txt").write_text(TEXT, encoding="utf-8")
    result = _annotate(directory, tmp_path / "notes.txt", "-o", tmp_path / "out.mentions",
                       "--format", "jsonl")
    assert result.exit_code == 0, result.output
    rows = _jsonl((tmp_path / "out.mentions").read_text(encoding="utf-8"))
    assert rows and {r["document"] for r in rows} == {"notes"}
    text = TEXT.rstrip("\n")
    assert all(text[r["start"]:r["end"]] == r["text"] for r in rows)
    assert any(r["start"] > text.index("🙂") for r in rows)
    names = {"C001": "aspirin", "C002": "ibuprofen", "D001": "headache", "D002": "nausea"}
    linked = [r for r in rows if r["concept_id"] in names]
    assert linked and all(r["concept_name"] == names[r["concept_id"]] for r in linked)
    assert set(rows[0]) >= {"document", "start", "end", "text", "type", "concept_id",
                            "mention_score", "link_score"}
    # the same text read as PubTator-free plain text into BioC keeps the whole text
    result = _annotate(directory, tmp_path / "notes.txt", "-o", tmp_path / "out.xml")
    assert result.exit_code == 0, result.output
    [doc] = read_documents(tmp_path / "out.xml")
    assert doc.id == "notes" and doc.text == text
    assert [(a.start, a.end) for a in doc.annotations] == [(r["start"], r["end"]) for r in rows]


def test_lines_make_one_document_per_non_blank_line(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    (tmp_path / "notes.txt").write_text(TEXT, encoding="utf-8")
    result = _annotate(directory, tmp_path / "notes.txt", "--lines", "-o", "-")
    assert result.exit_code == 0, result.output
    rows = _jsonl(result.stdout)
    lines = TEXT.split("\n")
    assert {r["document"] for r in rows} == {"notes-1", "notes-3"}
    for r in rows:
        line = lines[int(r["document"].rsplit("-", 1)[1]) - 1]
        assert line[r["start"]:r["end"]] == r["text"]
    # --lines on something that is not plain text is refused, in one line
    write_documents(synthetic_docs(1), tmp_path / "corpus.xml")
    result = _annotate(directory, tmp_path / "corpus.xml", "--lines", "-o", "-")
    assert result.exit_code == 2 and "--lines reads plain text" in result.output


def test_stdin_to_stdout_holds_only_the_output(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    result = _annotate(directory, "-", "-o", "-", input=TEXT.encode("utf-8"))
    assert result.exit_code == 0, result.output
    rows = _jsonl(result.stdout)  # every stdout line is JSON: notes went to stderr
    assert rows and {r["document"] for r in rows} == {"stdin"}
    assert all(TEXT[r["start"]:r["end"]] == r["text"] for r in rows)
    assert "mentions found" in result.stderr and "mentions found" not in result.stdout
    # a BioC document on stdin is read as BioC; -o - takes any format
    write_documents(synthetic_docs(2), tmp_path / "in.xml")
    result = _annotate(directory, "-", "-o", "-", "--format", "pubtator",
                       input=(tmp_path / "in.xml").read_bytes())
    assert result.exit_code == 0, result.output
    (tmp_path / "back.pubtator").write_text(result.stdout, encoding="utf-8")
    assert [d.id for d in read_documents(tmp_path / "back.pubtator")] == \
        [d.id for d in synthetic_docs(2)]


def test_jsonl_is_refused_for_shard_directories(model_dir, tmp_path):
    directory, _ = model_dir
    (tmp_path / "notes.txt").write_text(TEXT, encoding="utf-8")
    result = _annotate(directory, tmp_path / "notes.txt", "-o", tmp_path / "shards",
                       "--format", "jsonl")
    assert result.exit_code == 2 and "not a shard directory" in result.output


def test_the_manifests_settings_read_back_as_they_were_written():
    """A shard directory's manifest is JSON: the settings it records must compare equal to
    the same run's settings after the round trip, or ``--resume`` refuses a run with
    ``--types`` or name-only types as "different settings"."""
    import json

    from e2e_linker.collective.model import LinkerConfig
    from e2e_linker.collective.settings import AnnotateSettings
    from e2e_linker.commands.annotate import run_settings

    config = LinkerConfig(types=["Chemical", "Gene"], lexical_types=["Gene"])
    record = run_settings(AnnotateSettings(types="Chemical").for_model(config))
    assert json.loads(json.dumps(record)) == record
    assert record["types"] == ["Chemical"] and record["lexical_types"] == ["Gene"]
