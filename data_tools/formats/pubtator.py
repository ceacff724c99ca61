"""PubTator: ``PMID|t|title``, ``PMID|a|abstract``, tab-separated annotation and relation rows.

Rows: ``PMID start end text type id`` (6 columns), plus a 7th with the parts of a composite
mention (``hemorrhagic|cystitis``), or 5 columns when a tool wrote no ID (tmChem). ``-1`` is
"no concept"; IDs are kept as written (``MESH:`` stays) except for surrounding spaces; when the
written ID string differs from ``"|".join(concept_ids)`` (NCBI's ``+`` composites, stray spaces)
the raw string is kept in the ``pubtator_id`` infon so the writer reproduces the file exactly.
Relation rows ``PMID CID D1 D2`` become relations with infons relation/Chemical/Disease, as in
the BC5CDR BioC release. We do not use bioc's PubTator writer: it adds a trailing tab.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import IO

from data_tools.documents import NO_CONCEPT, Annotation, Document, FormatError, Passage, Relation
from data_tools.formats.textio import read_text

_HEADER = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
_ID_SPLIT = re.compile(r"[|+]")
RAW_ID = "pubtator_id"


def _is_int(text: str) -> bool:
    return text.strip().lstrip("-").isdigit()


def parse_ids(raw: str) -> list[str]:
    """``'D1|D2'`` → ``['D1', 'D2']``; ``'-1'`` or empty → ``[]``."""
    ids = [part.strip() for part in _ID_SPLIT.split(raw)]
    return [] if raw.strip() in ("", NO_CONCEPT) else [i for i in ids if i and i != NO_CONCEPT]


def _relation(fields: list[str]) -> Relation:
    kind, args = fields[1], fields[2:]
    if kind == "CID" and len(args) == 2:
        infons = {"relation": "CID", "Chemical": args[0], "Disease": args[1]}
    else:
        infons = {"relation": kind, **{f"arg{n + 1}": a for n, a in enumerate(args)}}
    return Relation(infons=infons)


def read_pubtator(path: str | os.PathLike, strict: bool = False) -> Iterator[Document]:
    """Documents of a PubTator file, in file order.

    Malformed rows raise :class:`FormatError` naming the file and line. An annotation whose
    text differs from the document text at its offsets is kept as written (NCBI train has one
    such row) unless ``strict`` is set; the mismatch is noted in the ``text_mismatch`` infon.
    """
    path = str(path)
    text = read_text(path)
    doc: Document | None = None
    n_docs = 0
    relation_count = 0

    def finish(d: Document | None) -> Iterator[Document]:
        if d is not None:
            yield d

    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        header = _HEADER.match(line)
        if header:
            pmid, kind, body = header.groups()
            if kind == "t":
                yield from finish(doc)
                doc = Document(pmid, [Passage(0, body, {"type": "title"})])
                n_docs += 1
                relation_count = 0
            else:
                if doc is None or doc.id != pmid or len(doc.passages) != 1:
                    raise FormatError(f"abstract of {pmid} without its title line", path=path,
                                      where=where)
                doc.passages.append(Passage(len(doc.passages[0].text) + 1, body,
                                            {"type": "abstract"}))
            continue
        fields = line.split("\t")
        if doc is None:
            raise FormatError("row before any title line", path=path, where=where)
        if fields[0] != doc.id:
            raise FormatError(f"row for document {fields[0]} inside document {doc.id}",
                              path=path, where=where)
        if len(fields) >= 3 and not _is_int(fields[1]) and not _is_int(fields[2]):
            rel = _relation(fields)
            rel.id = f"R{relation_count}"
            relation_count += 1
            doc.relations.append(rel)
            continue
        if len(fields) not in (5, 6, 7):
            raise FormatError(f"annotation row has {len(fields)} columns, expected 5 to 7",
                              path=path, where=where)
        try:
            start, end = int(fields[1]), int(fields[2])
        except ValueError:
            raise FormatError(f"offsets {fields[1]!r}, {fields[2]!r} are not integers",
                              path=path, where=where) from None
        if start < 0 or end < start:
            raise FormatError(f"bad span {start}-{end}", path=path, where=where)
        infons: dict[str, str] = {}
        ann = Annotation(start, end, fields[3], fields[4], [], infons=infons)
        if len(fields) == 5:
            ann.no_id = True
        else:
            raw = fields[5]
            ann.concept_ids = parse_ids(raw)
            if raw != ann.concept_id:
                infons[RAW_ID] = raw
            if len(fields) == 7:
                ann.composite_texts = fields[6].split("|")
        passage = doc.passage_at(start)
        if passage is None or end > passage.end:
            raise FormatError(f"span {start}-{end} is outside the text of document {doc.id}",
                              path=path, where=where)
        actual = passage.text[start - passage.offset: end - passage.offset]
        if actual != ann.text:
            if strict:
                raise FormatError(f"text {ann.text!r} does not match {actual!r} at {start}-{end}",
                                  path=path, where=where)
            infons["text_mismatch"] = actual
        passage.annotations.append(ann)
    yield from finish(doc)
    if n_docs == 0:
        raise FormatError("no documents found (not PubTator?)", path=path)


def _id_field(ann: Annotation) -> str:
    raw = ann.infons.get(RAW_ID)
    if raw is not None and parse_ids(raw) == ann.concept_ids:
        return raw
    return ann.concept_id


def format_document(doc: Document) -> str:
    """One document as PubTator lines, ending with a blank line."""
    passages = sorted(doc.passages, key=lambda p: p.offset)
    title = passages[0].text if passages and passages[0].offset == 0 else ""
    if passages and passages[0].offset != 0:
        passages = [Passage(0, "", {"type": "title"}), *passages]
    if len(passages) > 1 and passages[1].offset < len(title) + 1:
        raise FormatError("passages overlap the title; PubTator cannot express this",
                          where=f"document {doc.id}")
    abstract = doc.text[len(title) + 1:] if len(passages) > 1 else ""
    for ch in ("\n", "\t"):
        if ch in title or ch in abstract:
            abstract = abstract.replace(ch, " ")
            title = title.replace(ch, " ")
    lines = [f"{doc.id}|t|{title}", f"{doc.id}|a|{abstract}"]
    for ann in doc.annotations:
        row = [doc.id, str(ann.start), str(ann.end), ann.text, ann.type]
        if not ann.no_id or ann.concept_ids:
            row.append(_id_field(ann))
            if ann.composite_texts:
                row.append("|".join(ann.composite_texts))
        lines.append("\t".join(row))
    for rel in doc.relations:
        values = list(rel.infons.values())
        if values and "relation" in rel.infons:
            values = [rel.infons["relation"]] + [v for k, v in rel.infons.items() if k != "relation"]
        lines.append("\t".join([doc.id, *values]))
    return "\n".join(lines) + "\n\n"


def write_pubtator(docs: Iterable[Document], handle: IO[str]) -> int:
    count = 0
    for doc in docs:
        handle.write(format_document(doc))
        count += 1
    return count
