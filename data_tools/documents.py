"""The document model every reader produces and every writer consumes.

One small set of dataclasses carries everything the three corpus formats (PubTator, BioC XML,
BioC JSON) can express, so that a round trip through any of them loses nothing:

* offsets are *document-level* character offsets (BioC and PubTator both use them), so an
  annotation's text is always ``document.text_at(start, end)``;
* concept IDs are kept as written (``MESH:D003693`` stays prefixed) in ``concept_ids``; an empty
  list means "no concept" (PubTator's ``-1``);
* composite mentions (``D1|D2`` plus a 7th PubTator column) keep their parts in
  ``composite_texts``; BioC files mark them with the ``CompositeRole`` infon;
* anything a format carries that the model has no field for goes into ``infons`` unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: PubTator's marker for "no concept"; readers turn it into an empty ``concept_ids`` list.
NO_CONCEPT = "-1"


#: how messages name a path that is not the user's own: standard input's temporary copy
#: (see :func:`shown_as`)
_SHOWN_AS: dict[str, str] = {}


def display_path(path: str | os.PathLike) -> str:
    """``path`` as messages name it: itself, or the name :func:`shown_as` gave it."""
    return _SHOWN_AS.get(str(path), str(path))


@contextmanager
def shown_as(path: str | os.PathLike, name: str) -> Iterator[None]:
    """Inside the block, messages (:class:`FormatError`, :meth:`Skipped.describe`) name
    ``path`` as ``name``.

    Why: ``linker annotate -`` reads standard input through a temporary copy (it is read
    twice); an error must say ``-`` (standard input), not a temporary path the user never
    saw and that is gone when the message is read (issue 47, case 10).
    """
    _SHOWN_AS[str(path)] = name
    try:
        yield
    finally:
        _SHOWN_AS.pop(str(path), None)


class FormatError(ValueError):
    """Raised by every reader for malformed input; the message names the file and line/document.

    The CLI turns it into a one-line error and exit code 2, so messages must stand on their own.
    """

    def __init__(self, message: str, *, path: str | None = None, where: str | None = None):
        self.message = message
        self.path = path
        self.where = where
        prefix = ""
        if path:
            prefix = f"{display_path(path)}: "
        if where:
            prefix += f"{where}: "
        super().__init__(prefix + message)


@dataclass(frozen=True)
class Skipped:
    """A document (or the rest of a file) that a reader could not read, read with ``skip``.

    Why a record instead of an exception: with ``--on-error skip`` a corpus run must go on past
    a bad document and still account for it, in order, so that it can be reported and so that
    shard boundaries (which count documents, bad ones included) stay the same on a resume.
    ``where`` is ``document <id>``, ``line <n>`` or ``None`` when the whole file is unreadable.
    """

    path: str | None
    where: str | None
    message: str

    @classmethod
    def from_error(cls, exc: FormatError, path: str | None = None) -> Skipped:
        return cls(exc.path or path, exc.where, exc.message)

    def describe(self) -> str:
        """One line: ``file: where: message``."""
        return str(FormatError(self.message, path=self.path, where=self.where))


@dataclass
class Annotation:
    """One mention: a character span of the document, its type and concept IDs.

    ``locations`` holds one ``(start, end)`` pair for a contiguous mention and several for a
    discontinuous one (BioC allows that); ``start``/``end`` are the outer bounds.
    """

    start: int
    end: int
    text: str
    type: str = ""
    concept_ids: list[str] = field(default_factory=list)
    id: str | None = None
    infons: dict[str, str] = field(default_factory=dict)
    #: parts of a composite mention (PubTator 7th column), aligned with ``concept_ids``
    composite_texts: list[str] | None = None
    #: extra BioC locations beyond the first, for discontinuous mentions
    extra_locations: list[tuple[int, int]] = field(default_factory=list)
    mention_score: float | None = None
    link_score: float | None = None
    #: the source wrote no concept-ID field at all (tmChem's 5-column rows, BioC without an
    #: ID infon): a bare mention, not a link — unlike ``-1``, which is an ID ("no concept")
    no_id: bool = False

    @property
    def locations(self) -> list[tuple[int, int]]:
        """All ``(start, end)`` pieces of the mention, the first being ``(start, end)``."""
        return [(self.start, self.end), *self.extra_locations]

    @property
    def concept_id(self) -> str:
        """The concept IDs joined with ``|`` as PubTator writes them (``-1`` when none)."""
        return "|".join(self.concept_ids) if self.concept_ids else NO_CONCEPT


@dataclass
class Relation:
    """A relation between concepts or annotations (BC5CDR's CID relations, BioC relations)."""

    id: str | None = None
    infons: dict[str, str] = field(default_factory=dict)
    #: BioC nodes: ``(refid, role)`` pairs
    nodes: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Passage:
    """A contiguous piece of a document (title, abstract, section) at a document-level offset."""

    offset: int
    text: str
    infons: dict[str, str] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.offset + len(self.text)

    @property
    def type(self) -> str:
        return self.infons.get("type", "")


@dataclass
class Document:
    """A document: passages in order, plus document-level relations and infons."""

    id: str
    passages: list[Passage] = field(default_factory=list)
    infons: dict[str, str] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)

    @property
    def annotations(self) -> list[Annotation]:
        """All annotations of all passages, in passage order."""
        return [a for p in self.passages for a in p.annotations]

    def iter_annotations(self) -> Iterator[tuple[Passage, Annotation]]:
        for passage in self.passages:
            for ann in passage.annotations:
                yield passage, ann

    def passage_at(self, offset: int) -> Passage | None:
        """The passage whose text covers ``offset`` (or ends exactly there), else ``None``."""
        for passage in self.passages:
            if passage.offset <= offset <= passage.end:
                return passage
        return None

    def text_at(self, start: int, end: int) -> str:
        """Text of the document between two document-level offsets (within one passage)."""
        passage = self.passage_at(start)
        if passage is None or end > passage.end:
            raise IndexError(f"span {start}-{end} is outside every passage of document {self.id}")
        return passage.text[start - passage.offset : end - passage.offset]

    @property
    def text(self) -> str:
        """The passages' texts laid out at their offsets, gaps filled with spaces.

        For PubTator-style documents this is ``title + " " + abstract``.
        """
        out: list[str] = []
        pos = 0
        for passage in sorted(self.passages, key=lambda p: p.offset):
            if passage.offset > pos:
                out.append(" " * (passage.offset - pos))
                pos = passage.offset
            if passage.offset < pos:  # overlapping passages: keep the first
                continue
            out.append(passage.text)
            pos += len(passage.text)
        return "".join(out)

    def text_view(self) -> Document:
        """A document of the same ID and passage texts alone (no infons, annotations or
        relations): the view a linker adds the annotations it links to, so that the input's
        own annotations are never touched."""
        return Document(id=self.id, passages=[Passage(offset=p.offset, text=p.text)
                                              for p in self.passages])

    def add_annotation(self, ann: Annotation) -> None:
        """Attach ``ann`` to the passage that contains its start offset."""
        passage = self.passage_at(ann.start)
        if passage is None:
            raise IndexError(
                f"annotation {ann.start}-{ann.end} is outside every passage of document {self.id}"
            )
        passage.annotations.append(ann)


def strip_prefix(concept_id: str) -> str:
    """``MESH:D003693`` → ``D003693``: the ID policy used by scoring (see e2e_linker.scoring)."""
    concept_id = concept_id.strip()
    if concept_id.upper().startswith("MESH:"):
        return concept_id[5:]
    return concept_id
