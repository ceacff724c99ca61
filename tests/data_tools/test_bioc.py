"""BioC XML and JSON: real files, determinism, hostile XML, wrong shapes."""

from __future__ import annotations

import json
import time

import pytest

from data_tools.documents import FormatError
from data_tools.formats import read_collection_info, read_documents, write_documents


def test_real_bioc_xml_round_trip_is_lossless_and_deterministic(shared_data, tmp_path):
    src = shared_data / "bc5cdr" / "CDR_TestSet.BioC.xml"
    docs = list(read_documents(src))
    assert len(docs) == 500
    assert sum(len(d.annotations) for d in docs) == 9928
    assert sum(len(d.relations) for d in docs) == 1066
    info = read_collection_info(src)
    assert info["source"] == "PubTator"
    write_documents(docs, tmp_path / "a.xml", collection_info=info)
    again = list(read_documents(tmp_path / "a.xml"))
    assert again == docs
    write_documents(again, tmp_path / "b.xml", collection_info=info)
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()
    write_documents(docs, tmp_path / "c.json", collection_info=info)
    assert list(read_documents(tmp_path / "c.json")) == docs


def test_bioc_and_pubtator_agree_on_bc5cdr(shared_data, bc5cdr_test_docs):
    bioc_docs = list(read_documents(shared_data / "bc5cdr" / "CDR_TestSet.BioC.xml"))
    for a, b in zip(bioc_docs, bc5cdr_test_docs, strict=True):
        assert a.id == b.id and a.text == b.text
        main = [x for x in a.annotations if x.infons.get("CompositeRole") != "IndividualMention"]
        assert [(x.start, x.end, x.concept_ids) for x in main] == \
            [(x.start, x.end, x.concept_ids) for x in b.annotations]


def _xml(tmp_path, text, name="x.xml"):
    path = tmp_path / name
    path.write_text(text)
    return path


DOC = ("<document><id>1</id><passage><offset>0</offset><text>{text}</text>"
       "</passage></document>")


def test_external_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    path = _xml(tmp_path, f'<?xml version="1.0"?><!DOCTYPE collection [<!ENTITY x SYSTEM '
                f'"file://{secret}">]><collection>{DOC.format(text="a &x; b")}</collection>')
    try:
        docs = list(read_documents(path))
    except FormatError:
        return  # refusing is fine too
    assert "TOPSECRET" not in docs[0].passages[0].text


def test_network_dtd_is_not_fetched(tmp_path):
    path = _xml(tmp_path, '<?xml version="1.0"?><!DOCTYPE collection SYSTEM '
                '"http://198.51.100.1/BioC.dtd"><collection>' + DOC.format(text="ok") +
                "</collection>")
    started = time.monotonic()
    (doc,) = read_documents(path)
    assert doc.passages[0].text == "ok" and time.monotonic() - started < 5


def test_entity_expansion_bomb_is_harmless(tmp_path):
    lol = '<!ENTITY a "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
    path = _xml(tmp_path, f'<?xml version="1.0"?><!DOCTYPE collection [{lol}]>'
                f'<collection>{DOC.format(text="&i;")}</collection>')
    started = time.monotonic()
    try:
        docs = list(read_documents(path))
        assert len(docs[0].passages[0].text) < 1000
    except FormatError:
        pass
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("text,message", [
    ("<collection><document><id>1</id><passage>", "malformed XML"),
    ("<notbioc/>", "root element"),
    ("<collection><source>s</source></collection>", "no <document>"),
    ("<collection><document><id>1</id><passage><offset>0</offset><text>ab</text>"
     "<annotation id='a'><location offset='0' length='9'/><text>ab</text></annotation>"
     "</passage></document></collection>", "outside its passage"),
    ("<collection><document><id>1</id><passage><offset>x</offset><text>ab</text>"
     "</passage></document></collection>", "non-numeric"),
])
def test_bad_xml_is_a_clear_error(tmp_path, text, message):
    with pytest.raises(FormatError) as err:
        list(read_documents(_xml(tmp_path, text)))
    assert message in str(err.value) and "x.xml" in str(err.value)


@pytest.mark.parametrize("payload,message", [
    ({"documents": [{"id": "1"}]}, "document 1"),
    ({"documents": "nope"}, "not a list"),
    ({"foo": 1}, "no 'documents'"),
    ({"documents": [{"id": "1", "passages": [{"offset": "x", "text": "a"}]}]}, "malformed"),
])
def test_bad_json_shape_is_a_clear_error(tmp_path, payload, message):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(FormatError) as err:
        list(read_documents(path))
    assert message in str(err.value) and "x.json" in str(err.value)


def test_json_lines_and_directory_of_mixed_formats(shared_data, tmp_path, bc5cdr_test_docs):
    docs = bc5cdr_test_docs[:3]
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_documents(docs[:1], folder / "a.txt")
    write_documents(docs[1:2], folder / "b.xml")
    (folder / "c.jsonl").write_text(
        json.dumps({"id": docs[2].id, "passages": [{"offset": 0, "text": docs[2].passages[0].text}]})
        + "\n" + json.dumps({"id": "extra", "passages": [{"offset": 0, "text": "x"}]}) + "\n")
    got = list(read_documents(folder))
    assert [d.id for d in got] == [docs[0].id, docs[1].id, docs[2].id, "extra"]


def test_failed_write_leaves_no_file(tmp_path, bc5cdr_test_docs):
    def broken():
        yield bc5cdr_test_docs[0]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_documents(broken(), tmp_path / "out.xml")
    assert list(tmp_path.iterdir()) == []


def test_unknown_format_is_a_clear_error(tmp_path):
    path = tmp_path / "notes.dat"
    path.write_text("hello")
    with pytest.raises(FormatError, match="cannot tell the format"):
        list(read_documents(path))
