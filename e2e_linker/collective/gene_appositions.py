"""A gene's name written right before its bracketed symbol names the same gene.

The class: an author names a gene once in full or by an old or trivial name and gives its
symbol in brackets beside it — "Psoriasin (S100A7)", "TNFR-associated factor 2 (TRAF2)",
"tyrosine kinase receptor 2 (VEGF-R2)" — and may use that name alone afterwards. The symbol is
what the detector and the gene linker know best (a KB name, linked with its species); the name
before it is often unusual text the detector scored below γ, and where its letters do not
spell the symbol Schwartz–Hearst finds no definition either, so nothing carried the symbol's
concept over to it. For genes the evidence runs from the bracket outwards, the reverse of a
chemical's or disease's short form (docs/decisions/0039-short-forms-through-long-forms.md),
whose long form is the better-linked text.

Two rules, one per stage (docs/decisions/0047-gene-appositions.md):

* :func:`keep_gene_appositions` (select): where a kept Gene span fills a pair of brackets and no
  kept span ends right before them, the candidate the model scored highest of those ending
  there (above a floor) is kept as a Gene span, and so is every other whole-word occurrence of
  its text in the document that no kept span touches;
* :func:`link_gene_appositions` (annotate): each span kept so (:class:`ApposedName`) takes
  the bracketed Gene annotation's concept when it shares a word with that gene's KB names
  (:func:`named_by`), and is dropped otherwise; so does a name the model kept itself when it is
  linked to a gene product (a protein MeSH files as a chemical: "Psoriasin", which the
  BC5CDR-guideline step ``gene_products`` would drop), with every annotation of its text
  linked to that product — the apposition counterpart of the short-form rule
  :meth:`~e2e_linker.collective.span_linking.SpanLinker.gene_product_named_as_gene`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from data_tools.documents import Annotation, Document
from e2e_linker.collective.concept_types import concept_of
from e2e_linker.collective.span_selection import (
    CoveredText,
    SpanPrediction,
    free_occurrences,
    spans_by_document,
)
from e2e_linker.lexical.abbreviations import DocumentAbbreviations, written_for
from e2e_linker.lexical.text_forms import end_before

#: the ``link_method`` infon of an annotation that took its bracketed symbol's concept
APPOSITION = "apposition"
#: the types the model's type head may give a gene's name: Gene, and Chemical, which it
#: gives many protein and enzyme names ("Psoriasin", "Methylenetetrahydrofolate reductase";
#: issue 43's typing errors); a name it calls a disease ("... of the corpus callosum
#: (SLC12A6)") or anything else is not a gene's
NAME_TYPES = ("Gene", "Chemical")


@dataclass
class ApposedName(SpanPrediction):
    """A span :func:`keep_gene_appositions` kept: a name written right before the bracketed
    Gene span at ``symbol_start``..``symbol_end`` (or a repeat of it).

    Why a type of its own: only these take the symbol's concept after linking
    (:func:`link_gene_appositions`); a name the model kept itself keeps its own link, since
    what stands in brackets after a gene the model found is often not its symbol ("Mre11
    (Rad50)", a complex's other member)."""

    symbol_start: int = -1
    symbol_end: int = -1


def bracketed(text: str, start: int, end: int) -> int | None:
    """Where the text before ``start``..``end`` ends (trailing spaces left out) when the span
    fills a pair of round brackets exactly — "(S100A7)" — else None."""
    if start < 1 or text[start - 1] != "(" or text[end:end + 1] != ")":
        return None
    return end_before(text, start - 1) or None


def keep_gene_appositions(kept: list[SpanPrediction], candidates: Sequence[SpanPrediction],
                          docs: Sequence[Document],
                          abbreviations: Sequence[DocumentAbbreviations], floor: float,
                          gene_type: str) -> list[SpanPrediction]:
    """``kept`` with the name written right before each bracketed kept ``gene_type`` span
    added as a ``gene_type`` span, with every other occurrence of its text (see the module
    docstring), in document order.

    The name is the candidate ending right before the opening bracket that the model scored
    highest above ``floor`` (the longer of equal scores), that its type head gives one of
    :data:`NAME_TYPES`, and that no kept span touches; where
    the symbol is a short form the document defines there (Schwartz–Hearst: "murine double
    minute 2 (MDM2)"), only a candidate written for its long form
    (:func:`~e2e_linker.lexical.abbreviations.written_for`) counts, so that a long form longer
    than any candidate is not cut to its last words. A bracket with a kept span ending right
    before it is left alone (that span is the name the model chose). Other occurrences are
    case-sensitive whole words (no letter or digit on either side) that no kept span touches;
    each takes the name's score and vector."""
    by_doc = spans_by_document(kept)
    ending: dict[tuple[int, int], list[SpanPrediction]] = {}
    name_types = {gene_type, *NAME_TYPES}
    for c in candidates:
        if c.mention_score > floor and c.type in name_types:
            ending.setdefault((c.doc_index, c.end), []).append(c)
    added: list[SpanPrediction] = []
    for doc_index, members in by_doc.items():
        text = docs[doc_index].text
        taken = CoveredText(len(text), members)
        names: list[SpanPrediction] = []
        for symbol in members:
            if symbol.type != gene_type:
                continue
            end = bracketed(text, symbol.start, symbol.end)
            if end is None or taken.touches(end - 1, end):
                continue
            options = [c for c in ending.get((doc_index, end), ())
                       if not taken.touches(c.start, c.end)]
            abbr = abbreviations[doc_index].definitions.get(text[symbol.start:symbol.end])
            if abbr is not None and abbr.short_start == symbol.start:
                options = [c for c in options
                           if written_for(abbr, c.start, c.end, text[c.start:c.end])]
            if not options:
                continue
            best = max(options, key=lambda c: (c.mention_score, c.end - c.start))
            name = ApposedName(doc_index, best.start, best.end, best.mention_score, gene_type,
                               best.vector, symbol.start, symbol.end)
            names.append(name)
            taken.add(name.start, name.end)
        tagged: set[str] = set()
        for name in names:
            added.append(name)
            if text[name.start:name.end] in tagged:  # its repeats are tagged already
                continue
            tagged.add(text[name.start:name.end])
            for start, end in free_occurrences(text, text[name.start:name.end], taken):
                added.append(replace(name, start=start, end=end))
    if not added:
        return kept
    return sorted(kept + added, key=lambda s: (s.doc_index, s.start, s.end))


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """The words of ``text`` that can carry a name: lower-cased runs of letters and digits of
    three characters or more with a letter ("receptor", "s100a7"; not "2", "na", "88")."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and not w.isdigit()}


def named_by(text: str, concept) -> bool:
    """Whether ``text`` shares a word (:func:`words`) with one of ``concept``'s names (its
    preferred name and synonyms: for a gene, the symbols, full names and other designations
    of gene_info, "psoriasin 1" among S100A7's).

    Why: a name beside a bracket is a name of the bracketed gene only if the KB's names of
    that gene say something like it; where the bracket is a short form the model took for a
    gene ("Lipid droplets (LD)", "cystoblast (CB)", "poly IC (PIC)"), the text before it shares
    no word with the gene the letters happened to name."""
    mine = words(text)
    return any(mine & words(name) for name in (concept.name, *concept.synonyms))


def is_gene(concept, gene_type: str) -> bool:
    """Whether a KB concept (None: none) is a gene: of ``gene_type`` among its types."""
    return concept is not None and gene_type in concept.types()


def link_gene_appositions(annotations: list[Annotation | None],
                          spans: Sequence[SpanPrediction], docs: Sequence[Document], kb,
                          gene_type: str) -> None:
    """Give each annotation of an :class:`ApposedName` span the concept of the ``gene_type``
    annotation at its symbol's place (``link_method`` "apposition"), in place; drop it (None)
    when that annotation was dropped, is of another type, is linked to no gene of ``kb`` (a
    symbol-like bracket the gene linker linked to a chemical's name), or when the name shares
    no word with that gene's names (:func:`named_by`): the name was kept only on the symbol's
    evidence. An annotation the model kept itself right before such a symbol takes its concept
    and ``gene_type`` only when ``kb`` (``get(id)`` → concept) says it is linked to a gene
    product and it shares a word with the gene's names, and every annotation of the document
    with its text and concept with it. ``spans`` are the annotations' spans (one each, in
    order).

    Why the symbol's concept: the symbol is what the gene linker links best (a KB name, with
    its species), and a name the document writes beside it means that gene wherever it writes
    it, as a short form does."""
    at: dict[tuple[int, int, int], Annotation] = {
        (span.doc_index, ann.start, ann.end): ann
        for span, ann in zip(spans, annotations, strict=True)
        if ann is not None and ann.type == gene_type and is_gene(concept_of(ann, kb), gene_type)}
    before: dict[tuple[int, int], Annotation] = {}  # (doc, end of the text before) → symbol
    for (doc_index, _, _), symbol in at.items():
        end = bracketed(docs[doc_index].text, symbol.start, symbol.end)
        if end is not None:
            before[doc_index, end] = symbol
    products: dict[tuple[int, str, str], Annotation] = {}  # (doc, text, product) → symbol
    for span, ann in zip(spans, annotations, strict=True):
        concept = concept_of(ann, kb)
        symbol = before.get((span.doc_index, ann.end)) if concept is not None else None
        if symbol is not None and concept.gene_product and not isinstance(span, ApposedName):
            products.setdefault((span.doc_index, ann.text, ann.concept_ids[0]), symbol)
    for k, (span, ann) in enumerate(zip(spans, annotations, strict=True)):
        if ann is None:
            continue
        if isinstance(span, ApposedName):
            symbol = at.get((span.doc_index, span.symbol_start, span.symbol_end))
            if symbol is None:
                annotations[k] = None
                continue
        else:
            symbol = products.get((span.doc_index, ann.text, ann.concept_ids[0])) \
                if ann.concept_ids else None
            if symbol is None:
                continue
        if not named_by(ann.text, kb.get(symbol.concept_ids[0])):
            if isinstance(span, ApposedName):
                annotations[k] = None
            continue
        ann.concept_ids, ann.type = list(symbol.concept_ids), gene_type
        ann.link_score = None
        ann.infons["link_method"] = APPOSITION
