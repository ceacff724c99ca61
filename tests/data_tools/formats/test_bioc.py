"""BioC XML and JSON: the real release, determinism, hostile XML, wrong shapes."""

from __future__ import annotations

import json
import time
from functools import cache
from pathlib import Path

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage, Relation
from data_tools.formats import read_collection_info, read_documents, write_documents
from data_tools.registry import data_dir

# split: (documents, annotations incl. composite parts, CID relations), PROVENANCE.md
BC5 = {"CDR_TrainingSet": (500, 9570, 1038), "CDR_DevelopmentSet": (500, 9773, 1012),
       "CDR_TestSet": (500, 9928, 1066)}


@cache
def _bioc(split: str) -> tuple[Document, ...]:
    return tuple(read_documents(data_dir() / "bc5cdr" / f"{split}.BioC.xml", strict=True))


@pytest.mark.parametrize("split", BC5)
def test_real_bioc_xml_round_trips_losslessly_and_deterministically(tmp_path, split):
    src = data_dir() / "bc5cdr" / f"{split}.BioC.xml"
    docs = list(_bioc(split))
    n_docs, n_anns, n_rels = BC5[split]
    assert len(docs) == n_docs
    assert sum(len(d.annotations) for d in docs) == n_anns
    assert sum(len(d.relations) for d in docs) == n_rels
    info = read_collection_info(src)
    assert info == {"source": "PubTator", "date": "0/0/0", "key": "PubTator.key", "infons": {}}
    write_documents(docs, tmp_path / "a.xml", collection_info=info)
    assert list(read_documents(tmp_path / "a.xml")) == docs
    assert read_collection_info(tmp_path / "a.xml") == info
    write_documents(read_documents(tmp_path / "a.xml"), tmp_path / "b.xml", collection_info=info)
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()
    text = (tmp_path / "a.xml").read_text()
    assert '<infon key="MESH">' in text and 'key="identifier"' not in text  # the file's own key
    write_documents(docs, tmp_path / "c.json", collection_info=info)
    assert list(read_documents(tmp_path / "c.json")) == docs
    assert read_collection_info(tmp_path / "c.json") == info


@pytest.mark.parametrize("split", BC5)
def test_bioc_release_and_pubtator_release_agree(shared_data, split):
    pubtator = list(read_documents(shared_data / "bc5cdr" / f"{split}.PubTator.txt"))
    for a, b in zip(_bioc(split), pubtator, strict=True):
        assert (a.id, a.text, a.relations) == (b.id, b.text, b.relations)
        assert [(p.offset, p.infons) for p in a.passages] == [(p.offset, p.infons)
                                                              for p in b.passages]
        main = [x for x in a.annotations if x.infons.get("CompositeRole") != "IndividualMention"]
        assert [(x.start, x.end, x.text, x.type, x.concept_ids) for x in main] == \
            [(x.start, x.end, x.text, x.type, x.concept_ids) for x in b.annotations]


@pytest.mark.parametrize("split", BC5)
def test_bioc_release_written_as_pubtator_is_the_pubtator_release(shared_data, tmp_path, split):
    """IndividualMention parts fold back into the composite's 7th column."""
    write_documents(_bioc(split), tmp_path / "x.txt")
    release = (shared_data / "bc5cdr" / f"{split}.PubTator.txt").read_text()
    if split == "CDR_TrainingSet":  # 18 rows (PMIDs 19211690, 17879945) have an empty 7th column
        assert release.count("\t\n") == 18
        release = release.replace("\t\n", "\n")
    assert (tmp_path / "x.txt").read_text() == release


def test_composite_from_pubtator_is_one_bioc_annotation(tmp_path, bc5cdr_test_docs):
    doc = next(d for d in bc5cdr_test_docs if any(a.composite_texts for a in d.annotations))
    write_documents([doc], tmp_path / "one.xml")
    text = (tmp_path / "one.xml").read_text()
    assert text.count('"CompositeRole">CompositeMention<') == sum(
        bool(a.composite_texts) for a in doc.annotations)
    assert "IndividualMention" not in text
    (back,) = read_documents(tmp_path / "one.xml")
    assert [(a.composite_texts, a.concept_ids) for a in back.annotations] == \
        [(a.composite_texts, a.concept_ids) for a in doc.annotations]


def _doc() -> Document:
    doc = Document("d1", [Passage(0, "Aspirin and caffeine headache.", {"type": "title"}),
                          Passage(31, "Body text here.", {"type": "abstract", "x": "y"})],
                   infons={"journal": "J"})
    doc.add_annotation(Annotation(0, 7, "Aspirin", "Chemical", ["MESH:D001241"], id="a",
                                  mention_score=0.912345, link_score=0.5))
    doc.add_annotation(Annotation(0, 20, "Aspirin caffeine", "Chemical", ["D1", "D2"],
                                  extra_locations=[(12, 20)], infons={"CUI": "D1|D2"}))
    doc.add_annotation(Annotation(21, 29, "headache", "Disease", no_id=True))
    doc.add_annotation(Annotation(31, 35, "Body", "Disease", []))
    doc.passages[1].relations.append(Relation(infons={"k": "v"}, nodes=[("a", "arg")]))
    doc.relations.append(Relation(id="R9", infons={"relation": "CID"}))
    return doc


@pytest.mark.parametrize("name", ["x.xml", "x.json", "x.jsonl"])
def test_every_field_survives_bioc(tmp_path, name):
    doc = _doc()
    write_documents([doc], tmp_path / name)
    (back,) = read_documents(tmp_path / name)
    a, b, c, d = back.annotations
    assert (a.mention_score, a.link_score) == (0.9123, 0.5)  # written with 4 decimals
    assert b.locations == [(0, 20), (12, 20)] and b.infons == {"CUI": "D1|D2"}
    assert c.no_id and c.concept_ids == [] and d.concept_ids == [] and not d.no_id
    assert a.infons == {"identifier": "MESH:D001241"} and d.infons == {"identifier": "-1"}
    assert back.passages[1].relations[0].nodes == [("a", "arg")]
    assert back.relations == [Relation(id="R9", infons={"relation": "CID"})]
    assert back.infons == {"journal": "J"} and back.passages[1].infons == doc.passages[1].infons
    assert [x.id for x in back.annotations] == ["a", "0", "1", "2"]
    b.concept_ids = ["D3"]  # an edited ID is written under the file's own key
    write_documents([back], tmp_path / ("y" + name[1:]))
    (again,) = read_documents(tmp_path / ("y" + name[1:]))
    assert again.annotations[1].infons == {"CUI": "D3"}


def test_our_output_is_readable_by_the_bioc_package(tmp_path, bc5cdr_test_docs):
    from bioc import biocjson, biocxml

    write_documents(bc5cdr_test_docs[:5], tmp_path / "x.xml")
    write_documents(bc5cdr_test_docs[:5], tmp_path / "x.json")
    with open(tmp_path / "x.xml") as fx, open(tmp_path / "x.json") as fj:
        for collection in (biocxml.load(fx), biocjson.load(fj)):
            assert [d.id for d in collection.documents] == [d.id for d in bc5cdr_test_docs[:5]]
            assert collection.date == "" and collection.source == "e2e_linker"


def _xml(tmp_path: Path, text: str, name: str = "x.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


DOC = ("<document><id>1</id><passage><offset>0</offset><text>{text}</text>"
       "</passage></document>")


def test_external_entities_are_never_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    path = _xml(tmp_path, f'<?xml version="1.0"?><!DOCTYPE collection [<!ENTITY x SYSTEM '
                f'"file://{secret}">]><collection>{DOC.format(text="a &x; b")}</collection>')
    with pytest.raises(FormatError, match="declares XML entities") as err:
        list(read_documents(path))
    assert "TOPSECRET" not in str(err.value)


def test_billion_laughs_is_rejected_quickly(tmp_path):
    lol = '<!ENTITY a "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    path = _xml(tmp_path, f'<?xml version="1.0"?><!DOCTYPE collection [{lol}]>'
                f'<collection>{DOC.format(text="&j;")}</collection>')
    started = time.monotonic()
    with pytest.raises(FormatError, match="entities"):
        list(read_documents(path))
    assert time.monotonic() - started < 2


def test_undeclared_entity_is_an_error_not_cut_text(tmp_path):
    path = _xml(tmp_path, f"<collection>{DOC.format(text='a &nbsp; b')}</collection>")
    with pytest.raises(FormatError):
        list(read_documents(path))


def test_external_dtd_is_not_fetched_and_plain_escapes_work(tmp_path):
    path = _xml(tmp_path, '<?xml version="1.0"?><!DOCTYPE collection SYSTEM '
                '"http://198.51.100.1/BioC.dtd"><collection>'
                + DOC.format(text="a &amp; b &#233; &lt;") + "</collection>")
    started = time.monotonic()
    (doc,) = read_documents(path)
    assert doc.passages[0].text == "a & b é <" and time.monotonic() - started < 5


def test_bom_and_crlf_are_accepted(tmp_path):
    path = tmp_path / "x.xml"
    path.write_bytes(b"\xef\xbb\xbf<?xml version='1.0' encoding='UTF-8'?>\r\n<collection>\r\n"
                     + DOC.format(text="ok").encode() + b"\r\n</collection>\r\n")
    (doc,) = read_documents(path)
    assert doc.passages[0].text == "ok"
    js = tmp_path / "x.json"
    js.write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"documents": [{"id": "1", "passages": [{"offset": 0, "text": "ok"}]}]}, indent=1)
        .replace("\n", "\r\n").encode())
    assert list(read_documents(js)) == [doc]


@pytest.mark.parametrize("text,message", [
    ("<collection><document><id>1</id><passage>", "malformed XML"),
    ("<collection><document><id>1</id>" + "<passage><offset>0</offset>" * 2, "malformed XML"),
    ("<notbioc/>", "root element is <notbioc>"),
    ("<collection><source>s</source></collection>", "no documents"),
    ("   \n", "malformed XML"),
    ("<collection><document><id>7</id><passage><offset>0</offset><text>ab</text>"
     "<annotation id='a'><location offset='0' length='9'/><text>ab</text></annotation>"
     "</passage></document></collection>", "document 7: annotation a at 0-9 lies outside"),
    ("<collection><document><id>7</id><passage><offset>x</offset><text>ab</text>"
     "</passage></document></collection>", "document 7: offset of passage 0 is 'x'"),
    ("<collection><document><id>7</id><passage><offset>0</offset><text>ab</text>"
     "<annotation id='a'><text>ab</text></annotation></passage></document></collection>",
     "document 7: annotation a has no location"),
    ("<collection><document><id>7</id><passage><offset>0</offset><text>ab</text>"
     "<annotation id='a'><location offset='0'/></annotation></passage></document>"
     "</collection>", "location length of annotation a is None"),
    ("<collection><document><id>1</id><passage><offset>0</offset></passage></document>"
     "<document><passage><offset>0</offset></passage></document></collection>",
     "document #2 (line 1): document without an id"),
])
def test_bad_xml_is_a_clear_error(tmp_path, text, message):
    with pytest.raises(FormatError) as err:
        list(read_documents(_xml(tmp_path, text)))
    assert message in str(err.value) and "x.xml" in str(err.value)


def test_non_utf8_xml_is_a_clear_error(tmp_path):
    path = tmp_path / "x.xml"
    path.write_bytes(b"<?xml version='1.0' encoding='UTF-8'?>\n<collection>"
                     + DOC.format(text="caf\xe9").encode("latin-1") + b"</collection>")
    with pytest.raises(FormatError, match=r"x.xml: line 2: malformed XML: .*(bytes|UTF-8)"):
        list(read_documents(path))


@pytest.mark.parametrize("payload,message", [
    ({"documents": [{"id": "1"}]}, "document 1: document has no 'passages'"),
    ({"documents": [{"passages": []}]}, "document #1: document without an id"),
    ({"documents": "nope"}, "'documents' is a str, expected a list"),
    ({"documents": []}, "no documents"),
    ({"foo": 1}, "not a BioC JSON collection"),
    ([1, 2], "document #1: the document is a int"),
    ({"documents": [{"id": "1", "passages": [{"offset": "x", "text": "a"}]}]},
     "document 1: offset of passage 0 is 'x'"),
    ({"documents": [{"id": "1", "passages": {"offset": 0}}]}, "document 1: 'passages' of"),
    ({"documents": [{"id": "1", "passages": [{"offset": 0, "text": "ab", "annotations": [
        {"id": "a", "locations": [{"offset": -1, "length": 1}]}]}]}]},
     "document 1: location offset of annotation a is negative"),
    ({"documents": [{"id": "1", "passages": [{"offset": 0, "text": "ab", "annotations": [
        {"id": "a", "infons": ["type"], "locations": [{"offset": 0, "length": 1}]}]}]}]},
     "document 1: infons of annotation a is a list"),
])
def test_bad_json_shape_is_a_clear_error(tmp_path, payload, message):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(FormatError) as err:
        list(read_documents(path))
    assert message in str(err.value) and "x.json" in str(err.value)


@pytest.mark.parametrize("content,message", [
    (b"", "no documents"), (b"  \n", "no documents"), (b'{"documents": [', "line 1: invalid JSON"),
    (b'{"documents": [\n"\xe9"]}', "line 2: not valid UTF-8"),
])
def test_broken_json_files(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        list(read_documents(path))


def test_json_lines_stream_and_name_the_line(tmp_path):
    line = {"id": "1", "passages": [{"offset": 0, "text": "a"}]}
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(line) + "\n\n" + json.dumps({**line, "id": "2"}) + "\n{\n")
    docs = read_documents(path)
    assert [next(docs).id, next(docs).id] == ["1", "2"]
    with pytest.raises(FormatError, match="x.jsonl: line 4: invalid JSON"):
        next(docs)
    same = tmp_path / "lines.json"  # JSON Lines under a .json name is recognised too
    same.write_text(json.dumps(line) + "\n" + json.dumps({**line, "id": "2"}) + "\n")
    assert [d.id for d in read_documents(same)] == ["1", "2"]


def test_sentence_level_passages_are_lifted(tmp_path):
    path = _xml(tmp_path, "<collection><document><id>1</id><passage><offset>10</offset>"
                "<sentence><offset>10</offset><text>One.</text><annotation id='a'>"
                "<infon key='type'>X</infon><location offset='10' length='3'/><text>One</text>"
                "</annotation></sentence><sentence><offset>15</offset><text>Two.</text>"
                "</sentence></passage></document></collection>")
    (doc,) = read_documents(path, strict=True)
    assert doc.passages[0].text == "One. Two." and doc.passages[0].offset == 10
    assert [(a.id, a.text, a.type) for a in doc.annotations] == [("a", "One", "X")]


def test_strict_catches_bioc_text_mismatch(tmp_path):
    path = _xml(tmp_path, "<collection><document><id>1</id><passage><offset>0</offset>"
                "<text>abc</text><annotation id='a'><location offset='0' length='2'/>"
                "<text>xy</text></annotation></passage></document></collection>")
    assert list(read_documents(path))[0].annotations[0].text == "xy"
    with pytest.raises(FormatError, match="document 1: annotation a text 'xy' differs"):
        list(read_documents(path, strict=True))


def test_text_xml_cannot_hold_is_a_clear_error_and_no_file(tmp_path):
    doc = Document("d\x01", [Passage(0, "bell\x07", {})])
    with pytest.raises(FormatError, match="out.xml: document d\x01: cannot be written as XML"):
        write_documents([doc], tmp_path / "out.xml")
    assert not list(tmp_path.iterdir())
