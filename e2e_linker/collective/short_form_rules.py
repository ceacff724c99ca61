"""After linking: short forms whose link the document does not support.

Why: a short form means what its document says it means. Three kinds of span were wrong on
the dev corpora (docs/decisions/0012-redefined-short-forms.md):

* a short form the document *defines* ("otilonium bromide (OB)", "hormone therapy (HT)")
  whose long form was neither detected nor a KB name, so short-form linking
  (:meth:`~e2e_linker.collective.span_linking.SpanLinker.link_short_forms`) left it alone and
  the exact-name sieve or dense search linked the letters to the KB's usual meaning: "OB"
  to Obesity, "HT" to Hashimoto disease, "SN" (substantia nigra) to a chemical. Such a span is
  dropped when none of its concept's names shares a word with the long form
  (:func:`drop_redefined_short_forms`, the step ``redefined_short_forms``): "CRC" defined as
  "colorectal adenocarcinoma" and linked to Colorectal Neoplasms stays;
* a short form the document defines as a gene or protein ("von Hippel-Lindau tumor suppressor
  gene (VHL)", "alkaptonuria gene (AKU)", "glucose-6-phosphate dehydrogenase (G6PD)": the long
  form ends in gene, protein, locus, receptor, enzyme, or an enzyme's -ase other than
  disease, release, increase, phase) names that gene wherever it occurs, not the disease or
  chemical it shares letters with: such a span is dropped whatever linked it
  (:func:`drop_gene_short_forms`, the step ``gene_short_forms``), unless it is a Gene span (a
  model that finds genes: "insulin receptor related receptor (IRR)" is the gene it names;
  docs/decisions/0013-gene-short-forms.md);
* a short all-capital span the document does not define ("DM", "TD"), linked by the
  exact-name sieve: two letters name many things. :func:`drop_undefined_short_forms` (the step
  ``undefined_short_forms``) drops those of at most ``max_length`` characters; it lost on
  BC5CDR dev ("NO", "EE", "K" are chemicals there) and is not in the shipped pipeline.
* a Disease written like a gene symbol — letters, then a number ("RB1", "IDDM2", "NPHS2") —
  that the document does not define, linked by its letters (MEDIC keeps OMIM's symbols as
  disease names): in text such a symbol names the gene or locus. NCBI disease train annotates
  18 of the 171 exact MEDIC names of that shape its abstracts contain (those it annotates are
  defined or named in full nearby, "spinocerebellar ataxia type 3"), and BioRED annotates them
  as genes; on the dev corpora every such span was a false positive
  (docs/decisions/0015-disease-symbols.md). :func:`drop_disease_symbols` (the step ``disease_symbols``)
  drops them.

All but the gene rule leave alone spans linked through their long form (``link_method``
"abbreviation") or by the text linker (which expands short forms itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from data_tools.documents import Annotation
from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations
from e2e_linker.lexical.lexicon import alternation, ordered, words

#: link methods that already read the long form
THROUGH_LONG_FORM = ("abbreviation", "text")
#: a long form ending in one of these words defines a gene or protein
GENE_LONG_FORM = re.compile(r"\b(?:" + alternation(ordered("gene_long_form_heads"))
                            + r"|(?!(?:dis|rel|incr|decr|ph|b|c|purch)eases?\b)\w{3,}ases?)$",
                            re.IGNORECASE)
#: a gene symbol's shape: "RB1", "IDDM2", "Wt1", "ACG1B"
GENE_SYMBOL = re.compile(r"[A-Za-z]{2,}[0-9]{1,2}[A-Za-z]?")
#: words too common to make a long form and a concept name agree
FUNCTION_WORDS = words("function_words")


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric words of at least three characters, function words left out."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower())
            if len(w) >= 3 and w not in FUNCTION_WORDS}


def agrees(long_form: str, names: Sequence[str]) -> bool:
    """Whether a long form and one of a concept's names share a content word."""
    words = content_words(long_form)
    return any(words & content_words(name) for name in names)


def defined_here(annotation: Annotation, span: SpanPrediction,
                 abbreviations: Sequence[DocumentAbbreviations]):
    """The abbreviation its document defines with the annotation's text as short form
    (None: none)."""
    return abbreviations[span.doc_index].definitions.get(annotation.text)


def drop_gene_short_forms(annotations: list[Annotation | None],
                          spans: Sequence[SpanPrediction],
                          abbreviations: Sequence[DocumentAbbreviations]) -> None:
    """A span other than a Gene whose text the document defines as a gene or protein is
    dropped (set to None), in place, whatever linked it."""
    for k, (ann, span) in enumerate(zip(annotations, spans, strict=True)):
        if ann is None or ann.type == GENE_TYPE:
            continue
        abbr = defined_here(ann, span, abbreviations)
        if abbr is not None and GENE_LONG_FORM.search(abbr.long.strip()):
            annotations[k] = None


def by_its_letters(annotation: Annotation | None) -> bool:
    """Whether a kept annotation was linked by its own text, not through a long form."""
    return annotation is not None \
        and annotation.infons.get("link_method") not in THROUGH_LONG_FORM


def drop_undefined_short_forms(annotations: list[Annotation | None],
                               spans: Sequence[SpanPrediction],
                               abbreviations: Sequence[DocumentAbbreviations],
                               max_length: int) -> None:
    """An all-capital span of at most ``max_length`` characters that the document does not
    define, linked by an exact name, is dropped (set to None), in place."""
    for k, (ann, span) in enumerate(zip(annotations, spans, strict=True)):
        if by_its_letters(ann) and defined_here(ann, span, abbreviations) is None \
                and len(ann.text) <= max_length and ann.text.isupper() \
                and ann.infons.get("link_method") == "exact":
            annotations[k] = None


def drop_disease_symbols(annotations: list[Annotation | None],
                         spans: Sequence[SpanPrediction],
                         abbreviations: Sequence[DocumentAbbreviations]) -> None:
    """A Disease written like a gene symbol that the document does not define is dropped
    (set to None), in place."""
    for k, (ann, span) in enumerate(zip(annotations, spans, strict=True)):
        if by_its_letters(ann) and ann.type == "Disease" \
                and defined_here(ann, span, abbreviations) is None \
                and GENE_SYMBOL.fullmatch(ann.text):
            annotations[k] = None


def drop_redefined_short_forms(annotations: list[Annotation | None],
                               spans: Sequence[SpanPrediction],
                               abbreviations: Sequence[DocumentAbbreviations], kb) -> None:
    """A short form the document defines, linked by its letters to a concept none of whose
    names shares a word with the long form, is dropped (set to None), in place (``kb``
    answers ``get(concept_id)``; None: nothing changes)."""
    if kb is None:
        return
    for k, (ann, span) in enumerate(zip(annotations, spans, strict=True)):
        if not by_its_letters(ann) or not ann.concept_ids:
            continue
        abbr = defined_here(ann, span, abbreviations)
        if abbr is None:
            continue
        concept = kb.get(ann.concept_ids[0])
        if concept is not None and not agrees(abbr.long, concept.all_names()):
            annotations[k] = None
