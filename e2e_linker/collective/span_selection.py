"""The rules that choose which scored candidate spans ``linker annotate`` keeps: never a
mention by its text, the lexical gate, overlap resolution, a kept span grown to the longer KB
name around it, short forms tagged like their long form.

Why its own module: detection (the model's scores and vectors) and linking (the KB) belong to
:class:`~e2e_linker.collective.annotator.Annotator`; selection only reads each candidate's
score, offsets and text, plus two facts handed in (whether a lexical step links a span, whether
a text is a KB name). Each rule is a function of its inputs; the select steps of
:mod:`e2e_linker.pipeline.selection_steps` call them in the order a pipeline declares, so
evaluations can score candidates once and select under many pipelines, and tests can call a
rule on hand-made spans.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

import numpy as np

from data_tools.documents import Document
from e2e_linker.lexical.abbreviations import DocumentAbbreviations, written_for
from e2e_linker.lexical.text_forms import balanced_brackets, cuts_an_ion

#: whether a text is an exact KB name of a type
NameCheck = Callable[[str, str], bool]


@dataclass
class SpanPrediction:
    """A kept span before linking: where it is, how sure we are, and its vector."""

    doc_index: int
    start: int
    end: int
    mention_score: float
    type: str
    vector: np.ndarray


class _InADocument(Protocol):
    @property
    def doc_index(self) -> int: ...


_Item = TypeVar("_Item", bound=_InADocument)


def spans_by_document(items: Iterable[_Item]) -> dict[int, list[_Item]]:
    """``items`` grouped by their ``doc_index``, each group in the order given, the documents
    in the order first met.

    Why one helper: every selection rule works one document at a time over spans that come
    for a whole batch of documents."""
    grouped: dict[int, list[_Item]] = {}
    for item in items:
        grouped.setdefault(item.doc_index, []).append(item)
    return grouped


def never_a_mention(span: SpanPrediction, doc: Document) -> bool:
    """Whether ``span``'s text rules it out as a mention of any type: a bracket it does not
    open and close (:func:`~e2e_linker.lexical.text_forms.balanced_brackets`), or an ion cut
    before its charge ("Ca2" of "Ca2+": :func:`~e2e_linker.lexical.text_forms.cuts_an_ion`);
    one slice of the text serves both checks."""
    text = doc.text_at(span.start, span.end)  # raises for a span outside every passage
    if not balanced_brackets(text):
        return True
    passage = doc.passage_at(span.start)
    end = span.end - passage.offset
    return cuts_an_ion(text, passage.text[end:end + 1])


def gate_unlinked(spans: Sequence[SpanPrediction], linked: Sequence[bool],
                  gate: float) -> list[SpanPrediction]:
    """The spans a lexical step links, and the others scored at least ``gate``.

    Why: on BC5CDR dev (names mined from train only) few of the spans no name accounts for
    were right when dense search linked them alone: a span whose text no KB name, short form
    or sieve accounts for is mostly a span the gold does not have (protein and gene names
    tagged as chemicals, fragments of longer mentions); the counts are in
    docs/decisions/0003-lexical-gate.md. The lookups are text only, so the gate costs no search."""
    return [s for s, ok in zip(spans, linked, strict=True) if ok or s.mention_score >= gate]


def extend_to_names(kept: list[SpanPrediction], candidates: Sequence[SpanPrediction],
                    docs: Sequence[Document], is_name: NameCheck,
                    floor: float) -> list[SpanPrediction]:
    """``kept`` with each span replaced by the longest candidate scored above ``floor`` that
    contains it, is an exact KB name of the kept span's type, begins and ends with a letter or
    digit, and overlaps no other kept span; the candidate keeps its own score and vector and
    takes the kept span's type.

    Why: the span scorer often prefers the head of a longer name ("periodontitis" in
    "aggressive periodontitis", "lymphocytic leukemia" in "chronic lymphocytic leukemia",
    "hypothyroidism" in "congenital hypothyroidism"), while every corpus we score annotates the
    whole name when the KB has it; overlap resolution alone keeps the higher-scored head. The
    counts per corpus are in docs/decisions/0007-name-extension.md."""
    by_doc = spans_by_document(candidates)
    starts_of: dict[int, tuple[list[int], list[SpanPrediction], int]] = {}
    out: list[SpanPrediction] = []
    kept_by_doc = spans_by_document(kept)
    for s in kept:
        if s.doc_index not in starts_of:
            members = sorted((c for c in by_doc.get(s.doc_index, ())
                              if c.mention_score > floor), key=lambda c: c.start)
            longest = max((c.end - c.start for c in members), default=0)
            starts_of[s.doc_index] = ([c.start for c in members], members, longest)
        starts, members, longest = starts_of[s.doc_index]
        doc = docs[s.doc_index]
        best = None
        # a candidate that contains s starts at most `longest` characters before it
        lo = bisect.bisect_left(starts, s.start - longest)
        hi = bisect.bisect_right(starts, s.start)
        for c in members[lo:hi]:
            if c.end < s.end or (c.start, c.end) == (s.start, s.end):
                continue
            if best is not None and c.end - c.start <= best.end - best.start:
                continue
            text = doc.text_at(c.start, c.end)
            if not (text[:1].isalnum() and text[-1:].isalnum()) or not is_name(text, s.type):
                continue
            if any(o is not s and o.start < c.end and c.start < o.end
                   for o in kept_by_doc[s.doc_index]):
                continue
            best = c
        # best overlaps no other kept span, so no two kept spans grow into the same one
        out.append(s if best is None else replace(best, type=s.type))
    return out


#: a word of a span's text, where a part of it may begin or end
_WORD = re.compile(r"[^\W_]+")


def named_parts(gated: Sequence[SpanPrediction], docs: Sequence[Document],
                name_concepts: Callable[[str, str], Sequence[str]],
                linked: Callable[[list[SpanPrediction]], list[set[str]]]
                ) -> list[SpanPrediction]:
    """For each span of ``gated``, the longest run of its words (not all of them) that is an
    exact KB name (``name_concepts(text, type)``: the concepts of the type it names) of a
    concept the span links to (``linked(spans)``: per span, the concepts its vector links to;
    asked once, for the spans with a named run only), of two as long the one that ends the
    span (its head), else the leftmost; as a span with the gated span's score, type and
    vector. None for a span with no such run; a place is returned once.

    Why: the span scorer often scores a name with a modifier or a trailing noun around it
    ("allergic asthma", "hereditary nephrotic syndrome", "cystic fibrosis airway disease")
    far above the name alone (which it scores near 0), and the lexical gate then drops the
    longer span because no KB name accounts for it; the name inside is what most corpora
    annotate. The model's confidence that a mention is there is the longer span's; which part
    is the mention, the concept the longer span links to says ("allergic" is a KB name too,
    of a concept "allergic asthma" does not link to first): docs/decisions/0050-named-parts.md.
    The reverse of :func:`extend_to_names`, for spans that would otherwise be lost."""
    named: list[tuple[SpanPrediction, list[tuple[tuple[int, bool, int], set[str]]]]] = []
    for g in gated:
        text = docs[g.doc_index].text_at(g.start, g.end)
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        runs = []
        for i, (start, _) in enumerate(words):
            for end in (e for _, e in words[i:]):
                if (start, end) != (words[0][0], words[-1][1]) and (
                        found := name_concepts(text[start:end], g.type)):
                    # longest first; of two as long the head, then the leftmost
                    runs.append(((end - start, end == words[-1][1], -start), set(found)))
        if runs:
            named.append((g, sorted(runs, key=lambda r: r[0], reverse=True)))
    out: list[SpanPrediction] = []
    taken: set[tuple[int, int, int]] = set()
    for (g, runs), concepts in zip(named, linked([g for g, _ in named]), strict=True):
        best = next((rank for rank, found in runs if not found.isdisjoint(concepts)), None)
        if best is None:
            continue
        key = (g.doc_index, g.start - best[2], g.start - best[2] + best[0])
        if key not in taken:
            taken.add(key)
            out.append(replace(g, start=key[1], end=key[2]))
    return out


def keep_long_forms(kept: list[SpanPrediction], candidates: Sequence[SpanPrediction],
                    docs: Sequence[Document], abbreviations: Sequence[DocumentAbbreviations],
                    with_short: float, alone: float,
                    links: Callable[[SpanPrediction, str], bool] | None = None,
                    is_name: Callable[[str, str], bool] | None = None
                    ) -> list[SpanPrediction]:
    """``kept`` with each ``long form (SF)`` definition that no kept span covers decided
    through its long form, in document order.

    The long form's candidate (the span that is exactly the long form, scored by the model's
    mention head) is kept when ``links`` says its text or vector links to a concept of its
    type and it scored above ``with_short`` (an occurrence of the short form is kept: the
    definition and the model's own short-form decision are document-level evidence) or above
    ``alone`` (none is). A kept occurrence of the short form whose long form has a candidate
    that links to nothing the KB knows is dropped, unless the short form is a KB name of its
    type itself (``is_name``): the short form names what its long form names, and the long
    form is no concept of ours (a study, a measure, a treatment regimen). Without ``links``
    every long form counts as linked.

    Why: a short form is resolved through its long form (its type, its concept, every
    occurrence alike: short-form tagging and abbreviation links do the rest); where the
    detector kept the short form but not the long form (an unusual chemical name, a disease
    the KB words otherwise) the short form was linked by its letters to another concept
    that shares them, and where it kept neither, both were lost (docs/decisions/0002-long-forms.md)."""
    by_doc = spans_by_document(kept)
    exact: dict[tuple[int, int, int], SpanPrediction] = {
        (c.doc_index, c.start, c.end): c for c in candidates}
    added: list[SpanPrediction] = []
    dropped: set[int] = set()
    for doc_index, abbrs in enumerate(abbreviations):
        members = by_doc.get(doc_index, [])
        text = docs[doc_index].text
        for abbr in abbrs.definitions.values():
            if any(s.start < abbr.long_end and abbr.long_start < s.end for s in members):
                continue  # a kept span covers (part of) the long form already
            candidate = exact.get((doc_index, abbr.long_start, abbr.long_end))
            if candidate is None:
                continue
            shorts = [s for s in members if text[s.start:s.end] == abbr.short]
            linked = links is None or links(candidate, abbr.long)
            if linked and candidate.mention_score > (with_short if shorts else alone):
                added.append(candidate)
                members = [*members, candidate]
            elif not linked:
                dropped.update(id(s) for s in shorts
                               if is_name is None or not is_name(abbr.short, s.type))
    if not added and not dropped:
        return kept
    return sorted([s for s in kept if id(s) not in dropped] + added,
                  key=lambda s: (s.doc_index, s.start, s.end))


class CoveredText:
    """The characters of one document that kept spans cover: whether a span touches one is a
    look at its own characters, not a pass over every kept span (a hostile document holds
    tens of thousands)."""

    def __init__(self, length: int, spans: Sequence[SpanPrediction]):
        self.covered = bytearray(length)
        for span in spans:
            self.add(span.start, span.end)

    def add(self, start: int, end: int) -> None:
        self.covered[start:end] = b"\x01" * (end - start)

    def touches(self, start: int, end: int) -> bool:
        return 1 in self.covered[start:end]


def free_occurrences(text: str, phrase: str, taken: CoveredText) -> list[tuple[int, int]]:
    """The case-sensitive whole-word occurrences of ``phrase`` in ``text`` (no letter or digit
    on either side) that touch nothing in ``taken``, in order; each is added to ``taken``.

    Why one helper: a short form's repeats (:func:`tag_short_forms`) and a gene name's
    (:func:`~e2e_linker.collective.gene_appositions.keep_gene_appositions`) are found alike."""
    pattern = re.compile(r"(?<![A-Za-z0-9])" + re.escape(phrase) + r"(?![A-Za-z0-9])")
    found: list[tuple[int, int]] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if taken.touches(start, end):
            continue
        taken.add(start, end)
        found.append((start, end))
    return found


def keep_repeats(kept: list[SpanPrediction], candidates: Sequence[SpanPrediction],
                 docs: Sequence[Document], floor: float,
                 types: frozenset[str] | None) -> list[SpanPrediction]:
    """``kept`` with every candidate scored above ``floor`` whose text, case folded, a kept
    span of ``types`` (None: any type) has in the same document, and that touches no kept
    span, added with that span's type (the most probable first where such repeats overlap).

    Why: a document names a chemical or disease once in full and then repeats it bare ("brain
    iron", "iron chelation"); the model may score a repeat low in a context it rarely saw. A
    repeat only fills text that nothing else kept, so, unlike ``propagation`` (a rescue before
    overlaps are resolved), it never displaces a span of another type or one a later selection
    step adds (docs/decisions/0054-kept-repeats.md). A text kept with two types in one document
    is left alone."""
    kept_types: dict[tuple[int, str], set[str]] = {}
    for span in kept:
        if types is None or span.type in types:
            text = docs[span.doc_index].text[span.start:span.end].casefold()
            kept_types.setdefault((span.doc_index, text), set()).add(span.type)
    if not kept_types:
        return kept
    repeats: dict[int, list[tuple[SpanPrediction, str]]] = {}
    for c in candidates:
        if c.mention_score <= floor:
            continue
        found = kept_types.get((c.doc_index, docs[c.doc_index].text[c.start:c.end].casefold()))
        if found is not None and len(found) == 1:
            repeats.setdefault(c.doc_index, []).append((c, next(iter(found))))
    if not repeats:
        return kept
    by_doc = spans_by_document(kept)
    added: list[SpanPrediction] = []
    for doc_index, options in repeats.items():
        taken = CoveredText(len(docs[doc_index].text), by_doc.get(doc_index, ()))
        for c, kind in sorted(options, key=lambda o: (-o[0].mention_score, o[0].start,
                                                      o[0].end)):
            if taken.touches(c.start, c.end):
                continue
            taken.add(c.start, c.end)
            added.append(c if c.type == kind else replace(c, type=kind))
    if not added:
        return kept
    return sorted(kept + added, key=lambda s: (s.doc_index, s.start, s.end))


def tag_short_forms(spans: list[SpanPrediction], docs: Sequence[Document],
                    abbreviations: Sequence[DocumentAbbreviations]) -> list[SpanPrediction]:
    """``spans`` plus every whole-word occurrence of a short form defined in the same document
    ("phenobarbital (PB)", from ``abbreviations[doc_index]``) whose long form one of them
    covers, where no span is already; each takes that span's type, score and vector."""
    by_doc = spans_by_document(spans)
    added: list[SpanPrediction] = []
    for doc_index, members in by_doc.items():
        text = docs[doc_index].text
        defined = abbreviations[doc_index].definitions
        if not defined:
            continue
        taken = CoveredText(len(text), members)
        for abbr in defined.values():
            source = next((s for s in members
                           if written_for(abbr, s.start, s.end, text[s.start:s.end])), None)
            if source is None:
                continue
            for start, end in free_occurrences(text, abbr.short, taken):
                added.append(SpanPrediction(doc_index, start, end, source.mention_score,
                                            source.type, source.vector))
    if not added:
        return spans
    return sorted(spans + added, key=lambda s: (s.doc_index, s.start, s.end))


def resolve_overlaps(spans: list[SpanPrediction]) -> list[SpanPrediction]:
    """Keep the most probable of overlapping spans (greedy), in document order."""
    by_doc = spans_by_document(spans)
    kept: list[SpanPrediction] = []
    for doc_index in sorted(by_doc):
        # taken spans are disjoint, so sorted by start they are sorted by end too and a new
        # span need only be checked against its two neighbours instead of all kept spans
        # (a hostile 100k-token document has tens of thousands of candidates)
        starts: list[int] = []
        ends: list[int] = []
        for s in sorted(by_doc[doc_index], key=lambda x: (-x.mention_score, x.start, x.end)):
            i = bisect.bisect_right(starts, s.start)
            if (i > 0 and ends[i - 1] > s.start) or (i < len(starts) and starts[i] < s.end):
                continue
            starts.insert(i, s.start)
            ends.insert(i, s.end)
            kept.append(s)
    kept.sort(key=lambda s: (s.doc_index, s.start, s.end))
    return kept
