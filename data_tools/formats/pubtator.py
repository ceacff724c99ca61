"""PubTator: ``PMID|t|title``, ``PMID|a|abstract``, then tab-separated annotation/relation rows.

Annotation rows have 6 columns ``PMID start end text type id``, 7 for a composite mention (the
7th holds its parts, ``hemorrhagic|cystitis``, aligned with ``D1|D2``), or 5 when a tool wrote
no ID column at all (tmChem): those get ``Annotation.no_id`` so the writer writes 5 columns
back. ``-1`` means "no concept" (``concept_ids == []``, written back as ``-1``). IDs are kept as
written (``MESH:`` stays) but stripped of spaces; when the written ID string is not simply
``"|".join(concept_ids)`` (NCBI's ``" D015862"``, ``+``-joined IDs) the raw string is kept in the
``pubtator_id`` infon so the writer reproduces the row byte for byte. A ``-1`` part of a
composite (``D002544|-1``, once in BC5CDR dev) names no concept and is not in ``concept_ids``,
so there ``composite_texts`` has one more part than ``concept_ids``.

Relation rows ``PMID CID D1 D2`` become ``Relation(infons={"relation": "CID", "Chemical": D1,
"Disease": D2})`` with ids ``R0, R1, ...``: exactly what the BC5CDR BioC XML release holds, so
both versions of the corpus read into equal relations. Other 4/5-column relation rows keep
their arguments as ``arg1``, ``arg2``....

The title passage is at offset 0 (``type=title``), the abstract at ``len(title) + 1``
(``type=abstract``). Blank lines (NCBI starts with one) are ignored. We write our own rows:
bioc's PubTator writer adds a trailing tab after the ID.

The linker's own annotations (``annotator`` infon ``e2e_linker``) have their IDs written in
PubTator3's columns: a chemical or disease ``MESH:D013629``, a gene its bare NCBI Gene ID
``672``, a species its bare taxon ``10116`` (:func:`column_id`: the ``NCBIGene:`` and
``NCBITaxon:`` prefixes dropped). Every other ID is written as it was read, so a file's rows
round-trip byte for byte.

Writing says what PubTator cannot hold (issue 47): :func:`pubtator_losses` names it (infons,
scores, discontinuous mentions, passages beyond title + abstract or at other offsets, line
breaks in the text, relations no row reads back as); ``format_document(doc, lossy=False)``
(``linker convert`` without ``--lossy``) refuses such a document, the default drops it
(``linker annotate --format pubtator``, ``normalize``, ``merge``: documented there). IDs that
would make the file unreadable or read back otherwise are refused either way
(:func:`check_writable`). What PubTator holds reads back identically.

Text mismatches: a row whose text differs from the document text at its offsets is an error
only with ``strict=True``. By default it is kept as written and the document's text at those
offsets is recorded in the ``text_mismatch`` infon, because real data has such rows (NCBI train,
PMID 10923035) and reading a released corpus must not fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import IO

from data_tools.documents import (
    Annotation,
    Document,
    FormatError,
    Passage,
    Relation,
    Skipped,
)
from data_tools.formats.ids import RAW_ID, id_key, parse_ids, written_id
from data_tools.formats.mentions_jsonl import ANNOTATOR
from data_tools.formats.namespaces import NCBI_GENE, NCBI_TAXON, drop_namespace
from data_tools.formats.textio import iter_lines_checked

_HEADER = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
#: infon holding the document's text at the offsets when the row's text column differs
TEXT_MISMATCH = "text_mismatch"
COMPOSITE_ROLE = "CompositeRole"
INDIVIDUAL = "IndividualMention"


def column_id(concept_id: str) -> str:
    """A concept ID as PubTator3 writes it in the ID column: ``NCBIGene:672`` → ``672``,
    ``NCBITaxon:10116`` → ``10116``; any other (``MESH:D013629``, ``OMIM:613162``) as it is."""
    return drop_namespace(drop_namespace(concept_id, NCBI_GENE), NCBI_TAXON)


def id_column(ann: Annotation) -> str:
    """What the ID column of ``ann``'s row holds: the IDs of an annotation the linker made in
    PubTator3's form (:func:`column_id`), any other as the source wrote it
    (:func:`~data_tools.formats.ids.written_id`)."""
    if ann.concept_ids and ann.infons.get("annotator") == ANNOTATOR:
        return "|".join(column_id(cid) for cid in ann.concept_ids)
    return written_id(ann)


def _is_int(text: str) -> bool:
    return text.strip().lstrip("-").isdigit()


def _relation(fields: list[str], number: int) -> Relation:
    kind, args = fields[1], fields[2:]
    if kind == "CID" and len(args) == 2:
        infons = {"relation": "CID", "Chemical": args[0], "Disease": args[1]}
    else:
        infons = {"relation": kind, **{f"arg{n + 1}": a for n, a in enumerate(args)}}
    return Relation(id=f"R{number}", infons=infons)


class _Parser:
    """Line-by-line state machine: one document is held at a time."""

    def __init__(self, path: str, strict: bool):
        self.path = path
        self.strict = strict
        self.doc: Document | None = None

    def error(self, message: str, lineno: int) -> FormatError:
        where = f"line {lineno}"
        if self.doc is not None:
            where = f"document {self.doc.id}, {where}"
        return FormatError(message, path=self.path, where=where)

    def header(self, pmid: str, kind: str, body: str, lineno: int) -> Document | None:
        """Handle a ``|t|``/``|a|`` line; returns the finished previous document, if any."""
        if kind == "t":
            done, self.doc = self.doc, Document(pmid, [Passage(0, body, {"type": "title"})])
            return done
        doc = self.doc
        message = f"abstract line of {pmid} without its title line just before it"
        if doc is None or doc.id != pmid:  # not about the document being read: no name
            raise FormatError(message, path=self.path, where=f"line {lineno}")
        if len(doc.passages) != 1:
            raise self.error(message, lineno)
        doc.passages.append(Passage(len(doc.passages[0].text) + 1, body, {"type": "abstract"}))
        return None

    def row(self, fields: list[str], lineno: int) -> None:
        doc = self.doc
        if doc is None:
            raise self.error("tab-separated row before any PMID|t| title line", lineno)
        if fields[0] != doc.id:
            raise self.error(f"row for document {fields[0]!r} inside document {doc.id}", lineno)
        if len(fields) in (4, 5) and not _is_int(fields[1]) and not _is_int(fields[2]):
            doc.relations.append(_relation(fields, len(doc.relations)))
            return
        if len(fields) not in (5, 6, 7):
            raise self.error(f"annotation row has {len(fields)} tab-separated columns, expected "
                             "6 (PMID start end text type id), 5 (no id) or 7 (composite)", lineno)
        try:
            start, end = int(fields[1]), int(fields[2])
        except ValueError:
            raise self.error(f"offsets {fields[1]!r}, {fields[2]!r} are not integers",
                             lineno) from None
        if start < 0 or end < start:
            raise self.error(f"bad span {start}-{end} (end before start, or negative)", lineno)
        ann = Annotation(start, end, fields[3], fields[4])
        if len(fields) == 5:
            ann.no_id = True
        else:
            raw = fields[5]
            ann.concept_ids = parse_ids(raw)
            if raw != ann.concept_id:
                ann.infons[RAW_ID] = raw
            if len(fields) == 7:
                ann.composite_texts = fields[6].split("|")
        passage = doc.passage_at(start)
        if passage is None or end > passage.end:
            raise self.error(f"span {start}-{end} is outside the title and abstract of "
                             f"document {doc.id}", lineno)
        actual = passage.text[start - passage.offset: end - passage.offset]
        if actual != ann.text:
            if self.strict:
                raise self.error(f"mention text {ann.text!r} differs from the document text "
                                 f"{actual!r} at {start}-{end}", lineno)
            ann.infons[TEXT_MISMATCH] = actual
        passage.annotations.append(ann)


def read_pubtator(path: str | os.PathLike, strict: bool = False,
                  skip: bool = False) -> Iterator[Document | Skipped]:
    """Stream the documents of a PubTator file in file order (one document in memory).

    Malformed rows raise :class:`FormatError` naming the file and line. ``strict`` also makes
    a mention whose text differs from the document text an error (see the module docstring).
    With ``skip``, a document with a bad line is yielded as a :class:`Skipped` record instead
    (its other lines are passed over up to the next title line) and reading goes on.
    """
    parser = _Parser(str(path), strict)
    count = 0
    bad: FormatError | None = None  # the first error of the current document (skip mode)

    def finish(doc: Document | None) -> Iterator[Document | Skipped]:
        nonlocal count, bad
        if bad is not None:
            count += 1
            where = bad.where
            if doc is not None and not (where or "").startswith("document "):
                where = f"document {doc.id}, {where}"
            yield Skipped(str(path), where, bad.message)
        elif doc is not None:
            count += 1
            yield doc
        bad = None

    for lineno, line, decode_error in iter_lines_checked(path):
        if not line.strip():
            continue
        header = _HEADER.match(line)
        orphan = False  # a line that belongs to no document being read
        try:
            if header:
                pmid, kind, _ = header.groups()
                if kind == "t":
                    yield from finish(parser.doc)
                elif parser.doc is None or parser.doc.id != pmid:
                    orphan = True
                elif bad is not None:
                    continue  # the abstract of a document already known to be bad
                parser.header(*header.groups(), lineno)
                if decode_error is not None:
                    raise decode_error
            elif decode_error is not None:
                raise decode_error
            elif bad is not None:
                continue  # rest of a bad document, up to the next title line
            elif "\t" in line:
                parser.row(line.split("\t"), lineno)
            else:
                raise parser.error("neither a PMID|t|/PMID|a| line nor a tab-separated row "
                                   f"(starts {line[:40]!r})", lineno)
        except FormatError as exc:
            if not skip:
                raise
            if orphan:  # another document's abstract ends this one and starts a bad one
                yield from finish(parser.doc)
                parser.doc = Document(header.group(1))  # its rows are passed over with it
                bad = exc
            elif parser.doc is None:  # nothing to pin it on: report the line alone
                count += 1
                yield Skipped(str(path), exc.where, exc.message)
            elif bad is None:
                bad = exc
    yield from finish(parser.doc)
    if count == 0:
        error = FormatError("no documents (no PMID|t|title line found)", path=str(path))
        if not skip:
            raise error
        yield Skipped.from_error(error)


#: characters PubTator's columns are cut at: a mention text or ID holding one changes on the way
_BREAKS = re.compile(r"[\t\n\r]")
#: ... and its ``|t|``/``|a|`` lines (a tab is kept there: the Linnaeus corpus has some)
_LINE_BREAKS = re.compile(r"[\n\r]")
#: what a PubTator document ID (its PMID field) cannot hold: the reader would reject the file
_BAD_ID = re.compile(r"[|\t\n\r]")
#: annotation infons PubTator holds in its own columns, or that only record how it wrote them
_HELD_ANNOTATION_INFONS = {RAW_ID, TEXT_MISMATCH}
#: what ``--lossy`` does, for the refusal's hint
LOSSY_HINT = "pass --lossy to write it without them (linker convert --help lists the losses)"


def _flat(text: str) -> str:
    """PubTator is line- and tab-based: tabs and line breaks become spaces (same length)."""
    return text.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def _flat_line(text: str) -> str:
    """A title or abstract on its one line: line breaks become spaces, tabs stay (the reader
    keeps everything after ``|a|``)."""
    return text.replace("\n", " ").replace("\r", " ")


def _composites(annotations: list[Annotation]
                ) -> Iterator[tuple[Annotation, list[Annotation] | None]]:
    """Each annotation written as a row, with the BioC ``IndividualMention`` annotations that
    become its composite parts (see :func:`_rows`), or ``None``."""
    i = 0
    while i < len(annotations):
        ann = annotations[i]
        i += 1
        if ann.composite_texts is None and ann.infons.get(COMPOSITE_ROLE) == "CompositeMention":
            parts = []
            while (i + len(parts) < len(annotations)
                   and annotations[i + len(parts)].infons.get(COMPOSITE_ROLE) == INDIVIDUAL):
                parts.append(annotations[i + len(parts)])
            if parts and len(parts) == len(id_column(ann).split("|")):
                i += len(parts)
                yield ann, parts
                continue
        yield ann, None


def _rows(annotations: list[Annotation]) -> Iterator[tuple[Annotation, list[str] | None]]:
    """Annotations to write, each with its composite parts (the 7th column), if any.

    BioC (BC5CDR's release) stores a composite as a ``CompositeRole=CompositeMention``
    annotation followed by one ``IndividualMention`` per part. PubTator has no rows for parts:
    they become the composite's 7th column, as in the PubTator release, when there is one part
    per ``|``-separated ID; otherwise every annotation is written as a row of its own.
    """
    for ann, parts in _composites(annotations):
        yield ann, [p.text for p in parts] if parts is not None else ann.composite_texts


def _relation_row(doc_id: str, rel: Relation, number: int, lossy: bool) -> list[str] | None:
    """The row ``rel`` is written as, or ``None`` when no row reads back as it (lossy: as a
    relation at all; a row the reader would reject or take for a mention is never written)."""
    if (rel.nodes and not lossy) or "relation" not in rel.infons:  # lossy: nodes dropped
        return None
    values = [rel.infons["relation"]] + [v for k, v in rel.infons.items() if k != "relation"]
    fields = [doc_id, *(_flat(v) if lossy else v for v in values)]
    if len(fields) not in (4, 5) or _is_int(fields[1]) or _is_int(fields[2]):
        return None
    if not lossy and (_relation(fields, number).infons != rel.infons
                      or any(_BREAKS.search(v) for v in values)):
        return None
    return fields


def check_writable(doc: Document) -> None:
    """Refuse what would make a PubTator file its own reader rejects or reads differently.

    Why even with ``--lossy`` (and in ``linker annotate``): a document ID holding ``|``, a
    tab or a line break breaks the ``PMID|t|`` line and every row, and a concept ID holding
    ``|`` or ``+`` (PubTator's ID separators) or a composite part holding ``|`` would read back
    as other IDs or parts; those are corrupt files, not lost details.
    """
    if not doc.id or _BAD_ID.search(doc.id):
        raise FormatError(f"document ID {doc.id!r} cannot be written as PubTator: its PMID "
                          "field holds no '|', tab or line break and is not empty",
                          where=f"document {doc.id}")
    for ann, parts in _rows(doc.annotations):
        written = id_column(ann)
        if ann.concept_ids and (parse_ids(written) not in (
                ann.concept_ids, [column_id(cid) for cid in ann.concept_ids])
                or _BREAKS.search(written)):
            raise FormatError(f"concept IDs {ann.concept_ids!r} of the mention at "
                              f"{ann.start}-{ann.end} cannot be written as PubTator: '|' and "
                              "'+' separate IDs there, and '-1' means none",
                              where=f"document {doc.id}")
        if parts and any("|" in p for p in parts):
            raise FormatError(f"a composite part of the mention at {ann.start}-{ann.end} "
                              f"holds '|', PubTator's part separator ({parts!r})",
                              where=f"document {doc.id}")


def _passage_losses(doc: Document) -> list[str]:
    passages = sorted(doc.passages, key=lambda p: p.offset)
    losses = []
    if len(passages) > 2:
        losses.append(f"{len(passages)} passages (it holds a title and an abstract)")
    elif passages and passages[0].offset != 0:
        losses.append(f"a first passage at offset {passages[0].offset} (its title is at 0)")
    elif len(passages) == 2 and passages[1].offset != len(passages[0].text) + 1:
        losses.append(f"a second passage at offset {passages[1].offset} (its abstract is at "
                      f"len(title) + 1 = {len(passages[0].text) + 1})")
    for passage, role in zip(passages, ("title", "abstract"), strict=False):
        if passage.infons not in ({}, {"type": role}):
            losses.append(f"passage infons {passage.infons!r} (it holds type={role} only)")
            break
    if any(p.relations for p in passages):
        losses.append("passage relations")
    if any(_LINE_BREAKS.search(p.text) for p in passages):
        losses.append("line breaks in the text (they would become spaces)")
    return losses


def _annotation_losses(doc: Document) -> list[str]:
    losses: set[str] = set()
    for ann, parts in _composites(doc.annotations):
        for a in [ann, *(parts or [])]:
            held = {*_HELD_ANNOTATION_INFONS, id_key(a.infons)}
            if parts is not None or (a.composite_texts is not None
                                     and a.infons.get(COMPOSITE_ROLE) == "CompositeMention"):
                held.add(COMPOSITE_ROLE)  # BioC's composite as PubTator's 7th column
            extra = sorted(k for k in a.infons if k not in held)
            if extra:
                losses.add(f"annotation infons ({', '.join(extra)})")
            if a.mention_score is not None or a.link_score is not None:
                losses.add("mention and link scores")
            if a.extra_locations:
                losses.add("discontinuous mentions (only their outer bounds would be kept)")
            if _BREAKS.search(a.text) or _BREAKS.search(a.type) \
                    or any(_BREAKS.search(t) for t in a.composite_texts or []):
                losses.add("tabs or line breaks in mention texts or types")
    return sorted(losses)


def pubtator_losses(doc: Document) -> list[str]:
    """What of ``doc`` a PubTator file cannot hold, one phrase each (empty: nothing is lost).

    Why: ``linker convert`` to PubTator must not drop data silently (issue 47); it refuses a
    document with any of these unless ``--lossy``. PubTator holds a title at offset 0 and an
    abstract at ``len(title) + 1`` (``type`` infons only), mentions (span, text, type, IDs,
    composite parts) and document relations of two or three arguments; what the reader
    derives itself (``pubtator_id``, ``text_mismatch``) and annotation and relation ids (the
    BioC writer numbers them anew) do not count.
    """
    losses = []
    if doc.infons:
        losses.append(f"document infons ({', '.join(sorted(doc.infons))})")
    losses += _passage_losses(doc)
    losses += _annotation_losses(doc)
    dropped = [rel.id or f"#{n}" for n, rel in enumerate(doc.relations)
               if _relation_row(doc.id, rel, n, lossy=False) is None]
    if dropped:
        losses.append(f"relations {', '.join(dropped[:3])}{' …' if len(dropped) > 3 else ''} "
                      "(it holds a relation type and two or three arguments, no BioC nodes)")
    return losses


def format_document(doc: Document, lossy: bool = True) -> str:
    """One document as PubTator lines, ending with a blank line.

    ``lossy=False`` (``linker convert`` without ``--lossy``) refuses a document with anything
    :func:`pubtator_losses` names. Otherwise what PubTator cannot hold is dropped: infons,
    passage-level relations and relations no row reads back as, extra locations of
    discontinuous mentions, scores; documents with more than two passages (BioC full text)
    keep their offsets: everything after the title becomes the "abstract" (the passages laid
    out at their offsets), and line breaks become spaces (tabs too, in mention texts, types
    and relation rows; a title or abstract keeps its tabs, as the reader does). IDs that
    would break the file are refused either way (:func:`check_writable`). BioC composite
    parts become the 7th column (see :func:`_rows`).
    """
    check_writable(doc)
    if not lossy and (losses := pubtator_losses(doc)):
        raise FormatError(f"PubTator cannot hold its {'; '.join(losses)}; {LOSSY_HINT}",
                          where=f"document {doc.id}")
    passages = sorted(doc.passages, key=lambda p: p.offset)
    title, rest = "", passages
    if passages and passages[0].offset == 0:
        title, rest = passages[0].text, passages[1:]
    if rest and rest[0].offset < len(title) + 1:
        raise FormatError(f"passage at offset {rest[0].offset} overlaps the title or follows it "
                          "without a gap; PubTator needs the abstract at len(title) + 1",
                          where=f"document {doc.id}")
    abstract = doc.text[len(title) + 1:] if rest else ""
    lines = [f"{doc.id}|t|{_flat_line(title)}", f"{doc.id}|a|{_flat_line(abstract)}"]
    for ann, parts in _rows(doc.annotations):
        row = [doc.id, str(ann.start), str(ann.end), _flat(ann.text), _flat(ann.type)]
        if not ann.no_id or ann.concept_ids:
            row.append(_flat(id_column(ann)))
            if parts:
                row.append("|".join(_flat(t) for t in parts))
        lines.append("\t".join(row))
    number = 0
    for rel in doc.relations:
        fields = _relation_row(doc.id, rel, number, lossy=True)
        if fields is not None:
            lines.append("\t".join(fields))
            number += 1
    return "\n".join(lines) + "\n\n"


class PubTatorWriter:
    """Writes documents one at a time; ``close`` exists for symmetry with the BioC writers.

    ``lossy=False`` refuses a document PubTator cannot hold whole (see :func:`format_document`).
    """

    def __init__(self, handle: IO[str], path: str | None = None, lossy: bool = True):
        self.handle = handle
        self.path = path
        self.lossy = lossy

    def write(self, doc: Document) -> None:
        try:
            self.handle.write(format_document(doc, self.lossy))
        except FormatError as exc:
            raise FormatError(exc.message, path=self.path, where=exc.where) from None

    def close(self) -> None:
        pass


def write_pubtator(docs: Iterable[Document], handle: IO[str]) -> int:
    """Write ``docs`` to an open text handle; returns how many were written."""
    writer = PubTatorWriter(handle)
    count = 0
    for doc in docs:
        writer.write(doc)
        count += 1
    return count
