"""BioC XML: a hardened streaming reader and a streaming writer, both on lxml.

We do not read with ``bioc.biocxml.BioCXMLDocumentReader``: it takes no parser options (so no
say over entities) and never frees parsed elements, so memory grows with the corpus. Here lxml's
iterparse runs with entity substitution, DTD loading and network access off and the huge-tree
limits on; each ``<document>`` is turned into a dict, converted and validated by
:mod:`bioc_model`, then cleared before the next one is read.

Entities: a file that declares any (``<!ENTITY ...>``) is refused before its first document,
which stops both external-entity reads (``SYSTEM "file:///etc/passwd"``) and expansion bombs;
an entity reference that still reaches a text is an error rather than silently cut text.
BioC files never need entities (``&amp;`` and ``&#233;`` are not entities in this sense).

The writer uses lxml's incremental ``xmlfile`` rather than bioc's writer so that the layout
(declaration, ``BioC.dtd`` doctype, one indented ``<document>`` at a time) is ours and stable:
the same documents always give the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import IO

from lxml import etree

from data_tools.documents import Document, FormatError, Skipped
from data_tools.formats.bioc_model import (
    collection_header,
    document_from_dict,
    document_to_dict,
    empty_info,
)
from data_tools.formats.textio import open_binary

_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, load_dtd=False,
                       huge_tree=False, remove_comments=True, remove_pis=True)
DOCTYPE = "<!DOCTYPE collection SYSTEM 'BioC.dtd'>"


def _text(elem) -> str | None:
    return None if elem is None else "".join(elem.itertext())


def _infons(elem) -> dict[str, str]:
    return {i.get("key", ""): _text(i) or "" for i in elem.iterchildren("infon")}


def _annotation(elem) -> dict:
    return {"id": elem.get("id"), "infons": _infons(elem),
            "text": _text(elem.find("text")),
            "locations": [{"offset": loc.get("offset"), "length": loc.get("length")}
                          for loc in elem.iterchildren("location")]}


def _relation(elem) -> dict:
    return {"id": elem.get("id"), "infons": _infons(elem),
            "nodes": [{"refid": n.get("refid"), "role": n.get("role")}
                      for n in elem.iterchildren("node")]}


def _container(elem) -> dict:
    """A passage or sentence: infons, offset, text, annotations, relations (and sentences)."""
    return {"offset": elem.findtext("offset"), "infons": _infons(elem),
            "text": _text(elem.find("text")),
            "sentences": [_container(s) for s in elem.iterchildren("sentence")],
            "annotations": [_annotation(a) for a in elem.iterchildren("annotation")],
            "relations": [_relation(r) for r in elem.iterchildren("relation")]}


def _document_dict(elem) -> dict:
    return {"id": elem.findtext("id"), "infons": _infons(elem),
            "passages": [_container(p) for p in elem.iterchildren("passage")],
            "annotations": [_annotation(a) for a in elem.iterchildren("annotation")],
            "relations": [_relation(r) for r in elem.iterchildren("relation")]}


def _syntax_error(path: str, exc: etree.XMLSyntaxError) -> FormatError:
    message = getattr(exc, "msg", None) or str(exc).splitlines()[0] or type(exc).__name__
    where = f"line {exc.lineno}" if getattr(exc, "lineno", None) else None
    if "entity" in message.lower():
        # the parser itself stopped an entity's expansion (lxml 6.2's libxml2: "Maximum
        # entity amplification factor exceeded") before the DTD check below could refuse it
        message += " (XML entities are refused for safety, and BioC never needs them)"
    return FormatError(f"malformed XML: {message}", path=path, where=where)


def _check_root(elem, path: str) -> None:
    if elem.tag != "collection":
        raise FormatError(f"root element is <{elem.tag}>, not a BioC <collection>", path=path,
                          where=f"line {elem.sourceline}")
    dtd = elem.getroottree().docinfo.internalDTD
    if dtd is not None and next(iter(dtd.iterentities()), None) is not None:
        raise FormatError("the file declares XML entities (<!ENTITY ...>); they are refused "
                          "for safety and BioC never needs them", path=path)


def _events(path: str) -> Iterator[tuple[int, str, object]]:
    """``(depth, event, element)`` triples; the root is depth 1, its children depth 2."""
    depth = 0
    with open_binary(path) as handle:
        try:
            for event, elem in etree.iterparse(handle, events=("start", "end"),
                                               **_PARSER_OPTIONS):
                if event == "start":
                    depth += 1
                    if depth == 1:
                        _check_root(elem, path)
                    yield depth, event, elem
                else:
                    yield depth, event, elem
                    depth -= 1
        except etree.XMLSyntaxError as exc:
            raise _syntax_error(path, exc) from None
        except (OSError, EOFError) as exc:
            raise FormatError(f"cannot read the file ({exc})", path=path) from None


def read_biocxml(path: str | os.PathLike, strict: bool = False,
                 skip: bool = False) -> Iterator[Document | Skipped]:
    """Documents of a BioC XML file, one at a time, in bounded memory.

    With ``skip``, a document that fails validation is yielded as a :class:`Skipped` record
    and reading goes on; an XML syntax error (a truncated file) ends the file with one
    ``Skipped`` record for the rest of it, after the documents read before it.
    """
    path = str(path)
    count = 0
    root_seen = False
    try:
        for depth, event, elem in _events(path):
            root_seen = True
            if event != "end" or depth != 2 or elem.tag != "document":
                continue
            count += 1
            label = f"document #{count} (line {elem.sourceline})"
            record: Document | Skipped
            try:
                entity = next(elem.iter(etree.Entity), None)
                if entity is not None:
                    raise FormatError(f"entity reference {entity.text} is not allowed (entities "
                                      "are never expanded)", path=path, where=label)
                record = document_from_dict(_document_dict(elem), path, label, strict)
            except FormatError as exc:
                if not skip:
                    raise
                record = Skipped.from_error(exc, path)
            elem.clear()
            while elem.getprevious() is not None:  # drop finished documents from the tree
                del elem.getparent()[0]
            yield record
        if not root_seen:
            raise FormatError("no XML content (empty file)", path=path)
        if count == 0:
            raise FormatError("no documents (no <document> in the collection)", path=path)
    except FormatError as exc:
        if not skip:
            raise
        rest = "; the rest of the file is skipped" if count else ""
        yield Skipped(path, exc.where, exc.message + rest)


def read_biocxml_info(path: str | os.PathLike) -> dict:
    """Collection-level ``source``, ``date``, ``key`` and infons (reads up to the first document)."""
    info = empty_info()
    for depth, event, elem in _events(str(path)):
        if depth != 2:
            continue
        if elem.tag == "document":
            break
        if event == "end" and elem.tag in ("source", "date", "key"):
            info[elem.tag] = _text(elem) or ""
        elif event == "end" and elem.tag == "infon":
            info["infons"][elem.get("key", "")] = _text(elem) or ""
    return info


def _leaf(parent, tag: str, text: str, **attrib: str):
    elem = etree.SubElement(parent, tag, attrib)
    elem.text = text
    return elem


def _add_infons(parent, infons: dict[str, str]) -> None:
    for key, value in infons.items():
        _leaf(parent, "infon", value, key=key)


def _add_annotation(parent, ann: dict) -> None:
    elem = etree.SubElement(parent, "annotation", id=ann["id"])
    _add_infons(elem, ann["infons"])
    for loc in ann["locations"]:
        etree.SubElement(elem, "location", offset=str(loc["offset"]), length=str(loc["length"]))
    _leaf(elem, "text", ann["text"])


def _add_relation(parent, rel: dict) -> None:
    elem = etree.SubElement(parent, "relation", id=rel["id"])
    _add_infons(elem, rel["infons"])
    for node in rel["nodes"]:
        etree.SubElement(elem, "node", refid=node["refid"], role=node["role"])


def document_element(doc: Document):
    """The ``<document>`` element of ``doc`` (BioC DTD child order)."""
    obj = document_to_dict(doc)
    elem = etree.Element("document")
    _leaf(elem, "id", obj["id"])
    _add_infons(elem, obj["infons"])
    for p in obj["passages"]:
        passage = etree.SubElement(elem, "passage")
        _add_infons(passage, p["infons"])
        _leaf(passage, "offset", str(p["offset"]))
        _leaf(passage, "text", p["text"])
        for ann in p["annotations"]:
            _add_annotation(passage, ann)
        for rel in p["relations"]:
            _add_relation(passage, rel)
    for rel in obj["relations"]:
        _add_relation(elem, rel)
    return elem


class BioCXMLWriter:
    """Streams documents into a BioC XML collection: header first, one document at a time."""

    def __init__(self, handle: IO[bytes], info: dict | None = None, path: str | None = None):
        self.path = path
        self._stack = ExitStack()
        self._xf = self._stack.enter_context(etree.xmlfile(handle, encoding="UTF-8"))
        self._xf.write_declaration()
        self._xf.write_doctype(DOCTYPE)
        self._stack.enter_context(self._xf.element("collection"))
        self._xf.write("\n")
        header = collection_header(info)
        head = etree.Element("head")
        for tag in ("source", "date", "key"):
            _leaf(head, tag, header[tag])
        _add_infons(head, header["infons"])
        for elem in head:
            self._xf.write(elem, pretty_print=True)

    def write(self, doc: Document) -> None:
        if not doc.passages:  # BioC.dtd: <!ELEMENT document ( id, infon*, passage+, relation* )>
            raise FormatError("has no passages; a BioC XML document needs at least one "
                              "(write BioC JSON or PubTator instead)", path=self.path,
                              where=f"document {doc.id}")
        try:
            elem = document_element(doc)
        except (ValueError, TypeError) as exc:  # lxml refuses control characters, None ids...
            raise FormatError(f"cannot be written as XML: {exc}", path=self.path,
                              where=f"document {doc.id}") from None
        self._xf.write(elem, pretty_print=True)

    def close(self) -> None:
        self._stack.close()


def write_biocxml(docs: Iterable[Document], handle: IO[bytes], info: dict | None = None) -> int:
    """Write ``docs`` as one collection to an open binary handle; returns the count."""
    writer = BioCXMLWriter(handle, info)
    count = 0
    for doc in docs:
        writer.write(doc)
        count += 1
    writer.close()
    return count
