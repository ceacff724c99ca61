"""Concept-ID strings as files write them: parsing, the BioC ID key, and what is written back."""

from __future__ import annotations

from data_tools.documents import Annotation
from data_tools.formats.ids import RAW_ID, id_key, parse_ids, written_id


def test_parse_ids():
    assert parse_ids("-1") == [] and parse_ids("") == [] and parse_ids(" ") == []
    assert parse_ids("D1|D2") == ["D1", "D2"] and parse_ids("OMIM:1+ D2 ") == ["OMIM:1", "D2"]


def test_parse_ids_drops_the_no_concept_part_of_a_composite():
    assert parse_ids("D002544|-1") == ["D002544"]
    assert parse_ids(" D015862+D058499") == ["D015862", "D058499"]


def test_id_key_takes_the_first_known_key_in_order():
    assert id_key({"type": "Chemical"}) is None
    assert id_key({"MESH": "D1", "identifier": "D2"}) == "identifier"
    assert id_key({"CUI": "C1", "MESH": "D1"}) == "MESH"


def test_written_id_keeps_the_source_string_while_it_still_parses_the_same():
    ann = Annotation(0, 4, "text", "Disease", ["D015862", "D058499"])
    assert written_id(ann) == "D015862|D058499"  # nothing as written: the clean string
    ann.infons[RAW_ID] = " D015862+D058499"
    assert written_id(ann) == " D015862+D058499"
    ann.concept_ids = ["D015862"]  # edited: the stale raw string is not written
    assert written_id(ann) == "D015862"
    bioc = Annotation(0, 4, "text", "Disease", ["D1"], infons={"MESH": "MESH:D1"})
    assert written_id(bioc) == "D1"  # parses to another list: clean
    bioc.infons["MESH"] = "D1"
    assert written_id(bioc) == "D1"
    assert written_id(Annotation(0, 4, "text", "Disease", [])) == "-1"
