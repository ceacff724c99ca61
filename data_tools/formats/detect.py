"""Format detection and the entry points: ``read_documents``, ``open_writer`` and friends.

The rest of the project never imports a format module directly: it reads with
``read_documents(path)`` and writes with ``open_writer(path)``, and the format comes from the
file name (``.xml`` → BioC XML, ``.json``/``.jsonl`` → BioC JSON, ``.txt``/``.pubtator`` →
PubTator; a trailing ``.gz`` is ignored) or, for reading an unknown name, from the first bytes.

A ``.txt`` file being read is PubTator only when its first bytes look like PubTator
(``PMID|t|``); any other ``.txt`` is plain text (:mod:`data_tools.formats.plaintext`), one
document per file, or per line with the ``text-lines`` format. Two formats go one way only:
plain text is read, never written, and ``mentions`` (one JSON object per mention,
:mod:`data_tools.formats.mentions_jsonl`) is written, never read. The path ``-`` writes to
standard output (not atomically: what was written before a failure stays written).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Protocol

from data_tools.documents import Annotation, Document, FormatError, Skipped, display_path
from data_tools.formats.atomic import atomic_output
from data_tools.formats.bioc_model import empty_info
from data_tools.formats.textio import head_bytes

FORMATS = ("pubtator", "bioc", "biocjson")
#: plain text: read only (a whole file, or one document per line)
TEXT_FORMATS = ("text", "text-lines")
#: one JSON object per mention: written only
MENTIONS = "mentions"
ALIASES = {"biocxml": "bioc", "xml": "bioc", "bioc-xml": "bioc", "json": "biocjson",
           "jsonl": "biocjson", "bioc-json": "biocjson", "txt": "pubtator",
           "plaintext": "text", "lines": "text-lines", "mentions-jsonl": MENTIONS}
#: the path that means standard output for writers
STDOUT = "-"
_SUFFIXES = {".xml": "bioc", ".json": "biocjson", ".jsonl": "biocjson", ".txt": "pubtator",
             ".pubtator": "pubtator"}
_PUBTATOR_HEAD = re.compile(rb"^[^|\t\n]+\|[ta]\|")
#: a ``.txt`` file is PubTator when it starts with a header or (malformed, but PubTator to be
#: reported as such) an annotation row
_PUBTATOR_TXT = re.compile(rb"^[^|\t\n]+(?:\|[ta]\||\t-?\d+\t-?\d+\t)")


class Writer(Protocol):
    """What ``open_writer`` yields."""

    def write(self, doc: Document) -> None: ...

    def close(self) -> None: ...


def canonical_format(fmt: str) -> str:
    """``"xml"`` → ``"bioc"`` etc.; an unknown name is a :class:`FormatError`."""
    name = ALIASES.get(fmt.lower(), fmt.lower())
    if name not in (*FORMATS, *TEXT_FORMATS, MENTIONS):
        raise FormatError(f"unknown format {fmt!r}; use one of "
                          f"{', '.join((*FORMATS, *TEXT_FORMATS, MENTIONS))}")
    return name


def _from_name(path: Path) -> str | None:
    name = path.name.lower().removesuffix(".gz")
    return _SUFFIXES.get(os.path.splitext(name)[1])


def _head(path: Path) -> bytes:
    return head_bytes(path).removeprefix(b"\xef\xbb\xbf").lstrip()


def _sniff(path: Path) -> str | None:
    head = _head(path)
    if head.startswith(b"<"):
        return "bioc"
    if head.startswith((b"{", b"[")):
        return "biocjson"
    if _PUBTATOR_HEAD.match(head):
        return "pubtator"
    return None


def detect_format(path: str | os.PathLike, for_writing: bool = False) -> str:
    """The format of ``path``: from its name, else (when reading) from its first bytes.

    Raises :class:`FormatError` when neither tells, so a wrong file is never half-read as the
    wrong format.
    """
    path = Path(path)
    fmt = _from_name(path)
    reading = not for_writing and path.is_file()
    if reading and fmt == "pubtator" and path.name.lower().removesuffix(".gz").endswith(".txt"):
        fmt = "pubtator" if _PUBTATOR_TXT.match(_head(path)) else "text"
    if fmt is None and reading:
        fmt = _sniff(path)
    if fmt is None:
        hint = "" if for_writing else " nor from its first bytes"
        raise FormatError(f"cannot tell the format from the file name{hint}; name it .xml "
                          "(BioC XML), .json (BioC JSON) or .txt (PubTator or plain text), or "
                          "give the format",
                          path=str(path))
    return fmt


def _supported_files(folder: Path) -> list[Path]:
    """Files of ``folder`` (sorted by name) whose format can be told; READMEs etc. are skipped."""
    files = []
    for child in sorted(folder.iterdir()):
        if child.is_file() and not child.name.startswith("."):
            try:
                detect_format(child)
            except FormatError:
                continue
            files.append(child)
    if not files:
        raise FormatError("the directory holds no PubTator, BioC XML or BioC JSON file",
                          path=str(folder))
    return files


def expand_inputs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files a run reads, in reading order: each path as given, a directory as its
    supported files in name order (see :func:`read_documents`).

    Why a list up front: a resumable run records exactly which files it read, so that a resume
    (or a second process of a sharded run) reads the same documents in the same order.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(_supported_files(path))
        elif not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        else:
            files.append(path)
    return files


def read_records(path: str | os.PathLike, fmt: str | None = None, *, strict: bool = False,
                 skip: bool = False) -> Iterator[Document | Skipped]:
    """Like :func:`read_documents`, but with ``skip`` a bad document is a :class:`Skipped`
    record in the stream (in its place) instead of an exception that ends the stream.

    File-level problems (format not recognised, empty file) become one ``Skipped`` record for
    the file, so one bad file in a directory does not stop the others.
    """
    path = Path(path)
    if path.is_dir():
        for child in _supported_files(path):
            yield from read_records(child, fmt, strict=strict, skip=skip)
        return
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        fmt = canonical_format(fmt) if fmt else detect_format(path)
        if path.stat().st_size == 0:
            raise FormatError("no documents (the file is empty)", path=str(path))
    except FormatError as exc:
        if not skip:
            raise
        yield Skipped.from_error(exc, str(path))
        return
    if fmt == MENTIONS:
        raise FormatError("the mentions JSON Lines format is written only, not read; read "
                          "BioC JSON Lines (.jsonl) instead", path=str(path))
    if fmt in TEXT_FORMATS:
        from data_tools.formats.plaintext import read_plaintext

        yield from read_plaintext(path, lines=fmt == "text-lines", skip=skip)
    elif fmt == "pubtator":
        from data_tools.formats.pubtator import read_pubtator

        yield from _warn_mismatches(path, read_pubtator(path, strict=strict, skip=skip))
    elif fmt == "bioc":
        from data_tools.formats.biocxml import read_biocxml

        yield from _warn_mismatches(path, read_biocxml(path, strict=strict, skip=skip))
    else:
        from data_tools.formats.biocjson import read_biocjson

        yield from _warn_mismatches(path, read_biocjson(path, strict=strict, skip=skip))


#: files whose mismatching annotations were reported in this process: (path, size, mtime)
_WARNED: set[tuple[str, int, int]] = set()


def text_mismatches(doc: Document) -> Iterator[tuple[Annotation, str]]:
    """``(annotation, the document's text at its span)`` for each annotation whose own text
    differs from the text at its span.

    BioC composite parts (``IndividualMention``: BC5CDR gives them their part's name as text)
    and discontinuous mentions (their text joins several pieces) are not checked, as the
    readers' ``strict`` mode does not check them.
    """
    for passage, ann in doc.iter_annotations():
        if ann.extra_locations or ann.infons.get("CompositeRole") == "IndividualMention":
            continue
        actual = passage.text[ann.start - passage.offset: ann.end - passage.offset]
        if actual != ann.text:
            yield ann, actual


def _warn_mismatches(path: Path, records: Iterator[Document | Skipped]
                     ) -> Iterator[Document | Skipped]:
    """``records``, then one warning line on stderr when some annotations' texts differ from
    the document text at their spans: their count and the first one.

    Why a warning, not an error: released corpora have such rows (NCBI train, GNormPlus) and
    reading them must not fail (``strict=True`` makes it an error); but keeping them silently
    hid damage such as shifted offsets (issue 47, case 10). Once per file and process: a run
    reads its inputs twice (checked, then annotated).
    """
    count = 0
    first = ""
    for record in records:
        if isinstance(record, Document):
            for ann, actual in text_mismatches(record):
                if not count:
                    first = (f"document {record.id}: {ann.text!r} at {ann.start}-{ann.end}, "
                             f"where the text reads {actual!r}")
                count += 1
        yield record
    if not count:
        return
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except OSError:
        key = (str(path), 0, 0)
    if key in _WARNED:
        return
    _WARNED.add(key)
    import sys

    what = ("annotation whose text differs from the document text at its span" if count == 1
            else "annotations whose texts differ from the document text at their spans")
    sys.stderr.write(f"warning: {display_path(path)}: {count} {what} (first: {first}); kept "
                     "as written\n")


def read_documents(path: str | os.PathLike, fmt: str | None = None, *,
                   strict: bool = False) -> Iterator[Document]:
    """Stream the documents of a file, or of every supported file in a directory.

    Directory files are read in name order, each with its own detected format (``fmt``, when
    given, applies to all of them). ``strict`` makes a mention whose text differs from the
    document text an error instead of being kept (see :mod:`data_tools.formats.pubtator`).
    An empty file is an error ("no documents"): it usually means a failed export.
    """
    for record in read_records(path, fmt, strict=strict):
        assert isinstance(record, Document)  # without ``skip`` every problem raises
        yield record


def read_collection_info(path: str | os.PathLike, fmt: str | None = None) -> dict:
    """BioC collection ``source``/``date``/``key``/``infons`` of ``path``.

    Pass the result to ``open_writer(..., collection_info=...)`` to carry it over. PubTator
    and JSON Lines have none (empty values); for a directory, its first supported file counts.
    """
    path = Path(path)
    if path.is_dir():
        path = _supported_files(path)[0]
    fmt = canonical_format(fmt) if fmt else detect_format(path)
    if fmt == "bioc":
        from data_tools.formats.biocxml import read_biocxml_info

        return read_biocxml_info(path)
    if fmt == "biocjson":
        from data_tools.formats.biocjson import read_biocjson_info

        return read_biocjson_info(path)
    return empty_info()


@contextlib.contextmanager
def _encoded(raw: IO[bytes], name: str, text: bool) -> Iterator[IO]:
    """``raw`` gzip-compressed when ``name`` ends in ``.gz`` (reproducibly: no mtime, no
    name in the header), and as UTF-8 text with ``\\n`` line ends when ``text``."""
    stream: IO = raw
    if name.lower().endswith(".gz"):
        stream = gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0)
    if text:
        stream = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
    try:
        yield stream
    except BaseException:
        if stream is not raw:  # close the wrappers now, not at garbage collection
            with contextlib.suppress(Exception):
                stream.close()
        raise
    if stream is not raw:
        stream.close()  # flushes and writes the gzip trailer; raw is closed again harmlessly


class _KeepOpen(io.RawIOBase):
    """Standard output's bytes behind a wrapper whose closing leaves standard output open."""

    def __init__(self, target: IO[bytes]):
        self.target = target

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        return self.target.write(data)

    def flush(self) -> None:
        self.target.flush()


@contextlib.contextmanager
def _output(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """``path`` written atomically, or standard output for ``-``."""
    if str(path) != STDOUT:
        with atomic_output(path, "wb") as raw:
            yield raw
        return
    import sys

    target = getattr(sys.stdout, "buffer", None)
    if target is None:
        raise FormatError("standard output takes no bytes here", path=STDOUT)
    sys.stdout.flush()
    raw = io.BufferedWriter(_KeepOpen(target))
    yield raw
    if not raw.closed:  # a text wrapper closes (and so flushes) it itself
        raw.flush()
    target.flush()


@contextlib.contextmanager
def open_writer(path: str | os.PathLike, fmt: str | None = None,
                collection_info: dict | None = None, *, lossy: bool = True) -> Iterator[Writer]:
    """A writer with ``.write(doc)``; the file appears only when the ``with`` block succeeds.

    Output goes to a temporary file beside ``path`` that is renamed into place on success and
    deleted on any exception, so a crash never leaves a truncated file that looks complete.
    ``collection_info`` (see :func:`read_collection_info`) fills BioC's source/date/key/infons;
    without it they are ``e2e_linker``/empty, never today's date, so output is byte-stable.
    A ``.jsonl`` target gets JSON Lines; a ``.gz`` one is gzip-compressed. ``lossy=False``
    makes the PubTator writer refuse a document it cannot hold whole (``linker convert``
    without ``--lossy``; see :func:`data_tools.formats.pubtator.pubtator_losses`) instead of
    dropping what does not fit; the BioC writers hold everything.
    """
    fmt = canonical_format(fmt) if fmt else detect_format(path, for_writing=True)
    if fmt in TEXT_FORMATS:
        raise FormatError("plain text is read only; write pubtator, bioc, biocjson or "
                          "mentions", path=str(path))
    label = str(path)
    with _output(path) as raw, _encoded(raw, label, text=fmt != "bioc") as handle:
        writer: Writer
        if fmt == MENTIONS:
            from data_tools.formats.mentions_jsonl import MentionJSONLWriter

            writer = MentionJSONLWriter(handle)
        elif fmt == "bioc":
            from data_tools.formats.biocxml import BioCXMLWriter

            writer = BioCXMLWriter(handle, collection_info, path=label)
        elif fmt == "biocjson":
            from data_tools.formats.biocjson import BioCJSONWriter

            lines = label.lower().removesuffix(".gz").endswith(".jsonl")
            writer = BioCJSONWriter(handle, collection_info, lines=lines)
        else:
            from data_tools.formats.pubtator import PubTatorWriter

            writer = PubTatorWriter(handle, path=label, lossy=lossy)
        yield writer
        writer.close()


def write_documents(docs: Iterable[Document], path: str | os.PathLike, fmt: str | None = None,
                    collection_info: dict | None = None) -> int:
    """Write all ``docs`` to ``path`` (atomically); returns how many were written."""
    count = 0
    with open_writer(path, fmt, collection_info) as writer:
        for doc in docs:
            writer.write(doc)
            count += 1
    return count
