"""Plain-text input: one document per file or per line, detected beside PubTator ``.txt``."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import FormatError, Skipped
from data_tools.formats import detect_format, read_documents, read_records
from data_tools.formats.plaintext import document_id, read_plaintext

TEXT = "Café αβ-blockers 🙂 cause headache.\r\n\r\nSecond paragraph.\n"


def test_a_plain_txt_file_is_one_document_named_by_its_stem(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"\xef\xbb\xbf" + TEXT.encode("utf-8"))
    assert detect_format(path) == "text"
    [doc] = read_documents(path)
    assert doc.id == "notes"
    assert [p.offset for p in doc.passages] == [0]
    assert doc.text == "Café αβ-blockers 🙂 cause headache.\n\nSecond paragraph."
    assert doc.text_at(19, 24) == "cause"  # code-point offsets past the emoji


def test_lines_give_one_document_per_non_blank_line(tmp_path):
    path = tmp_path / "notes.txt.gz"
    path.write_bytes(gzip.compress(TEXT.encode("utf-8")))
    docs = list(read_documents(path, "text-lines"))
    assert [(d.id, d.text) for d in docs] == [
        ("notes-1", "Café αβ-blockers 🙂 cause headache."), ("notes-3", "Second paragraph.")]
    assert list(read_documents(path, "lines")) == docs  # the alias


def test_pubtator_txt_is_still_pubtator(tmp_path):
    pubtator = tmp_path / "corpus.txt"
    pubtator.write_text("\n123|t|Aspirin.\n123|a|Headache.\n")
    assert detect_format(pubtator) == "pubtator"
    rows = tmp_path / "rows.txt"  # malformed PubTator must be reported as PubTator
    rows.write_text("1\t0\t7\tAspirin\tChemical\tD1\n")
    assert detect_format(rows) == "pubtator"
    assert detect_format(tmp_path / "missing.txt") == "pubtator"  # by name alone
    assert detect_format(tmp_path / "x.txt", for_writing=True) == "pubtator"


def test_blank_files_and_bad_bytes_are_errors_or_skipped(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("  \n\n")
    with pytest.raises(FormatError, match="no documents"):
        list(read_documents(blank))
    with pytest.raises(FormatError, match="no documents"):
        list(read_documents(blank, "text-lines"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbad \xff byte\nlast line\n")
    with pytest.raises(FormatError, match="line 2"):
        list(read_documents(bad, "text-lines"))
    records = list(read_records(bad, "text-lines", skip=True))
    assert [r.id if not isinstance(r, Skipped) else "skipped" for r in records] == [
        "bad-1", "skipped", "bad-3"]
    [whole] = list(read_plaintext(bad, skip=True))
    assert isinstance(whole, Skipped) and whole.where == "line 2"


def test_plain_text_is_read_only(tmp_path):
    from data_tools.formats import write_documents

    with pytest.raises(FormatError, match="read only"):
        write_documents([], tmp_path / "out.txt", "text")


@pytest.mark.parametrize("name,stem", [("a.txt", "a"), ("a.TXT.gz", "a"), ("a.b.txt", "a.b"),
                                       (".txt", ".txt"), ("stdin", "stdin")])
def test_document_id(name, stem):
    assert document_id(name) == stem
