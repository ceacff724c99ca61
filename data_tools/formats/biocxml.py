"""BioC XML: a hardened streaming reader and bioc's own streaming writer.

We do not read with ``bioc.biocxml.BioCXMLDocumentReader``: it takes no parser options and
never frees parsed elements, so memory grows with the corpus. Our reader uses lxml iterparse
with external entities, DTD loading and network access off and the huge-tree limits on, builds
each ``<document>`` with bioc's classes, converts it, and clears it before reading the next.
Writing goes through ``bioc.biocxml.BioCXMLDocumentWriter`` (lxml's incremental xmlfile).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO

import bioc
from lxml import etree

from data_tools.documents import Document, FormatError
from data_tools.formats.bioc_model import document_from_bioc, document_to_bioc

_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, load_dtd=False,
                       huge_tree=False, remove_comments=True, remove_pis=True)


def _iterparse(path: str, events=("start", "end")):
    return etree.iterparse(path, events=events, **_PARSER_OPTIONS)


def _text(elem) -> str:
    return elem.text or ""


def _infons(elem) -> dict[str, str]:
    return {i.get("key"): _text(i) for i in elem.findall("infon")}


def _annotation(elem) -> bioc.BioCAnnotation:
    ann = bioc.BioCAnnotation()
    ann.id = elem.get("id")
    ann.infons = _infons(elem)
    for loc in elem.findall("location"):
        try:
            ann.add_location(bioc.BioCLocation(int(loc.get("offset")), int(loc.get("length"))))
        except (TypeError, ValueError):
            raise FormatError(f"annotation {ann.id} has a non-numeric location") from None
    node = elem.find("text")
    ann.text = _text(node) if node is not None else ""
    return ann


def _relation(elem) -> bioc.BioCRelation:
    rel = bioc.BioCRelation()
    rel.id = elem.get("id")
    rel.infons = _infons(elem)
    for node in elem.findall("node"):
        rel.add_node(bioc.BioCNode(node.get("refid"), node.get("role")))
    return rel


def _document(elem) -> bioc.BioCDocument:
    doc = bioc.BioCDocument()
    node = elem.find("id")
    doc.id = _text(node) if node is not None else ""
    doc.infons = _infons(elem)
    for p in elem.findall("passage"):
        passage = bioc.BioCPassage()
        passage.infons = _infons(p)
        off = p.find("offset")
        try:
            passage.offset = int(_text(off)) if off is not None else 0
        except ValueError:
            raise FormatError(f"document {doc.id}: non-numeric passage offset") from None
        txt = p.find("text")
        passage.text = _text(txt) if txt is not None else ""
        for _ in p.findall("sentence"):
            passage.add_sentence(bioc.BioCSentence())
        for a in p.findall("annotation"):
            passage.add_annotation(_annotation(a))
        for r in p.findall("relation"):
            passage.add_relation(_relation(r))
        doc.add_passage(passage)
    for a in elem.findall("annotation"):
        doc.add_annotation(_annotation(a))
    for r in elem.findall("relation"):
        doc.add_relation(_relation(r))
    return doc


def _syntax_error(path: str, exc: Exception) -> FormatError:
    where = f"line {exc.lineno}" if getattr(exc, "lineno", None) else None
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return FormatError(f"malformed XML: {message}", path=path, where=where)


def read_biocxml(path: str | os.PathLike) -> Iterator[Document]:
    """Documents of a BioC XML file, one at a time, in bounded memory."""
    path = str(path)
    depth = 0
    count = 0
    root_seen = False
    last_id = None
    try:
        for event, elem in _iterparse(path):
            if event == "start":
                depth += 1
                if depth == 1:
                    root_seen = True
                    if elem.tag != "collection":
                        raise FormatError(f"root element is <{elem.tag}>, not <collection>",
                                          path=path)
                continue
            depth -= 1
            if depth == 1 and elem.tag == "document":
                try:
                    doc = document_from_bioc(_document(elem), path)
                except FormatError as exc:
                    if exc.path:
                        raise
                    raise FormatError(str(exc), path=path,
                                      where=f"document {count + 1} (after {last_id})") from None
                count += 1
                last_id = doc.id
                elem.clear()
                while elem.getprevious() is not None:
                    del elem.getparent()[0]
                yield doc
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(path, exc) from None
    if not root_seen:
        raise FormatError("empty XML file", path=path)
    if count == 0:
        raise FormatError("no <document> in the collection", path=path)


def read_biocxml_info(path: str | os.PathLike) -> dict:
    """Collection-level ``source``, ``date``, ``key`` and infons (read up to the first document)."""
    info = {"source": "", "date": "", "key": "", "infons": {}}
    depth = 0
    try:
        for event, elem in _iterparse(str(path)):
            if event == "start":
                depth += 1
                if depth == 2 and elem.tag == "document":
                    break
                continue
            depth -= 1
            if depth == 1 and elem.tag in ("source", "date", "key"):
                info[elem.tag] = _text(elem)
            elif depth == 1 and elem.tag == "infon":
                info["infons"][elem.get("key")] = _text(elem)
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(str(path), exc) from None
    return info


def collection_header(info: dict | None) -> bioc.BioCCollection:
    """Collection info for writing; never today's date (output must be byte-stable)."""
    info = info or {}
    collection = bioc.BioCCollection()
    collection.source = info.get("source") or "e2e_linker"
    collection.date = info.get("date") or ""
    collection.key = info.get("key") or ""
    collection.infons = dict(info.get("infons") or {})
    return collection


class BioCXMLWriter:
    """Streams documents into a BioC XML file through bioc's writer."""

    def __init__(self, handle: IO[bytes], info: dict | None = None):
        self._writer = bioc.biocxml.BioCXMLDocumentWriter(handle)
        self._writer.write_collection_info(collection_header(info))

    def write(self, doc: Document) -> None:
        self._writer.write_document(document_to_bioc(doc))

    def close(self) -> None:
        self._writer.close()


def write_biocxml(docs: Iterable[Document], handle: IO[bytes], info: dict | None = None) -> int:
    writer = BioCXMLWriter(handle, info)
    count = 0
    for doc in docs:
        writer.write(doc)
        count += 1
    writer.close()
    return count
