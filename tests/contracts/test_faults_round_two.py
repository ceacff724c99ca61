"""Issue 47, "Nothing lost, round two": each remaining case, re-run as written, ends with the
input intact and one line on stderr with exit code 2, or in the documented behaviour.

* 5: BioC → PubTator refuses what PubTator cannot hold (naming ``--lossy``), refuses IDs that
  would break the file even with ``--lossy``, and round-trips what it holds identically;
* 8: a form feed (and ``\\v``, NEL, U+001C...) separates words for the model as a space does,
  with offsets into the original text; ordinary text tokenizes as before;
* 10: a model file of the wrong shape, a gzip body, standard input, a shard directory that
  already holds a run, ``kb info --cache-dir FILE``, annotation texts that disagree with their
  spans, and a long document are each named in one line.

A broken ``--model`` (an empty folder) proves a refusal came before the model loads: had it
loaded, that would have been the error.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.documents import Annotation, Document, Passage, Relation
from data_tools.formats import read_documents, write_documents
from e2e_linker.cli import main
from tests.helpers.tiny_linker import tiny_linker_dir

PUBTATOR = ("7|t|Cisplatin and renal and hepatic injury.\n"
            "7|a|Nothing\there.\n"  # a tab in the abstract: PubTator holds it (Linnaeus has some)
            "7\t0\t9\tCisplatin\tChemical\tMESH:D002945\n"
            "7\t14\t38\trenal and hepatic injury\tDisease\tD1|D2\trenal injury|hepatic injury\n"
            "7\t14\t19\trenal\tDisease\t-1\n"
            "7\t24\t31\thepatic\tDisease\t D015862\n"
            "7\t0\t9\tCisplatin\tChemical\n"
            "7\tCID\tMESH:D002945\tD1\n"
            "7\tAssociation\tD1\tD2\tNovel\n\n")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny model and a broken (empty) model folder."""
    root = tmp_path_factory.mktemp("round_two")
    model, _ = tiny_linker_dir(root / "tiny", threshold=0.6)
    broken = root / "broken-model"
    broken.mkdir()
    return model, broken


def _invoke(args: list[str], tmp_path: Path, **kwargs):
    return CliRunner().invoke(main, args, env={"E2E_LINKER_CACHE": str(tmp_path / "cache")},
                              **kwargs)


def _one_error_line(result) -> str:
    """Exit code 2, the error as the last line of stderr and the only error line, no
    traceback."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], result.stderr
    assert "Traceback" not in result.stderr
    return lines[-1]


def _full_text_doc(doc_id: str = "PMC1") -> Document:
    doc = Document(doc_id, [Passage(0, "A title.", {"type": "title"}),
                            Passage(9, "Line one\nline two.", {"type": "abstract"}),
                            Passage(28, "Methods.", {"type": "paragraph"})],
                   infons={"license": "CC BY"})
    doc.passages[0].annotations.append(Annotation(2, 7, "title", "Disease", ["D1"]))
    doc.relations.append(Relation("R0", {"type": "Association"}, [("0", "arg1")]))
    return doc


# ---- 5. BioC -> PubTator says what it cannot hold ------------------------------------------

def test_bioc_to_pubtator_refuses_what_it_cannot_hold_naming_lossy(tmp_path):
    source = tmp_path / "in.json"
    write_documents([_full_text_doc()], source)
    before = source.read_bytes()
    out = tmp_path / "out" / "o.txt"
    line = _one_error_line(_invoke(["convert", str(source), str(out)], tmp_path))
    assert line.startswith(f"error: {source}: document PMC1: PubTator cannot hold its ")
    for lost in ("document infons (license)", "3 passages", "line breaks in the text",
                 "relations R0", "--lossy"):
        assert lost in line, line
    assert source.read_bytes() == before and not out.exists()
    # --lossy writes what PubTator holds, as documented: offsets kept, line breaks as spaces
    result = _invoke(["convert", "--lossy", str(source), str(out)], tmp_path)
    assert result.exit_code == 0, result.output
    assert out.read_text().split("\n")[:3] == [
        "PMC1|t|A title.", "PMC1|a|Line one line two. Methods.", "PMC1\t2\t7\ttitle\tDisease\tD1"]
    help_text = _invoke(["convert", "--help"], tmp_path).output
    assert "--lossy" in help_text and "BioC -> PubTator" in help_text


@pytest.mark.parametrize("doc_id", ["a|b", "a\tb"])
def test_ids_that_would_break_pubtator_are_refused_even_lossy(tmp_path, doc_id):
    source = tmp_path / "in.json"
    write_documents([Document(doc_id, [Passage(0, "Title.", {"type": "title"})])], source)
    out = tmp_path / "o.txt"
    line = _one_error_line(_invoke(["convert", "--lossy", str(source), str(out)], tmp_path))
    assert f"document ID {doc_id!r} cannot be written as PubTator" in line
    assert not out.exists()
    doc = Document("1", [Passage(0, "Aspirin.", {"type": "title"})])
    doc.add_annotation(Annotation(0, 7, "Aspirin", "Chemical", ["D1\tD2"]))  # BioC holds it
    write_documents([doc], source)
    line = _one_error_line(_invoke(["convert", "--lossy", str(source), str(out)], tmp_path))
    assert "concept IDs ['D1\\tD2'] of the mention at 0-7 cannot be written" in line
    assert not out.exists()


def test_what_pubtator_holds_round_trips_identically(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(PUBTATOR)
    for suffix in (".xml", ".json"):
        middle = tmp_path / f"mid{suffix}"
        back = tmp_path / f"back{suffix}.txt"
        assert _invoke(["convert", str(source), str(middle)], tmp_path).exit_code == 0
        result = _invoke(["convert", str(middle), str(back)], tmp_path)  # no --lossy
        assert result.exit_code == 0, result.output
        assert back.read_bytes() == source.read_bytes()
    # and the other way: a BioC document of only what PubTator holds comes back equal
    (doc,) = read_documents(tmp_path / "mid.json")
    again = tmp_path / "again.json"
    assert _invoke(["convert", str(tmp_path / "back.json.txt"), str(again)],
                   tmp_path).exit_code == 0
    assert list(read_documents(again)) == [doc]


def test_bc5cdr_release_round_trips_and_lossy_bioc_gives_the_pubtator_release(shared_data,
                                                                              tmp_path):
    pubtator = shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"
    bioc = shared_data / "bc5cdr" / "CDR_DevelopmentSet.BioC.xml"
    out = tmp_path / "dev.txt"
    line = _one_error_line(_invoke(["convert", str(bioc), str(out)], tmp_path))
    assert "discontinuous mentions" in line and "--lossy" in line and not out.exists()
    assert _invoke(["convert", "--lossy", str(bioc), str(out)], tmp_path).exit_code == 0
    assert out.read_bytes() == pubtator.read_bytes()


def test_annotate_to_pubtator_is_lossy_as_documented_and_refuses_broken_ids_early(tiny,
                                                                                  tmp_path):
    model, broken = tiny
    source = tmp_path / "in.json"
    write_documents([_full_text_doc("PMC|1")], source)
    out = tmp_path / "o.txt"
    line = _one_error_line(_invoke(["annotate", str(source), "-o", str(out), "--model",
                                    str(broken), "--format", "pubtator"], tmp_path))
    assert "document ID 'PMC|1' cannot be written as PubTator" in line and not out.exists()
    write_documents([_full_text_doc()], source)
    result = _invoke(["annotate", str(source), "-o", str(out), "--model", str(model),
                      "--format", "pubtator"], tmp_path)
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("PMC1|t|A title.\nPMC1|a|Line one line two. Methods.\n")


# ---- 8. separators and control characters separate words -----------------------------------

@pytest.fixture(scope="module")
def tokenizer():
    from e2e_linker.defaults import DEFAULT_MODEL_DIR
    from e2e_linker.encoder.wordpiece import load_wordpiece

    found = load_wordpiece(DEFAULT_MODEL_DIR / "encoder")
    assert found is not None
    return found


@pytest.mark.parametrize("separator", ["\f", "\v", "\x85", "\x1c", "\x00", "\u2028", "\xa0"])
def test_a_form_feed_separates_words_as_a_space_does(tokenizer, separator):
    from e2e_linker.collective.chunking import tokenize_document

    def tokens(text: str):
        got = tokenize_document(Document("1", [Passage(5, text)]), tokenizer)
        return got.ids, got.starts, got.ends, got.word_start

    text = f"treated with{separator}cisplatin"
    assert tokens(text) == tokens("treated with cisplatin")
    ids, starts, ends, _ = tokens(text)
    assert "cis" in tokenizer.convert_ids_to_tokens(ids)  # a word of its own, not "##cis"
    assert text[starts[2] - 5:ends[-1] - 5] == "cisplatin"  # offsets into the original text


def test_ordinary_text_tokenizes_exactly_as_before(tokenizer, shared_data):
    from e2e_linker.collective.chunking import tokenize_document

    docs = list(read_documents(shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"))
    docs = docs[:40] + [Document("x", [Passage(0, "Line one\nline\ttwo\r\n 5\xa0mg.")])]
    for doc in docs:
        got = tokenize_document(doc, tokenizer)
        raw = tokenizer([p.text for p in doc.passages], add_special_tokens=False,
                        return_offsets_mapping=True)
        assert got.ids == [i for ids in raw["input_ids"] for i in ids]
        assert got.starts == [p.offset + a for p, offsets in zip(
            doc.passages, raw["offset_mapping"], strict=True) for a, _ in offsets]


# ---- 10. one line naming the file or value --------------------------------------------------

def _bad_heads(model: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    heads = load_file(str(model / "heads.safetensors"))
    heads[next(iter(heads))] = torch.zeros(3, 3)
    save_file(heads, str(model / "heads.safetensors"))


@pytest.mark.parametrize("damage,named", [
    (lambda m: (m / "linker_config.json").write_text("[]"), "linker_config.json: expected a "
                                                           "JSON object ({...}), found list"),
    (lambda m: (m / "linker_config.json").write_text(json.dumps(
        {**json.loads((m / "linker_config.json").read_text()), "types": 5})),
     "linker_config.json: types is 5; expected a list of strings"),
    (lambda m: (m / "kb_manifest.json").write_text("[]"), "kb_manifest.json: expected a JSON "
                                                         "object"),
    (lambda m: (m / "encoder" / "config.json").write_text('"x"'), "config.json: expected a "
                                                                  "JSON object"),
    (_bad_heads, "heads.safetensors: its span_scorer tensors do not fit the model"),
])
def test_a_model_file_of_the_wrong_shape_is_named(tiny, tmp_path, damage, named):
    model = tmp_path / "model"
    shutil.copytree(tiny[0], model)
    if not (model / "encoder").is_dir():
        pytest.skip("this model keeps its encoder elsewhere")
    damage(model)
    source = tmp_path / "in.txt"
    source.write_text("1|t|Aspirin.\n1|a|Headache.\n\n")
    line = _one_error_line(_invoke(["annotate", str(source), "-o", str(tmp_path / "o.xml"),
                                    "--model", str(model)], tmp_path))
    assert named in line and str(model) in line, line
    assert "AttributeError" not in line


def test_a_gzip_body_gets_the_documented_refusal_whatever_its_type():
    import gzip

    from e2e_linker.serve.bodies import media_type
    from e2e_linker.serve.errors import RequestError

    body = gzip.compress(b'{"text": "aspirin"}')
    for content_type in ("application/json", "text/plain", None):
        with pytest.raises(RequestError, match="compressed bodies are not accepted") as caught:
            media_type(content_type, body)
        assert caught.value.status == 400


def test_standard_input_is_named_as_such_not_as_a_temporary_path(tiny, tmp_path):
    _, broken = tiny
    bad = "1|t|Aspirin.\n1|a|Headache.\n1\t0\tx\tAspirin\tChemical\tD1\n\n"
    result = _invoke(["annotate", "-", "-o", str(tmp_path / "o.xml"), "--model", str(broken)],
                     tmp_path, input=bad)
    line = _one_error_line(result)
    assert line.startswith("error: - (standard input): document 1, line 3: "), line
    assert "linker-stdin" not in result.stderr


def test_a_shard_directory_holding_a_run_is_refused_before_the_model_loads(tiny, tmp_path):
    _, broken = tiny
    source = tmp_path / "in.txt"
    source.write_text("1|t|Aspirin.\n1|a|Headache.\n\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    line = _one_error_line(_invoke(["annotate", str(source), "-o", str(run), "--model",
                                    str(broken)], tmp_path))
    assert line == (f"error: {run} already holds a run (manifest.json); pass --resume to "
                    "finish it, or choose an empty directory")
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json"]


def test_kb_info_on_a_file_says_it_is_not_a_folder(tmp_path):
    afile = tmp_path / "cache.txt"
    afile.write_text("x")
    line = _one_error_line(_invoke(["kb", "info", "--cache-dir", str(afile)], tmp_path))
    assert line == f"error: --cache-dir {afile} is a file, not a folder; name the KB cache folder"


def test_annotation_texts_that_disagree_with_their_spans_are_warned_once_per_file(tmp_path):
    source = tmp_path / "m.txt"
    source.write_text("1|t|Aspirin and ibuprofen.\n1|a|x\n1\t0\t7\tAspirim\tChemical\tD1\n"
                      "1\t12\t21\tibuprofem\tChemical\tD2\n\n")
    result = _invoke(["convert", str(source), str(tmp_path / "o.json")], tmp_path)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {source}: 2 annotations whose texts differ from the document "
                        "text at their spans (first: document 1: 'Aspirim' at 0-7, where the "
                        "text reads 'Aspirin'); kept as written"]


def test_a_long_document_is_announced_on_a_terminal_and_output_unchanged(monkeypatch, capsys):
    from e2e_linker.jobs import corpus_run

    docs = [Document("long", [Passage(0, "x" * 100)]), Document("short", [Passage(0, "y")])]
    monkeypatch.setattr(corpus_run, "LONG_DOCUMENT", 50)

    def slow(group):
        time.sleep(0.3)
        return group

    for terminal in (False, True):
        monkeypatch.setattr(corpus_run, "stderr_is_terminal", lambda t=terminal: t)
        with corpus_run.long_document_notice(docs, every=0.1):
            assert slow(docs) == docs
        captured = capsys.readouterr()
        assert captured.out == ""
        if not terminal:
            assert captured.err == ""
            continue
        lines = captured.err.splitlines()
        assert lines[0] == "annotating document long: 100 characters, a long one (minutes on " \
                           "a CPU)"
        assert len(lines) >= 2 and lines[1].startswith("document long: still annotating, 0m")
