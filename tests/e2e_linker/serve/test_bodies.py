"""Request bodies ⇄ documents (``e2e_linker.serve.bodies``): the media type (guessed only for
curl's defaults), strict UTF-8, documents read through the project's readers from a private
temporary file and written back as ``linker annotate`` writes them."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation
from e2e_linker.serve.bodies import (
    decode_text,
    document_format,
    media_type,
    read_body,
    text_documents,
    write_body,
)
from e2e_linker.serve.errors import RequestError, one_line
from tests.helpers.hostile_inputs import GOOD_PUBTATOR


def test_media_types_with_parameters_and_curl_defaults():
    assert media_type("Application/XML; charset=UTF-8", b"<x/>") == "application/xml"
    assert media_type(None, b'  {"text": 1}') == "application/json"
    assert media_type("application/x-www-form-urlencoded", b'{"text": 1}') == \
        "application/json"
    assert media_type("", b"<collection/>") == "application/xml"
    assert media_type("", b"plain words") == ""
    with pytest.raises(RequestError) as latin:
        media_type("text/plain; charset=iso-8859-1", b"x")
    assert latin.value.status == 415
    assert document_format("text/x-pubtator") == "pubtator"
    assert document_format("application/json") is None


def test_text_is_strict_utf8_and_texts_become_documents_at_offset_zero():
    assert decode_text("\ufeffcafé".encode()) == "café"
    with pytest.raises(RequestError, match="not valid UTF-8"):
        decode_text(b"caf\xe9")
    [doc] = text_documents([("a", "Aspirin here.")])
    assert doc.id == "a" and doc.passages[0].offset == 0 and doc.text == "Aspirin here."
    with pytest.raises(RequestError, match="lone surrogate") as bad:
        text_documents([("a", "ok"), ("b", "x\ud800")])
    assert bad.value.status == 422 and "texts[1]" in bad.value.message


def test_a_pubtator_body_reads_and_writes_back_the_same_bytes():
    docs, info = read_body(GOOD_PUBTATOR.encode(), "pubtator", 10)
    assert [d.id for d in docs] == ["11"] and len(docs[0].annotations) == 2
    assert write_body(docs, "pubtator", info) == GOOD_PUBTATOR.encode()
    docs[0].add_annotation(Annotation(20, 29, "Cisplatin", "Chemical", ["C003"], id="e2e0"))
    assert b"11\t20\t29\tCisplatin\tChemical\tC003" in write_body(docs, "pubtator", info)


def test_bodies_are_refused_with_their_reason_and_never_the_temporary_name():
    with pytest.raises(RequestError) as dup:
        read_body(GOOD_PUBTATOR.encode() * 2, "pubtator", 10)
    assert dup.value.status == 422 and "duplicate document id '11'" in dup.value.message
    with pytest.raises(RequestError) as many:
        read_body(GOOD_PUBTATOR.encode() + GOOD_PUBTATOR.replace("11", "12").encode(),
                  "pubtator", 1)
    assert many.value.status == 413
    with pytest.raises(RequestError) as truncated:
        read_body(b"<collection><document><id>1</id>", "bioc", 10)
    assert truncated.value.status == 400 and "malformed XML" in truncated.value.message
    assert "linker-serve-" not in truncated.value.message and "body.xml" not in \
        truncated.value.message
    with pytest.raises(RequestError, match="compressed"):
        read_body(b"\x1f\x8b\x08\x00rest", "bioc", 10)
    with pytest.raises(RequestError) as shape:
        read_body(b'{"documents": [{"id": "5", "passages": "x"}]}', "biocjson", 10)
    assert shape.value.status == 422 and "document 5" in shape.value.message


def test_error_messages_are_one_short_line():
    assert one_line("first\nsecond") == "first"
    assert len(one_line("x" * 1000)) == 300
    assert RequestError(400, "a\nb").message == "a"
