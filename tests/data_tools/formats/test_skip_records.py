"""Reading with skip: a bad document becomes a Skipped record in its place, reading goes on."""

from __future__ import annotations

import json

import pytest

from data_tools.documents import Document, FormatError, Skipped
from data_tools.formats import read_records
from data_tools.formats.source import CorpusSource

GOOD = "{id}|t|Aspirin.\n{id}|a|Nausea.\n{id}\t0\t7\tAspirin\tChemical\tD1\n\n"


def _kinds(records) -> list[str]:
    return [r.id if isinstance(r, Document) else f"skip:{r.where}" for r in records]


def test_pubtator_skips_only_the_bad_document(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(GOOD.format(id=1).encode()
                     + b"2|t|Caf\xe9.\n2|a|x\n2\t0\t1\tC\tChemical\tD1\n\n"  # not UTF-8
                     + GOOD.format(id=3).encode()
                     + b"4|t|T\n4|a|A\n4\t9\t1\tT\tChemical\tD1\n4\t0\t1\tT\tChemical\tD1\n\n"
                     + b"9|a|an abstract without its title\n"
                     + GOOD.format(id=5).encode())
    records = list(read_records(path, skip=True))
    assert _kinds(records) == ["1", "skip:document 2, line 5", "3",
                               "skip:document 4, line 15", "skip:document 9, line 18", "5"]
    assert "not valid UTF-8" in records[1].message and "bad span 9-1" in records[3].message
    assert records[1].describe().startswith(f"{path}: document 2, line 5: not valid UTF-8")
    with pytest.raises(FormatError, match="line 5"):
        list(read_records(path))


def test_truncated_xml_keeps_what_came_before(tmp_path):
    doc = "<document><id>{}</id><passage><offset>0</offset><text>a</text></passage></document>"
    path = tmp_path / "x.xml"
    path.write_text("<collection>" + doc.format(1) + doc.format(2).replace("0", "x", 1)
                    + doc.format(3) + doc.format(4)[:30])
    records = list(read_records(path, skip=True))
    assert _kinds(records)[:3] == ["1", "skip:document 2", "3"]
    assert isinstance(records[3], Skipped) and records[3].message.endswith(
        "; the rest of the file is skipped") and len(records) == 4


@pytest.mark.parametrize("name,content", [
    ("x.json", b'{"documents": [{"id": "1", "passages": []}, {"id": 2}, '
               b'{"id": "3", "passages": []}]}'),
    ("x.jsonl", b'{"id": "1", "passages": []}\n{"id": 2}\n{"id": "3", "passages": []}\n'),
])
def test_json_skips_documents_of_the_wrong_shape(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    records = list(read_records(path, skip=True))
    assert [r.id for r in records if isinstance(r, Document)] == ["1", "3"]
    assert isinstance(records[1], Skipped) and "passages" in records[1].message


@pytest.mark.parametrize("name,content", [("e.txt", b""), ("e.json", b"[1"),
                                          ("e.xml", b"<html/>"), ("e.dat", b"hello")])
def test_an_unreadable_file_is_one_skipped_record(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    (record,) = read_records(path, skip=True)
    assert isinstance(record, Skipped) and record.path == str(path)


def test_corpus_source_numbers_records_and_catches_duplicates_across_files(tmp_path):
    (tmp_path / "a.txt").write_text(GOOD.format(id=1) + GOOD.format(id=2))
    (tmp_path / "b.json").write_text(json.dumps([{"id": "2", "passages": []},
                                                 {"id": "3", "passages": []}]))
    records = list(CorpusSource([tmp_path], on_error="skip"))
    assert [r.number for r in records] == [0, 1, 2, 3]
    assert [r.path.name for r in records] == ["a.txt", "a.txt", "b.json", "b.json"]
    dup = records[2].item
    assert isinstance(dup, Skipped) and dup.message == f"duplicate document id '2' (seen in " \
        f"{tmp_path / 'a.txt'})"
    with pytest.raises(FormatError, match=r"b.json: document 2: duplicate document id"):
        list(CorpusSource([tmp_path]))
