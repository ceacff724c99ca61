"""`linker normalize` end to end on a tiny fixture with a tiny random model directory."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from data_tools.formats import read_documents, write_documents
from e2e_linker.commands.normalize import command
from e2e_linker.console import VERBOSE_ENV
from tests.helpers.synthetic import synthetic_docs, synthetic_kb


@pytest.fixture()
def model_dir(tiny_dir, tmp_path):
    import shutil

    kb_file = tmp_path / "kb.tsv"
    synthetic_kb().save(kb_file)
    directory = tmp_path / "model"
    shutil.copytree(tiny_dir, directory / "encoder")
    settings = {"pooling": "mean", "max_length": 32, "search": "O-T",
                "kb": f"kb:{kb_file}"}
    (directory / "normalizer.json").write_text(json.dumps(settings))
    return directory, kb_file


@pytest.mark.parametrize("suffix", [".xml", ".txt", ".json"])
def test_normalize_preserves_everything_and_sets_ids(model_dir, tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    docs = synthetic_docs(5)
    for doc in docs:  # hide the gold IDs
        for ann in doc.annotations:
            ann.concept_ids = []
    src, dst = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    write_documents(docs, src)
    result = CliRunner().invoke(command, [str(src), "-o", str(dst), "--model", str(directory),
                                          "--top-k", "2"])
    assert result.exit_code == 0, result.output
    gold = synthetic_docs(5)
    out = list(read_documents(dst))
    assert [d.id for d in out] == [d.id for d in gold]
    for before, after in zip(gold, out, strict=True):
        assert [(p.offset, p.text) for p in after.passages] == \
            [(p.offset, p.text) for p in before.passages]
        assert [(a.start, a.end, a.text, a.type) for a in after.annotations] == \
            [(a.start, a.end, a.text, a.type) for a in before.annotations]
        # synthetic mentions are exact KB names: a random encoder still finds them (cosine 1)
        assert [a.concept_ids for a in after.annotations] == \
            [a.concept_ids for a in before.annotations]
        if suffix != ".txt":  # PubTator has no place for scores and infons
            for ann in after.annotations:
                assert ann.link_score is not None
                assert len(ann.infons["candidates"].split(";")) == 2


def test_normalize_needs_a_kb(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    write_documents(synthetic_docs(1), tmp_path / "in.txt")
    result = CliRunner().invoke(command, [str(tmp_path / "in.txt"), "-o",
                                          str(tmp_path / "out.txt"), "--model", str(tiny_dir)])
    assert result.exit_code != 0
    assert "pass --kb" in str(result.exception)


def test_model_mentions_are_the_default_d_pool(model_dir, tmp_path, monkeypatch):
    from data_tools.documents import Annotation, Document, Passage
    from e2e_linker.normalizer.normalizer_dir import write_mentions

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    write_mentions(directory / "mentions.tsv", [("Splitting Head-Pain", "D001", "Disease")])
    settings = json.loads((directory / "normalizer.json").read_text())
    (directory / "normalizer.json").write_text(json.dumps({**settings, "search": "D-T+O-T"}))
    text = "She had splitting head pain."
    doc = Document("7", [Passage(0, text, {"type": "title"})])
    doc.add_annotation(Annotation(8, 27, "splitting head pain", "Disease", []))
    write_documents([doc], tmp_path / "in.json")
    for flag, expected in (([], ["D001"]), (["--no-model-mentions"], None)):
        result = CliRunner().invoke(command, [str(tmp_path / "in.json"), "-o",
                                              str(tmp_path / "out.json"), "--model",
                                              str(directory), *flag])
        assert result.exit_code == 0, result.output
        ann = next(read_documents(tmp_path / "out.json")).annotations[0]
        if expected:
            assert ann.concept_ids == expected and ann.link_score == pytest.approx(1, abs=2e-3)
        else:
            assert ann.link_score < 0.999


def test_train_triplet_cli_ontology_only_with_adapter(tiny_dir, tmp_path):
    from e2e_linker.commands.train_triplet import command as train_command

    kb_file = tmp_path / "kb.tsv"
    synthetic_kb().save(kb_file)
    config = tmp_path / "triplet.yaml"
    config.write_text(f"encoder: {tiny_dir}\nkb: kb:{kb_file}\ntrain: [no/such/corpus.txt]\n"
                      "concepts_per_batch: 4\nnames_per_concept: 2\nmax_length: 16\n"
                      "lora_rank: 2\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(train_command, [str(config), "--output-dir", str(out),
                                                "--max-steps", "2", "--ontology-only"])
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "normalizer.json").read_text())
    assert settings["training_data"] == "O" and settings["steps"] == 2
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert not (out / "mentions.tsv").exists()


def test_export_normalizer_records_kb_and_rebuilds_mentions(tiny_dir, tmp_path, monkeypatch):
    from e2e_linker.commands.export_normalizer import command as export_command
    from e2e_linker.normalizer.normalizer_dir import load_model, read_mentions
    from e2e_linker.training.triplet import TripletConfig, train_triplet

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    kb = synthetic_kb()
    kb_file = tmp_path / "kb.tsv"
    kb.save(kb_file)
    cfg = TripletConfig(output_dir=str(tmp_path / "run"), encoder=str(tiny_dir), kb="trained-on",
                        max_steps=1, concepts_per_batch=2, names_per_concept=2, lora_rank=2,
                        max_length=16)
    train_triplet(cfg, kb=kb, train_docs=[], progress=False)
    corpus = tmp_path / "train.txt"
    write_documents(synthetic_docs(3), corpus)
    out = tmp_path / "shipped"
    result = CliRunner().invoke(export_command, [
        str(tmp_path / "run"), str(out), "--kb", f"kb:{kb_file}", "--mentions", str(corpus),
        "--search", "OD-T"])
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "normalizer.json").read_text())
    assert settings["kb"] == f"kb:{kb_file}" and settings["trained_kb"] == "trained-on"
    assert settings["kb_hash"] == kb.content_hash() and settings["search"] == "OD-T"
    texts = {a.text for d in synthetic_docs(3) for a in d.annotations if a.concept_ids}
    assert {t for t, _, _ in read_mentions(out / "mentions.tsv")} >= texts
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    encoder, loaded = load_model(out)
    assert loaded.search == "OD-T" and encoder.hidden_size == 32


def test_a_packed_normalizer_index_links_without_encoding_the_whole_kb(tiny_dir, tmp_path,
                                                                        monkeypatch):
    import shutil

    import numpy as np

    from e2e_linker.commands.kb import command as kb_command

    kb = synthetic_kb()
    from data_tools.kb import Concept

    for i in range(3000):
        kb.add(Concept(id=f"F{i:05d}", name=f"filler compound {i}", synonyms=[],
                       type="Chemical" if i % 2 else "Disease", source="test"))
    kb_file = tmp_path / "kb.tsv"
    kb.save(kb_file)
    directory = tmp_path / "model"
    shutil.copytree(tiny_dir, directory / "encoder")
    (directory / "normalizer.json").write_text(json.dumps(
        {"pooling": "mean", "max_length": 32, "search": "O-T", "kb": f"kb:{kb_file}"}))
    packed = CliRunner().invoke(kb_command, ["pack", "--normalizer", "--model", str(directory),
                                             "--cache-dir", str(tmp_path / "c1"),
                                             "--pq-bytes", "8", "--nlist", "16"])
    assert packed.exit_code == 0, packed.output
    assert (directory / "kb_index.safetensors").is_file()
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv(VERBOSE_ENV, "1")  # the KB index line that says which index served
    docs = synthetic_docs(5)
    for doc in docs:
        for ann in doc.annotations:
            ann.concept_ids = []
    src, dst = tmp_path / "in.json", tmp_path / "out.json"
    write_documents(docs, src)
    result = CliRunner().invoke(command, [str(src), "-o", str(dst), "--model", str(directory),
                                          "--no-lexical"])
    assert result.exit_code == 0, result.output
    assert "packed index shipped with the normalizer" in result.output
    assert [a.concept_ids for d in read_documents(dst) for a in d.annotations] == \
        [a.concept_ids for d in synthetic_docs(5) for a in d.annotations]
    (have,) = (tmp_path / "empty").rglob("*.partial-have.npy")
    assert 0 < np.load(have).sum() < len(kb.names())  # only shortlisted texts were encoded
    for flag, packed_used in (("packed", True), ("exact", False)):
        again = CliRunner().invoke(command, [str(src), "-o", str(dst), "--model", str(directory),
                                             "--no-lexical", "--index", flag])
        assert again.exit_code == 0, again.output
        assert ("packed index shipped with the normalizer" in again.output) is packed_used
        assert [a.concept_ids for d in read_documents(dst) for a in d.annotations] == \
            [a.concept_ids for d in synthetic_docs(5) for a in d.annotations]
    no_index = CliRunner().invoke(command, [str(src), "-o", str(dst), "--model", str(tiny_dir),
                                            "--kb", f"kb:{kb_file}", "--index", "packed"])
    assert "no packed KB index" in str(no_index.exception)  # a UserError: one line from `linker`


# ---- one KB with annotate: genes by name, species, no match, the record (issue 44) -----------

@pytest.fixture(scope="module")
def gene_model(tmp_path_factory):
    from tests.helpers.gene_kb import gene_linker_dir

    return gene_linker_dir(tmp_path_factory.mktemp("genes"))


def gene_docs() -> list:
    from data_tools.documents import Annotation, Document, Passage

    out = []
    for doc_id, text, spans in (
            ("1", "BRCA1 and tamoxifen in breast cancer.",
             [("BRCA1", "Gene"), ("tamoxifen", "Chemical"), ("breast cancer", "Disease")]),
            ("2", "In mice, Brca1 loss and qzxv blorft.",
             [("Brca1", "Gene"), ("qzxv blorft", "Disease"), ("mice", "Species")])):
        doc = Document(doc_id, [Passage(0, text)])
        for surface, type_ in spans:
            start = text.index(surface)
            doc.add_annotation(Annotation(start, start + len(surface), surface, type_, []))
        out.append(doc)
    return out


def run_normalize(tiny_dir, gene_model, tmp_path, *flags: str, suffix: str = ".json"):
    directory, spec = gene_model
    src, dst = tmp_path / "in.json", tmp_path / f"out{suffix}"
    write_documents(gene_docs(), src)
    result = CliRunner().invoke(command, [str(src), "-o", str(dst), "--model", str(tiny_dir),
                                          "--linker-model", str(directory), "--kb", spec,
                                          *flags])
    return result, dst


def test_genes_are_linked_by_name_with_species_and_namespaced_ids(tiny_dir, gene_model,
                                                                  tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    result, dst = run_normalize(tiny_dir, gene_model, tmp_path, "--nil-threshold", "0")
    assert result.exit_code == 0, result.output
    anns = [a for d in read_documents(dst) for a in d.annotations]
    assert [a.concept_ids for a in anns][:3] == [["NCBIGene:672"], ["MESH:D013629"],
                                                 ["MESH:D001943"]]
    # the document names mice: its Brca1 is the mouse gene, and "mice" the mouse
    assert anns[3].concept_ids == ["NCBIGene:12189"] and anns[5].concept_ids == \
        ["NCBITaxon:10090"]
    assert [(a.infons.get("species"), a.infons.get("species_name")) for a in anns[:2]] == [
        ("NCBITaxon:9606", "Homo sapiens"), (None, None)]
    assert [a.infons["concept_name"] for a in anns[:3]] == ["BRCA1", "Tamoxifen",
                                                            "Breast Neoplasms"]
    assert anns[4].concept_ids  # threshold 0: nonsense gets its best concept, as before
    # --species puts a species first where the document names none
    result, dst = run_normalize(tiny_dir, gene_model, tmp_path, "--species", "mouse")
    assert result.exit_code == 0, result.output
    assert next(read_documents(dst)).annotations[0].concept_ids == ["NCBIGene:12189"]


def test_a_mention_below_the_threshold_gets_no_concept(tiny_dir, gene_model, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    result, dst = run_normalize(tiny_dir, gene_model, tmp_path, "--nil-threshold", "0.999",
                                suffix=".txt")
    assert result.exit_code == 0, result.output
    anns = [a for d in read_documents(dst) for a in d.annotations]
    assert [a.text for a in anns if not a.concept_ids] == ["qzxv blorft"]
    assert "\tqzxv blorft\tDisease\t-1" in dst.read_text()  # PubTator's "no concept"


@pytest.mark.parametrize("flags, words", [
    (["--species", "martian"], ["unknown species 'martian'"]),
    (["--nil-threshold", "2"], ["--nil-threshold", "0<=x<=1"]),
])
def test_a_bad_species_or_threshold_is_one_line(tiny_dir, gene_model, tmp_path, monkeypatch,
                                                flags, words):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    result, dst = run_normalize(tiny_dir, gene_model, tmp_path, *flags)
    assert result.exit_code != 0
    message = str(result.exception) if result.exit_code == 1 else result.output
    assert all(w in message for w in words), message
    assert not dst.exists()


def test_the_summary_line_is_for_a_watcher_only(tiny_dir, gene_model, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    for verbose, shown in (("", False), ("1", True)):
        monkeypatch.setenv("E2E_LINKER_VERBOSE", verbose)
        result, _ = run_normalize(tiny_dir, gene_model, tmp_path, "--nil-threshold", "0.999")
        assert result.exit_code == 0, result.output
        assert ("normalized 6 mentions in 2 documents (1 with no concept, search"
                in result.stderr) is shown, result.stderr
