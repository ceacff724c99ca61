"""Issue 6's bad-input suite: every hostile file through `linker annotate`, `convert`, `score`.

Each case either gives correct output or a one-line error naming the file and document/line,
exit code 2, no traceback and no output file (nor a leftover temporary file). The model is a
tiny random one (tests/helpers/tiny_linker.py): what is tested is the corpus handling.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.formats import read_documents
from e2e_linker.cli import main
from tests.helpers.bioc_dtd import validate_bioc
from tests.helpers.hostile_inputs import CASES, GOOD_PUBTATOR, Case, materialise
from tests.helpers.tiny_linker import tiny_linker_dir

COMMANDS = ("annotate", "convert", "score")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    model, _ = tiny_linker_dir(tmp_path_factory.mktemp("tiny_linker"), threshold=0.6)
    return model


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path_factory.getbasetemp() / "kb_cache"))


def _argv(command: str, source: Path, out: Path, model: Path, *extra: str) -> list[str]:
    if command == "annotate":
        return ["annotate", str(source), "-o", str(out), "--model", str(model), *extra]
    if command == "convert":
        return ["convert", str(source), str(out), *extra]
    return ["score", str(source), str(source), "--json", *extra]


def _check_error(case: Case, stderr: str, exit_code: int, out_dir: Path) -> None:
    assert exit_code == 2, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert stderr.strip().splitlines()[-1] == errors[0]  # the error is the last word
    for part in case.error or []:
        assert part in errors[0], errors[0]
    assert list(out_dir.iterdir()) == [], "no output file, no temporary file"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case: Case, command: str, tmp_path, tiny_model):
    source = materialise(case, tmp_path / "in")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "result.xml"
    started = time.monotonic()
    result = CliRunner().invoke(main, _argv(command, source, out, tiny_model))
    elapsed = time.monotonic() - started
    for secret in case.never:
        assert secret not in result.output
    if case.limit is not None:
        assert elapsed < case.limit, f"took {elapsed:.1f}s"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: always a failure
    if case.error is not None:
        _check_error(case, result.stderr, result.exit_code, out_dir)
        return
    assert result.exit_code == 0, result.output
    if command == "score":
        assert '"f1"' in result.stdout
        return
    docs = list(read_documents(out))
    assert [d.id for d in docs] == case.doc_ids
    before = list(read_documents(source))
    for old, new in zip(before, docs, strict=True):  # nothing of the input is lost
        assert [(p.offset, p.text, p.infons) for p in new.passages] == \
            [(p.offset, p.text, p.infons) for p in old.passages]
        kept = [(a.start, a.end, a.text, a.concept_ids) for a in new.annotations
                if a.infons.get("annotator") != "e2e_linker"]
        assert kept == [(a.start, a.end, a.text, a.concept_ids) for a in old.annotations]
    assert [p.name for p in out_dir.iterdir()] == ["result.xml"]
    validate_bioc(out)


def test_text_mismatch_is_kept_with_the_real_text(tmp_path):
    case = next(c for c in CASES if c.name == "text_mismatch_at_offsets")
    source = materialise(case, tmp_path)
    result = CliRunner().invoke(main, ["convert", str(source), str(tmp_path / "o.json")])
    assert result.exit_code == 0, result.output
    (doc,) = read_documents(tmp_path / "o.json")
    (ann,) = doc.annotations
    assert (ann.text, ann.infons["text_mismatch"]) == ("Ibuprof", "Aspirin")


def test_text_bioc_xml_cannot_hold_is_one_line_error_or_skipped(tmp_path, tiny_model):
    source = tmp_path / "in.txt"
    source.write_bytes(GOOD_PUBTATOR.encode() + b"51|t|Bell\x07 title.\n51|a|Text.\n\n")
    for command in ("annotate", "convert"):
        out_dir = tmp_path / command
        out_dir.mkdir()
        result = CliRunner().invoke(main, _argv(command, source, out_dir / "o.xml", tiny_model))
        _check_error(Case("x", dict, ["document 51", "cannot be written as XML"]),
                     result.stderr, result.exit_code, out_dir)
        result = CliRunner().invoke(main, _argv(command, source, out_dir / "o.xml", tiny_model,
                                                "--on-error", "skip"))
        assert result.exit_code == 0, result.output
        assert [d.id for d in read_documents(out_dir / "o.xml")] == ["11"]
        assert "skipped: " in result.stderr and "document 51" in result.stderr
    result = CliRunner().invoke(main, _argv("convert", source, tmp_path / "o.json", tiny_model))
    assert result.exit_code == 0  # JSON can hold it
    assert list(read_documents(tmp_path / "o.json"))[1].passages[0].text == "Bell\x07 title."


MIXED = {
    "in.txt": (GOOD_PUBTATOR + "12|t|Bad one.\n12|a|Text.\n12\t0\tx\tBad\tChemical\tC1\n"
               "12\t0\t3\tBad\tChemical\tC1\n\n" + GOOD_PUBTATOR.replace("11", "13")
               + GOOD_PUBTATOR).encode(),
    "in.xml": b"<collection><source/><date/><key/>" + b"".join(
        f"<document><id>{i}</id><passage><offset>{off}</offset><text>Aspirin.</text>"
        f"</passage></document>".encode() for i, off in ((11, 0), (12, "x"), (13, 0)))
        + b"</collection>",
    "in.jsonl": b'{"id": "11", "passages": [{"offset": 0, "text": "a"}]}\n{"id": 12\n'
                b'{"id": "13", "passages": [{"offset": 0, "text": "b"}]}\n',
}


@pytest.mark.parametrize("name", sorted(MIXED))
@pytest.mark.parametrize("command", ["annotate", "convert"])
def test_on_error_skip_skips_bad_documents_and_reports_them(name, command, tmp_path, tiny_model):
    source = tmp_path / name
    source.write_bytes(MIXED[name])
    out = tmp_path / "out" / "o.json"
    result = CliRunner().invoke(main, _argv(command, source, out, tiny_model))
    assert result.exit_code == 2
    assert not out.parent.exists() or not any(out.parent.iterdir())
    assert "12" in result.stderr.strip().splitlines()[-1] or "line 2" in result.stderr
    result = CliRunner().invoke(main, _argv(command, source, out, tiny_model, "--on-error",
                                            "skip"))
    assert result.exit_code == 0, result.output
    ids = [d.id for d in read_documents(out)]
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped: ")]
    if name == "in.txt":  # the trailing repeat of 11 is a duplicate and skipped too
        assert ids == ["11", "13"] and len(skipped) == 2 and "duplicate" in skipped[1]
    else:
        assert ids == ["11", "13"] and len(skipped) == 1
    assert name in skipped[0] and ("12" in skipped[0] or "line 2" in skipped[0])
    assert "skipped" in result.stderr.strip().splitlines()[-2 if command == "annotate" else -1]


@pytest.mark.parametrize("command", COMMANDS)
def test_real_process_prints_one_line_and_leaves_nothing(command, tmp_path, tiny_model):
    """The same contract checked on a real `python -m e2e_linker` process, not CliRunner."""
    case = next(c for c in CASES if c.name == "external_entity_file")
    source = materialise(case, tmp_path / "in")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.run([sys.executable, "-m", "e2e_linker",
                           *_argv(command, source, out_dir / "o.xml", tiny_model)],
                          capture_output=True, text=True, timeout=300)
    _check_error(case, proc.stderr, proc.returncode, out_dir)
    assert "TOPSECRET" not in proc.stderr + proc.stdout


def test_bad_input_is_found_before_the_model_loads(tmp_path):
    """The input is checked first: a bad last document fails in seconds, not after the model
    (here a directory that is no model at all) and every document before it."""
    source = tmp_path / "in.txt"
    source.write_bytes(GOOD_PUBTATOR.encode() + b"12|t|T\n12|a|A\n12\t0\t1\tT\n\n")
    (tmp_path / "not_a_model").mkdir()
    result = CliRunner().invoke(main, ["annotate", str(source), "-o", str(tmp_path / "o.xml"),
                                       "--model", str(tmp_path / "not_a_model")])
    assert result.exit_code == 2
    assert "in.txt: document 12, line 8" in result.stderr.splitlines()[-1]
    result = CliRunner().invoke(main, ["annotate", str(source), "-o", str(tmp_path / "o.xml"),
                                       "--model", str(tmp_path / "not_a_model"), "--on-error",
                                       "skip"])
    assert result.exit_code == 2 and "not a linker model directory" in result.stderr


def test_document_without_passages(tmp_path, tiny_model):
    """BioC XML needs a passage per document (BioC.dtd); JSON and scoring take it as is."""
    source = tmp_path / "in.json"
    source.write_text('{"documents": [{"id": "1", "passages": [{"offset": 0, "text": "a"}]},'
                      ' {"id": "2", "passages": []}]}')
    for command in ("annotate", "convert"):
        out_dir = tmp_path / command
        out_dir.mkdir()
        result = CliRunner().invoke(main, _argv(command, source, out_dir / "o.xml", tiny_model))
        _check_error(Case("x", dict, ["in.json", "document 2", "has no passages"]),
                     result.stderr, result.exit_code, out_dir)
        result = CliRunner().invoke(main, _argv(command, source, out_dir / "o.json", tiny_model))
        assert result.exit_code == 0, result.output
        assert [len(d.passages) for d in read_documents(out_dir / "o.json")] == [1, 0]
    result = CliRunner().invoke(main, _argv("score", source, tmp_path, tiny_model))
    assert result.exit_code == 0, result.output
