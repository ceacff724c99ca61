"""Format detection and the two entry points: ``read_documents`` and ``open_writer``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from data_tools.documents import Document, FormatError
from data_tools.formats.atomic import atomic_output

FORMATS = ("pubtator", "bioc", "biocjson")
ALIASES = {"biocxml": "bioc", "xml": "bioc", "json": "biocjson", "txt": "pubtator"}
_SUFFIXES = {".xml": "bioc", ".json": "biocjson", ".jsonl": "biocjson", ".txt": "pubtator",
             ".pubtator": "pubtator", ".tsv": "pubtator"}


def _canonical(fmt: str) -> str:
    fmt = ALIASES.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    return fmt


def _sniff(path: Path) -> str | None:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"<"):
        return "bioc"
    if head.startswith((b"{", b"[")):
        return "biocjson"
    first = head.split(b"\n", 1)[0]
    if b"|t|" in first or b"|a|" in first:
        return "pubtator"
    return None


def detect_format(path: str | os.PathLike, for_writing: bool = False) -> str:
    """The format of ``path`` from its name, else from its first bytes (reading only)."""
    path = Path(path)
    name = path.name.lower()
    for suffix in (".gz",):
        name = name.removesuffix(suffix)
    fmt = _SUFFIXES.get(Path(name).suffix)
    if fmt is None and not for_writing and path.is_file():
        fmt = _sniff(path)
    if fmt is None:
        raise FormatError("cannot tell the format (use .xml, .json or .txt, or --format)",
                          path=str(path))
    return fmt


def _files(path: Path) -> list[Path]:
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise FormatError("directory has no files", path=str(path))
    return files


def read_documents(path: str | os.PathLike, fmt: str | None = None) -> Iterator[Document]:
    """Stream the documents of a file, or of every file in a directory (sorted by name)."""
    path = Path(path)
    if path.is_dir():
        for child in _files(path):
            yield from read_documents(child, fmt)
        return
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    fmt = _canonical(fmt) if fmt else detect_format(path)
    if path.stat().st_size == 0:
        raise FormatError("empty file", path=str(path))
    if fmt == "pubtator":
        from data_tools.formats.pubtator import read_pubtator

        yield from read_pubtator(path)
    elif fmt == "bioc":
        from data_tools.formats.biocxml import read_biocxml

        yield from read_biocxml(path)
    else:
        from data_tools.formats.biocjson import read_biocjson

        yield from read_biocjson(path)


def read_collection_info(path: str | os.PathLike, fmt: str | None = None) -> dict:
    """BioC collection source/date/key/infons of ``path`` (empty values for PubTator)."""
    path = Path(path)
    if path.is_dir():
        path = _files(path)[0]
    fmt = _canonical(fmt) if fmt else detect_format(path)
    if fmt == "bioc":
        from data_tools.formats.biocxml import read_biocxml_info

        return read_biocxml_info(path)
    if fmt == "biocjson":
        from data_tools.formats.biocjson import read_biocjson_info

        return read_biocjson_info(path)
    return {"source": "", "date": "", "key": "", "infons": {}}


class _PubTatorWriter:
    def __init__(self, handle):
        self.handle = handle

    def write(self, doc: Document) -> None:
        from data_tools.formats.pubtator import format_document

        self.handle.write(format_document(doc))

    def close(self) -> None:
        pass


@contextmanager
def open_writer(path: str | os.PathLike, fmt: str | None = None,
                collection_info: dict | None = None):
    """A writer with ``.write(doc)``; the file appears (atomically) only if the block succeeds."""
    fmt = _canonical(fmt) if fmt else detect_format(path, for_writing=True)
    mode = "wb" if fmt == "bioc" else "w"
    with atomic_output(path, mode) as handle:
        if fmt == "bioc":
            from data_tools.formats.biocxml import BioCXMLWriter

            writer = BioCXMLWriter(handle, collection_info)
        elif fmt == "biocjson":
            from data_tools.formats.biocjson import BioCJSONWriter

            writer = BioCJSONWriter(handle, collection_info)
        else:
            writer = _PubTatorWriter(handle)
        yield writer
        writer.close()


def write_documents(docs: Iterable[Document], path: str | os.PathLike, fmt: str | None = None,
                    collection_info: dict | None = None) -> int:
    """Write all ``docs``; returns how many were written."""
    count = 0
    with open_writer(path, fmt, collection_info) as writer:
        for doc in docs:
            writer.write(doc)
            count += 1
    return count
