"""The document model: passages at offsets, annotations placed by offset, IDs as written."""

from __future__ import annotations

import pytest

from data_tools.documents import (
    Annotation,
    Document,
    FormatError,
    Passage,
    Skipped,
    strip_prefix,
)


def _doc() -> Document:
    return Document("7", [Passage(0, "Title here.", {"type": "title"}),
                          Passage(12, "Abstract text.", {"type": "abstract"}),
                          Passage(40, "Far away.", {})])


def test_text_lays_passages_out_at_their_offsets():
    doc = _doc()
    assert doc.text == "Title here. Abstract text." + " " * 14 + "Far away."
    assert doc.text_at(12, 20) == "Abstract" and doc.text_at(40, 43) == "Far"
    assert [p.type for p in doc.passages] == ["title", "abstract", ""]
    with pytest.raises(IndexError, match="outside every passage of document 7"):
        doc.text_at(30, 32)  # the gap
    with pytest.raises(IndexError):
        doc.text_at(6, 20)  # crosses from one passage into the next


def test_annotations_go_to_the_passage_holding_their_start():
    doc = _doc()
    doc.add_annotation(Annotation(41, 44, "ar ", "X"))
    doc.add_annotation(Annotation(0, 5, "Title", "X"))
    doc.add_annotation(Annotation(12, 20, "Abstract", "X"))
    assert [len(p.annotations) for p in doc.passages] == [1, 1, 1]
    assert [a.start for a in doc.annotations] == [0, 12, 41]  # passage order
    assert [(p.offset, a.text) for p, a in doc.iter_annotations()][0] == (0, "Title")
    with pytest.raises(IndexError, match="annotation 30-32"):
        doc.add_annotation(Annotation(30, 32, "  "))


def test_overlapping_passages_keep_the_first_in_text():
    doc = Document("8", [Passage(0, "abcdef"), Passage(3, "XYZ")])
    assert doc.text == "abcdef"


def test_concept_id_and_locations():
    ann = Annotation(3, 9, "foo bar", "Disease", ["D1", "D2"], extra_locations=[(12, 15)])
    assert ann.concept_id == "D1|D2"
    assert Annotation(0, 1, "x").concept_id == "-1"
    assert ann.locations == [(3, 9), (12, 15)]


def test_strip_prefix_removes_mesh_only():
    assert strip_prefix(" MESH:D003693 ") == "D003693"
    assert strip_prefix("mesh:D1") == "D1"
    assert strip_prefix("OMIM:123") == "OMIM:123"


def test_format_errors_and_skipped_records_describe_themselves():
    error = FormatError("bad row", path="c.txt", where="line 4")
    assert str(error) == "c.txt: line 4: bad row"
    assert str(FormatError("bad")) == "bad"
    skipped = Skipped.from_error(FormatError("bad row", where="line 4"), path="c.txt")
    assert skipped.describe() == "c.txt: line 4: bad row"


def test_a_text_view_holds_the_passage_texts_alone_and_leaves_the_document_untouched():
    doc = Document("d", [Passage(0, "Aspirin helps.", infons={"type": "title"},
                                 annotations=[Annotation(0, 7, "Aspirin", "Chemical", ["D001241"])]),
                         Passage(15, "Pain fades.")], infons={"source": "x"})
    view = doc.text_view()
    assert (view.id, view.text, view.annotations, view.infons) == ("d", doc.text, [], {})
    assert [(p.offset, p.text, p.infons) for p in view.passages] == [
        (0, "Aspirin helps.", {}), (15, "Pain fades.", {})]
    view.add_annotation(Annotation(15, 19, "Pain", "Disease"))
    assert [a.text for a in doc.annotations] == ["Aspirin"]
