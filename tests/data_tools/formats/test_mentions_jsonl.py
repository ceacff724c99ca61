"""Mention JSON Lines output: one object per annotation, written through ``open_writer``
(to a file or to standard output), never read back as a corpus."""

from __future__ import annotations

import io
import json
import sys

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage
from data_tools.formats import read_documents, write_documents
from data_tools.formats.detect import canonical_format
from data_tools.formats.mentions_jsonl import CONCEPT_NAME, mention_records


def _doc() -> Document:
    text = "Café 🙂 aspirin and nausea."
    anns = [Annotation(start=7, end=14, text="aspirin", type="Chemical", concept_ids=["C001"],
                       infons={CONCEPT_NAME: "aspirin"}, mention_score=0.9, link_score=0.8),
            Annotation(start=19, end=25, text="nausea", type="Disease")]
    return Document(id="d1", passages=[Passage(offset=0, text=text, annotations=anns)])


def test_one_object_per_mention_with_the_fields(tmp_path):
    doc = _doc()
    assert write_documents([doc, Document(id="empty")], tmp_path / "m.out", "mentions") == 2
    lines = (tmp_path / "m.out").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"document": "d1", "start": 7, "end": 14, "text": "aspirin", "type": "Chemical",
         "concept_id": "C001", "concept_name": "aspirin", "mention_score": 0.9,
         "link_score": 0.8},
        {"document": "d1", "start": 19, "end": 25, "text": "nausea", "type": "Disease",
         "concept_id": None, "mention_score": None, "link_score": None}]
    assert all(doc.text_at(r["start"], r["end"]) == r["text"] for r in mention_records(doc))
    assert canonical_format("mentions-jsonl") == "mentions"


def test_standard_output_gets_the_bytes_and_stays_open(monkeypatch):
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stdout)
    write_documents([_doc()], "-", "mentions")
    write_documents([_doc()], "-", "pubtator")
    assert not stdout.closed
    lines = buffer.getvalue().decode("utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines[:2]] == ["aspirin", "nausea"]
    assert lines[2] == "d1|t|Café 🙂 aspirin and nausea."


def test_the_format_cannot_be_read(tmp_path):
    write_documents([_doc()], tmp_path / "m.out", "mentions")
    with pytest.raises(FormatError, match="written only"):
        list(read_documents(tmp_path / "m.out", "mentions"))
