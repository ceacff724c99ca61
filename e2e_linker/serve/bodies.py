"""Request bodies as documents, and documents back as response bodies.

Why through the project's own readers and writers: a BioC or PubTator body must come back
in its format with the annotations added and nothing else changed — the bytes ``linker
annotate`` writes for the same file — and must be read as warily as a file is (the BioC XML
reader refuses entities and DTDs, never touches the network). The readers read paths, so a
body is written to a private temporary file first: the server picks that path; nothing in a
request ever names a file the server reads. A compressed body is refused (the readers would
inflate it past the request size limit).

Plain texts (JSON ``text``/``texts``, or a ``text/plain`` body) become one-passage documents at
offset 0, as ``linker annotate --lines`` makes each line, so mention offsets are offsets into
the text.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from data_tools.documents import Document, FormatError, Passage
from data_tools.formats import read_collection_info, read_documents, write_documents
from e2e_linker.serve.errors import RequestError

#: request media type → document format read and written back
DOCUMENT_TYPES = {
    "application/xml": "bioc", "text/xml": "bioc", "application/bioc+xml": "bioc",
    "application/bioc+json": "biocjson", "application/vnd.bioc+json": "biocjson",
    "text/x-pubtator": "pubtator", "text/pubtator": "pubtator",
    "application/x-pubtator": "pubtator",
}
#: the media type answered for each document format
FORMAT_TYPES = {"bioc": "application/xml", "biocjson": "application/bioc+json",
                "pubtator": "text/x-pubtator"}
JSON = "application/json"
TEXT = "text/plain"
NDJSON = "application/x-ndjson"
FORM = "application/x-www-form-urlencoded"
SUPPORTED = ", ".join([JSON, TEXT, *DOCUMENT_TYPES])
#: the file name each format's body is read from (the name tells the reader the format)
SUFFIXES = {"bioc": ".xml", "biocjson": ".json", "pubtator": ".pubtator"}
_GZIP = b"\x1f\x8b"
#: format error messages that mean the body could not be parsed at all (400); the others
#: are parsed bodies with wrong content (422)
_SYNTAX = ("malformed XML", "invalid JSON", "not valid UTF-8", "JSON nested too deeply",
           "no XML content", "cannot read")


def media_type(content_type: str | None, body: bytes) -> str:
    """The request's media type, lower case and without parameters; a missing (or curl's
    default form) type is guessed from the body's first byte: ``{`` JSON, ``<`` BioC XML.
    A charset other than UTF-8 is refused (415); a gzip body is refused (400) whatever its
    type, before any parser sees it (a JSON one read "malformed JSON": issue 47, case 10)."""
    refuse_compressed(body)
    kind, _, params = (content_type or "").partition(";")
    kind = kind.strip().lower()
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and \
                value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise RequestError(415, f"charset {value.strip()} is not supported: send UTF-8")
    if kind in ("", FORM):
        head = body.lstrip()[:1]
        if head == b"{":
            return JSON
        if head == b"<":
            return "application/xml"
    return kind


def refuse_compressed(body: bytes) -> None:
    """The documented 400 for a gzip-compressed body (its magic bytes), for every media type.

    Why refused, not inflated: the readers would inflate it past the request size limit.
    """
    if body.startswith(_GZIP):
        raise RequestError(400, "compressed bodies are not accepted: send the document "
                                "uncompressed")


def document_format(kind: str) -> str | None:
    """The document format of a media type (None: not a document body)."""
    return DOCUMENT_TYPES.get(kind)


def unsupported(kind: str) -> RequestError:
    """The 415 answer for a media type ``/annotate`` does not take."""
    return RequestError(415, f"Content-Type {kind or '(none)'} is not supported; send one "
                             f"of {SUPPORTED}")


def decode_text(body: bytes) -> str:
    """A ``text/plain`` body as text (strict UTF-8, a leading BOM dropped)."""
    try:
        return body.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not valid UTF-8 (byte {body[exc.start]:#04x} at "
                                f"offset {exc.start})") from None


def text_documents(items: Sequence[tuple[str, str]]) -> list[Document]:
    """``(ID, text)`` pairs as one-passage documents at offset 0. A text that cannot be
    written as UTF-8 (a lone surrogate, which JSON allows) is refused (422)."""
    docs = []
    for number, (doc_id, text) in enumerate(items):
        for label, value in (("text", text), ("id", doc_id)):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise RequestError(422, f"texts[{number}]: the {label} is not valid Unicode "
                                        "(a lone surrogate)") from None
        docs.append(Document(id=doc_id, passages=[Passage(offset=0, text=text)]))
    return docs


def format_error(exc: FormatError, fmt: str) -> RequestError:
    """A reader's error as a refused request: its place in the body and its message, never
    the temporary file's name."""
    where = f"{exc.where}: " if exc.where else ""
    status = 400 if exc.message.startswith(_SYNTAX) else 422
    return RequestError(status, f"{fmt} body: {where}{exc.message}")


def read_body(body: bytes, fmt: str, max_documents: int) -> tuple[list[Document], dict]:
    """The documents of a BioC XML / BioC JSON / PubTator body, and its collection info
    (source, date, key, infons), read as ``linker annotate`` reads a file: every problem is
    a :class:`RequestError` naming the document or line (400 unparsable, 422 invalid)."""
    refuse_compressed(body)
    if not body.strip():
        raise RequestError(400, f"{fmt} body: no documents (the body is empty)")
    with tempfile.TemporaryDirectory(prefix="linker-serve-") as folder:
        path = Path(folder) / f"body{SUFFIXES[fmt]}"
        path.write_bytes(body)
        try:
            docs = []
            seen: set[str] = set()
            for doc in read_documents(path, fmt):
                if doc.id in seen:
                    raise FormatError(f"duplicate document id {doc.id!r}",
                                      where=f"document {doc.id}")
                seen.add(doc.id)
                docs.append(doc)
                if len(docs) > max_documents:
                    raise RequestError(413, f"more than {max_documents} documents in one "
                                            "request (linker serve --max-queue)")
            info = read_collection_info(path, fmt)
        except FormatError as exc:
            raise format_error(exc, fmt) from None
    return docs, info


def write_body(docs: Sequence[Document], fmt: str, info: dict) -> bytes:
    """``docs`` in ``fmt`` with the collection info read from the request: the bytes
    ``linker annotate`` writes to a file. A document the format cannot hold is 422."""
    with tempfile.TemporaryDirectory(prefix="linker-serve-") as folder:
        path = Path(folder) / f"out{SUFFIXES[fmt]}"
        try:
            write_documents(docs, path, fmt, info)
        except FormatError as exc:
            raise format_error(exc, fmt) from None
        return path.read_bytes()
