"""`linker annotate` end to end with a tiny model directory and a TSV KB."""

from __future__ import annotations

import re

import click
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
    assert result.stderr == ""  # a success is silent when no terminal watches
    loud = CliRunner().invoke(main, ["-v", "annotate", "-", "-o", "-", "--model",
                                     str(directory), "--index", "exact"],
                              input=TEXT.encode("utf-8"))
    assert loud.stdout == result.stdout  # -v: the notes go to stderr, never stdout
    assert "mentions found" in loud.stderr and "wrote 1 documents" in loud.stderr
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


def test_pubtator_output_follows_pubtator3s_columns_and_bioc_keeps_the_record(
        model_dir, tmp_path, monkeypatch):
    """With a KB of the real sources: PubTator rows give MeSH IDs with ``MESH:``, genes and
    species bare (PubTator3's columns); BioC gives the namespaced IDs with each gene's species
    as infons, the same mentions; input annotations keep their IDs as written."""
    from data_tools.formats.namespaces import comparable_id
    from tests.helpers.namespaced_kb import RAT, RAT_NAME, namespaced_kb_spec

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    docs = synthetic_docs(4)
    write_documents(docs, tmp_path / "in.txt")
    spec = namespaced_kb_spec(tmp_path)
    for name in ("out.txt", "out.xml"):
        result = _annotate(directory, tmp_path / "in.txt", "-o", tmp_path / name,
                           "--format", "pubtator" if name == "out.txt" else "bioc",
                           "--kb", spec)
        assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in (tmp_path / "out.txt").read_text().splitlines()
            if line.count("\t") >= 5]
    ids = [row[5] for row in rows]
    gold = {(d.id, a.start, a.end, a.concept_id) for d in docs for a in d.annotations}
    predicted = [i for row, i in zip(rows, ids, strict=True)
                 if (row[0], int(row[1]), int(row[2]), i) not in gold]
    assert any(i.startswith("MESH:D") for i in predicted)
    assert any(i.isdigit() for i in predicted)  # genes (and species) bare
    assert not any(i.startswith(("NCBIGene:", "NCBITaxon:")) for i in ids)
    bioc = [a for d in read_documents(tmp_path / "out.xml") for a in d.annotations
            if a.infons.get("annotator") == "e2e_linker"]
    genes = [a for a in bioc if a.concept_ids[0].startswith("NCBIGene:")]
    assert genes and all((a.infons["species"], a.infons["species_name"]) == (RAT, RAT_NAME)
                         for a in genes)
    assert sorted(comparable_id(i) for i in predicted) == \
        sorted(comparable_id(a.concept_id) for a in bioc)
    # the input's own annotations keep their IDs (C001, D001...) in both
    assert {(d.id, a.start, a.end, a.concept_id) for d in read_documents(tmp_path / "out.xml")
            for a in d.annotations if a.infons.get("annotator") != "e2e_linker"} == gold


# ---- options: --input-format, ranges, the help -------------------------------------------

def test_input_format_reads_every_input_as_the_format_given(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    notes = tmp_path / "notes.dat"  # a name that tells no format
    notes.write_text(TEXT, encoding="utf-8")
    unknown = _annotate(directory, notes, "-o", "-")
    assert unknown.exit_code == 2 and "cannot tell the format" in unknown.stderr
    lines = _annotate(directory, notes, "--input-format", "text-lines", "-o", "-")
    assert lines.exit_code == 0, lines.output
    assert {r["document"] for r in _jsonl(lines.stdout)} == {"notes.dat-1", "notes.dat-3"}
    whole = _annotate(directory, notes, "--input-format", "text", "-o", "-")
    assert whole.exit_code == 0, whole.output
    assert {r["document"] for r in _jsonl(whole.stdout)} == {"notes.dat"}
    # the hidden --lines is --input-format text-lines
    (tmp_path / "notes.txt").write_text(TEXT, encoding="utf-8")
    assert _annotate(directory, tmp_path / "notes.txt", "--lines", "-o", "-").stdout == \
        _annotate(directory, tmp_path / "notes.txt", "--input-format", "text-lines", "-o",
                  "-").stdout
    # a format that does not fit, or two that disagree: one line, exit 2
    as_pubtator = _annotate(directory, notes, "--input-format", "pubtator", "-o", "-")
    assert as_pubtator.exit_code == 2 and len(as_pubtator.stderr.splitlines()) == 1
    both = _annotate(directory, notes, "--lines", "--input-format", "bioc", "-o", "-")
    assert both.exit_code == 2 and "--lines is --input-format text-lines" in both.stderr
    write_documents(synthetic_docs(1), tmp_path / "corpus.xml")
    xml = _annotate(directory, tmp_path / "corpus.xml", "--input-format", "text-lines",
                    "-o", "-")
    assert xml.exit_code == 2 and "--input-format text-lines reads plain text" in xml.stderr


def test_help_groups_basic_and_advanced_options_and_shows_one_example():
    from e2e_linker.commands.annotate import BASIC_OPTIONS
    from e2e_linker.commands.annotate import command as annotate_command

    result = CliRunner().invoke(main, ["annotate", "-h"], prog_name="linker")
    assert result.exit_code == 0
    text = result.output
    basic, advanced = text.split("Basic options:")[1].split("Advanced options:")
    advanced, example = advanced.split("Example:")

    def listed(section: str) -> set[str]:
        return set(re.findall(r"^  (?:-\w, )?(--[\w-]+)", section, re.MULTILINE))

    assert {"--output", "--model", "--kb", "--format", "--input-format", "--types",
            "--threshold", "--explain", "--help"} <= listed(basic)
    assert {"--shard-size", "--num-processes", "--set", "--index", "--precision"} <= \
        listed(advanced)
    assert not listed(basic) & listed(advanced)
    assert "linker annotate - -o -" in example and example.count("linker annotate") == 1
    assert "--lines" not in text  # hidden: --input-format text-lines
    shown = [p for p in annotate_command.params
             if isinstance(p, click.Option) and not p.hidden]
    assert len(shown) <= 25  # issue 42's bound on annotate's options (--help not counted)
    assert set(BASIC_OPTIONS) <= {p.name for p in shown}


@pytest.mark.parametrize("error", [RuntimeError("scoring broke"),
                                   "user"])
def test_an_error_while_scoring_reads_the_same_with_or_without_the_overlap(
        model_dir, tmp_path, monkeypatch, error):
    """The engine scores groups in a worker thread (e2e_linker/jobs/lookahead.py); an error
    met there is the run's error as without the overlap: the same line, the same exit code."""
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.errors import UserError
    from e2e_linker.jobs.lookahead import OVERLAP_VARIABLE

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    write_documents(synthetic_docs(3), tmp_path / "in.xml")
    exception = UserError("the model's heads are unreadable") if error == "user" else error

    def broken(self, chunks, floor):
        raise exception

    monkeypatch.setattr(Annotator, "score_chunks", broken)
    results = []
    for overlap in ("1", "0"):
        monkeypatch.setenv(OVERLAP_VARIABLE, overlap)
        result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.xml"), "-o",
                                           str(tmp_path / "out.xml"), "--model",
                                           str(directory)])
        results.append((result.exit_code, result.output.replace(str(tmp_path), "TMP")))
    assert results[0] == results[1]
    assert results[0][0] not in (0, None)
    assert str(exception) in results[0][1]
    assert not (tmp_path / "out.xml").exists()


def test_host_workers_give_the_bytes_of_a_run_without_them(model_dir, tmp_path, monkeypatch):
    """The annotator's second phase in forked host workers (e2e_linker/jobs/host_pool.py):
    the same output file, groups cut small so that several workers take part."""
    from e2e_linker.jobs.host_pool import WORKERS_VARIABLE

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    directory, _ = model_dir
    write_documents(synthetic_docs(7), tmp_path / "in.xml")
    outputs = []
    for workers in ("0", "2"):
        monkeypatch.setenv(WORKERS_VARIABLE, workers)
        out = tmp_path / f"out{workers}.xml"
        result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.xml"), "-o",
                                           str(out), "--model", str(directory),
                                           "--shard-size", "2"])
        assert result.exit_code == 0, result.output
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and b"<annotation" in outputs[0]
