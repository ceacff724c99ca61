"""BioC JSON (the ``bioc`` package's layout), plus JSON Lines with one document per line.

A JSON collection is parsed whole (JSON has no standard streaming parser in the stdlib);
JSON Lines streams. Writing streams either way: the collection header, then each document
serialised by bioc's ``toJSON``, so memory stays bounded by one document.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import IO

from bioc.biocjson.decoder import parse_doc
from bioc.biocjson.encoder import toJSON

from data_tools.documents import Document, FormatError
from data_tools.formats.bioc_model import document_from_bioc, document_to_bioc
from data_tools.formats.biocxml import collection_header
from data_tools.formats.textio import read_text

_DOC_KEYS = {"id", "passages"}


def _convert(obj, path: str, where: str) -> Document:
    if not isinstance(obj, dict) or not _DOC_KEYS <= set(obj):
        raise FormatError("not a BioC JSON document (needs 'id' and 'passages')", path=path,
                          where=where)
    try:
        obj = {"infons": {}, "relations": [], "annotations": [], **obj}
        for p in obj["passages"]:
            p.setdefault("infons", {})
            p.setdefault("sentences", [])
            p.setdefault("annotations", [])
            p.setdefault("relations", [])
            p.setdefault("offset", 0)
            p.setdefault("text", "")
        return document_from_bioc(parse_doc(obj), path)
    except FormatError as exc:
        if exc.path:
            raise
        raise FormatError(str(exc), path=path, where=where) from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise FormatError(f"malformed BioC JSON ({type(exc).__name__}: {exc})", path=path,
                          where=where) from None


def _load(path: str):
    text = read_text(path)
    if not text.strip():
        raise FormatError("empty file", path=path)
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.split("\n") if ln.strip()]
        if len(lines) > 1 and exc.msg == "Extra data":
            return None, lines  # JSON Lines
        raise FormatError(f"invalid JSON: {exc.msg}", path=path,
                          where=f"line {exc.lineno}") from None


def read_biocjson(path: str | os.PathLike) -> Iterator[Document]:
    path = str(path)
    data, lines = _load(path)
    if lines is not None:
        for n, line in enumerate(lines, start=1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FormatError(f"invalid JSON: {exc.msg}", path=path, where=f"line {n}") from None
            yield _convert(obj, path, f"line {n}")
        return
    if isinstance(data, dict) and "documents" in data:
        docs = data["documents"]
    elif isinstance(data, list):
        docs = data
    elif isinstance(data, dict) and _DOC_KEYS <= set(data):
        docs = [data]
    else:
        raise FormatError("not a BioC JSON collection (no 'documents' list)", path=path)
    if not isinstance(docs, list):
        raise FormatError("'documents' is not a list", path=path)
    if not docs:
        raise FormatError("no documents in the collection", path=path)
    for n, obj in enumerate(docs):
        where = f"document {obj.get('id', n + 1) if isinstance(obj, dict) else n + 1}"
        yield _convert(obj, path, where)


def read_biocjson_info(path: str | os.PathLike) -> dict:
    data, lines = _load(str(path))
    if lines is not None or not isinstance(data, dict):
        return {"source": "", "date": "", "key": "", "infons": {}}
    return {k: data.get(k, {} if k == "infons" else "") for k in ("source", "date", "key", "infons")}


class BioCJSONWriter:
    """Streams a BioC JSON collection: header, documents one by one, closing brackets."""

    def __init__(self, handle: IO[str], info: dict | None = None):
        header = collection_header(info)
        self.handle = handle
        head = {"source": header.source, "date": header.date, "key": header.key,
                "infons": header.infons}
        self.handle.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "documents": [\n')
        self.count = 0

    def write(self, doc: Document) -> None:
        if self.count:
            self.handle.write(",\n")
        self.handle.write(json.dumps(toJSON(document_to_bioc(doc)), ensure_ascii=False))
        self.count += 1

    def close(self) -> None:
        self.handle.write("\n]}\n")


def write_biocjson(docs: Iterable[Document], handle: IO[str], info: dict | None = None) -> int:
    writer = BioCJSONWriter(handle, info)
    for doc in docs:
        writer.write(doc)
    writer.close()
    return writer.count
