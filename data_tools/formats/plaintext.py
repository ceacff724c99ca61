"""Plain text: a whole file as one document, or each non-blank line as one (``--lines``).

Why its own reader: ``linker annotate notes.txt`` should work on text that was never a corpus.
A file's document ID is its name without ``.txt``/``.gz`` (``notes``); with ``lines`` each
line is a document ``notes-<line number>`` (1-based, counted over every line, so an ID points
back at its line even where blank lines were skipped). Each document has one passage at
offset 0 holding the text, so annotation offsets are offsets into the file's text (its
lines joined with ``\\n``; a BOM, CRLF line ends and the final newline are dropped) or into
the line. Decoding is strict UTF-8 (:mod:`data_tools.formats.textio`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from data_tools.documents import Document, FormatError, Passage, Skipped
from data_tools.formats.textio import iter_lines_checked


def document_id(path: str | os.PathLike) -> str:
    """The document ID of a plain-text file: its name without ``.gz`` and ``.txt``."""
    name = Path(path).name
    for suffix in (".gz", ".txt"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def _document(doc_id: str, text: str) -> Document:
    return Document(id=doc_id, passages=[Passage(offset=0, text=text)])


def read_plaintext(path: str | os.PathLike, *, lines: bool = False,
                   skip: bool = False) -> Iterator[Document | Skipped]:
    """The documents of a plain-text file (see the module docstring), streamed.

    A line that is not UTF-8 raises a :class:`FormatError` naming the line, or with ``skip``
    becomes a :class:`Skipped` record: in place of its line with ``lines``, in place of the
    whole file without."""
    stem = document_id(path)
    if lines:
        found = False
        for lineno, line, error in iter_lines_checked(path):
            if error is not None:
                if not skip:
                    raise error
                found = True  # reported in its place: the file was not blank
                yield Skipped.from_error(error, str(path))
            elif line.strip():
                found = True
                yield _document(f"{stem}-{lineno}", line)
        if not found:
            blank = FormatError("no documents (every line is blank)", path=str(path))
            if not skip:
                raise blank
            yield Skipped.from_error(blank)
        return
    parts: list[str] = []
    for _, line, error in iter_lines_checked(path):
        if error is not None:
            if not skip:
                raise error
            yield Skipped.from_error(error, str(path))
            return
        parts.append(line)
    text = "\n".join(parts)
    if not text.strip():
        error = FormatError("no documents (the file is blank)", path=str(path))
        if not skip:
            raise error
        yield Skipped.from_error(error)
        return
    yield _document(stem, text)
