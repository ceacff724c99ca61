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
from data_tools.formats.mentions_jsonl import (
    CONCEPT_NAME,
    CONFIDENCE,
    SPECIES,
    SPECIES_NAME,
    mention_records,
)


def _doc() -> Document:
    text = "Café 🙂 aspirin and nausea."
    anns = [Annotation(start=7, end=14, text="aspirin", type="Chemical", concept_ids=["C001"],
                       infons={CONCEPT_NAME: "aspirin", CONFIDENCE: "0.8731"},
                       mention_score=0.9, link_score=0.8),
            Annotation(start=19, end=25, text="nausea", type="Disease")]
    return Document(id="d1", passages=[Passage(offset=0, text=text, annotations=anns)])


def test_one_object_per_mention_with_the_fields(tmp_path):
    doc = _doc()
    assert write_documents([doc, Document(id="empty")], tmp_path / "m.out", "mentions") == 2
    lines = (tmp_path / "m.out").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"document": "d1", "start": 7, "end": 14, "text": "aspirin", "type": "Chemical",
         "concept_id": "C001", "concept_name": "aspirin", "mention_score": 0.9,
         "link_score": 0.8, "confidence": 0.8731},
        {"document": "d1", "start": 19, "end": 25, "text": "nausea", "type": "Disease",
         "concept_id": None, "mention_score": None, "link_score": None, "confidence": None}]
    assert all(doc.text_at(r["start"], r["end"]) == r["text"] for r in mention_records(doc))
    assert canonical_format("mentions-jsonl") == "mentions"


def test_a_genes_species_follows_its_name_in_the_record():
    gene = Annotation(0, 3, "Il6", "Gene", ["NCBIGene:24498"], mention_score=0.5,
                      infons={CONCEPT_NAME: "Il6", SPECIES: "NCBITaxon:10116",
                              SPECIES_NAME: "Rattus norvegicus", "other": "not written"})
    doc = Document(id="g", passages=[Passage(offset=0, text="Il6", annotations=[gene])])
    [record] = mention_records(doc)
    assert list(record.items()) == [
        ("document", "g"), ("start", 0), ("end", 3), ("text", "Il6"), ("type", "Gene"),
        ("concept_id", "NCBIGene:24498"), ("concept_name", "Il6"),
        ("species", "NCBITaxon:10116"), ("species_name", "Rattus norvegicus"),
        ("mention_score", 0.5), ("link_score", None), ("confidence", None)]


def test_the_confidence_is_the_infons_number_after_the_scores():
    """The linker writes the confidence as an infon (so BioC keeps it); the record gives it
    as a number, null only where no linker wrote it (or wrote no number)."""
    ann = Annotation(0, 3, "Il6", "Gene", ["NCBIGene:24498"], mention_score=0.5,
                     infons={CONFIDENCE: "0.4200"})
    doc = Document(id="g", passages=[Passage(offset=0, text="Il6", annotations=[ann])])
    [record] = mention_records(doc)
    assert list(record)[-3:] == ["mention_score", "link_score", "confidence"]
    assert record["confidence"] == 0.42
    ann.infons[CONFIDENCE] = "high"
    assert mention_records(doc)[0]["confidence"] is None


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
