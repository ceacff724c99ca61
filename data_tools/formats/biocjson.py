"""BioC JSON (the ``bioc`` package's layout), plus JSON Lines with one document per line.

A JSON collection is parsed whole: the stdlib has no streaming JSON parser and a collection is
one value. JSON Lines (``.jsonl``, or any file whose JSON value is followed by more values)
streams line by line. Writing always streams: the collection header, then each document as
one line, then the closing brackets, so memory stays bounded by one document; a ``.jsonl``
target gets bare document lines (JSON Lines has no place for collection info).

Documents may omit empty lists (``sentences``, ``relations``...), but a wrong shape (no
``id``/``passages``, a string where a list belongs, a non-integer offset) is a
:class:`FormatError` naming the file and document.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from data_tools.documents import Document, FormatError, Skipped
from data_tools.formats.bioc_model import (
    collection_header,
    document_from_dict,
    document_to_dict,
    empty_info,
)
from data_tools.formats.textio import iter_lines_checked, read_text


def _is_jsonl(path: str) -> bool:
    return path.lower().removesuffix(".gz").endswith(".jsonl")


def _load(path: str) -> Any:
    """The file's JSON value, or ``None`` when it is JSON Lines."""
    text = read_text(path)
    if not text.strip():
        raise FormatError("no documents (the file is empty)", path=path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None
        raise FormatError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path,
                          where=f"line {exc.lineno}") from None
    except RecursionError:  # '[[[[...' a hundred thousand deep: hostile, never BioC
        raise FormatError("JSON nested too deeply to be BioC", path=path) from None


def _read_lines(path: str, strict: bool, skip: bool) -> Iterator[Document | Skipped]:
    count = 0
    for lineno, line, decode_error in iter_lines_checked(path):
        if not line.strip():
            continue
        count += 1
        try:
            if decode_error is not None:
                raise decode_error
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FormatError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path,
                                  where=f"line {lineno}") from None
            except RecursionError:
                raise FormatError("JSON nested too deeply to be BioC", path=path,
                                  where=f"line {lineno}") from None
            yield document_from_dict(obj, path, f"line {lineno}", strict)
        except FormatError as exc:
            if not skip:
                raise
            yield Skipped.from_error(exc, path)
    if count == 0:
        error = FormatError("no documents (the file is empty)", path=path)
        if not skip:
            raise error
        yield Skipped.from_error(error)


def _documents_of(data: Any, path: str) -> list:
    if isinstance(data, dict) and "documents" in data:
        docs = data["documents"]
        if not isinstance(docs, list):
            raise FormatError(f"'documents' is a {type(docs).__name__}, expected a list",
                              path=path)
        return docs
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "passages" in data:
        return [data]  # a single document
    raise FormatError("not a BioC JSON collection: expected an object with a 'documents' list, "
                      "a list of documents, or one document", path=path)


def read_biocjson(path: str | os.PathLike, strict: bool = False,
                  skip: bool = False) -> Iterator[Document | Skipped]:
    """Documents of a BioC JSON collection or JSON Lines file, in file order.

    With ``skip``, a document of the wrong shape is yielded as a :class:`Skipped` record and
    reading goes on; a file that is not JSON at all is one ``Skipped`` record.
    """
    path = str(path)
    try:
        data = None if _is_jsonl(path) else _load(path)
        docs = None if data is None else _documents_of(data, path)
        if docs is not None and not docs:
            raise FormatError("no documents (the collection's 'documents' list is empty)",
                              path=path)
    except FormatError as exc:
        if not skip:
            raise
        yield Skipped.from_error(exc, path)
        return
    if docs is None:
        yield from _read_lines(path, strict, skip)
        return
    for n, obj in enumerate(docs, start=1):
        try:
            yield document_from_dict(obj, path, f"document #{n}", strict)
        except FormatError as exc:
            if not skip:
                raise
            yield Skipped.from_error(exc, path)


def read_biocjson_info(path: str | os.PathLike) -> dict:
    """Collection ``source``/``date``/``key``/``infons`` (empty for JSON Lines)."""
    path = str(path)
    data = None if _is_jsonl(path) else _load(path)
    if not isinstance(data, dict) or "documents" not in data:
        return empty_info()
    infons = data.get("infons") or {}
    if not isinstance(infons, dict):
        raise FormatError("collection 'infons' is not an object", path=path)
    return {"source": data.get("source") or "", "date": data.get("date") or "",
            "key": data.get("key") or "", "infons": infons}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


class BioCJSONWriter:
    """Streams a BioC JSON collection (or JSON Lines when ``lines`` is set)."""

    def __init__(self, handle: IO[str], info: dict | None = None, lines: bool = False):
        self.handle = handle
        self.lines = lines
        self.count = 0
        if not lines:
            head = {"bioctype": "BioCCollection", **collection_header(info), "version": "1.0"}
            self.handle.write(_dumps(head)[:-1] + ', "documents": [\n')

    def write(self, doc: Document) -> None:
        if self.count and not self.lines:
            self.handle.write(",\n")
        self.handle.write(_dumps(document_to_dict(doc)))
        if self.lines:
            self.handle.write("\n")
        self.count += 1

    def close(self) -> None:
        if not self.lines:
            self.handle.write("\n]}\n")


def write_biocjson(docs: Iterable[Document], handle: IO[str], info: dict | None = None,
                   lines: bool = False) -> int:
    """Write ``docs`` to an open text handle; returns the count."""
    writer = BioCJSONWriter(handle, info, lines)
    for doc in docs:
        writer.write(doc)
    writer.close()
    return writer.count
