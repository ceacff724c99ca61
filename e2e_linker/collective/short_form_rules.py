"""After linking: short forms whose link the document does not support.

Why: a short form means what its document says it means. Three kinds of span were wrong on
the dev corpora (eval/results/post_link_rules):

* a short form the document *defines* ("otilonium bromide (OB)", "hormone therapy (HT)")
  whose long form was neither detected nor a KB name, so short-form linking
  (:meth:`~e2e_linker.collective.span_linking.SpanLinker.link_short_forms`) left it alone and
  the exact-name sieve or dense search linked the letters to the KB's usual meaning: "OB"
  to Obesity, "HT" to Hashimoto disease, "SN" (substantia nigra) to a chemical. Such a span is
  dropped when none of its concept's names shares a word with the long form
  (``redefined="drop"``): "CRC" defined as "colorectal adenocarcinoma" and linked to
  Colorectal Neoplasms stays;
* a short form the document defines as a gene or protein ("von Hippel-Lindau tumor suppressor
  gene (VHL)", "alkaptonuria gene (AKU)", "glucose-6-phosphate dehydrogenase (G6PD)": the long
  form ends in gene, protein, locus, receptor, enzyme, or an enzyme's -ase other than
  disease, release, increase, phase) names that gene wherever it occurs, not the disease or chemical
  it shares letters with: such a span is dropped whatever linked it (``genes="drop"``),
  unless it is a Gene span (a model that finds genes: "insulin receptor related receptor
  (IRR)" is the gene it names; eval/results/gene_short_forms);
* a short all-capital span the document does not define ("DM", "TD"), linked by the
  exact-name sieve: two letters name many things. ``undefined_max`` (0: off) drops those of at
  most that many characters; it lost on BC5CDR dev ("NO", "EE", "K" are chemicals there) and is
  off by default.
* a Disease written like a gene symbol — letters, then a number ("RB1", "IDDM2", "NPHS2") —
  that the document does not define, linked by its letters (MEDIC keeps OMIM's symbols as
  disease names): in text such a symbol names the gene or locus. NCBI disease train annotates
  18 of the 171 exact MEDIC names of that shape its abstracts contain (those it annotates are
  defined or named in full nearby, "spinocerebellar ataxia type 3"), and BioRED annotates them
  as genes; on the dev corpora every such span was a false positive
  (eval/results/disease_symbols). ``disease_symbols="drop"`` drops them.

All but the gene rule leave alone spans linked through their long form (``link_method``
"abbreviation") or by the text linker (which expands short forms itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from data_tools.documents import Annotation
from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations

#: what happens to a defined short form linked by its letters to a concept its long form
#: does not name
REDEFINED_CHOICES = ("drop", "keep")
#: link methods that already read the long form
THROUGH_LONG_FORM = ("abbreviation", "text")
#: what happens to a span the document defines as a gene or protein
GENE_CHOICES = ("drop", "keep")
#: a long form ending in one of these words defines a gene or protein
GENE_LONG_FORM = re.compile(r"\b(?:genes?|proteins?|locus|loci|receptors?|enzymes?|kinases?"
                            r"|(?!(?:dis|rel|incr|decr|ph|b|c|purch)eases?\b)\w{3,}ases?)$",
                            re.IGNORECASE)
#: what happens to an undefined Disease span written like a gene symbol
SYMBOL_CHOICES = ("drop", "keep")
#: a gene symbol's shape: "RB1", "IDDM2", "Wt1", "ACG1B"
GENE_SYMBOL = re.compile(r"[A-Za-z]{2,}[0-9]{1,2}[A-Za-z]?")
#: words too common to make a long form and a concept name agree
FUNCTION_WORDS = frozenset({"the", "and", "for", "with", "from", "into", "not", "non"})


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric words of at least three characters, function words left out."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower())
            if len(w) >= 3 and w not in FUNCTION_WORDS}


def agrees(long_form: str, names: Sequence[str]) -> bool:
    """Whether a long form and one of a concept's names share a content word."""
    words = content_words(long_form)
    return any(words & content_words(name) for name in names)


@dataclass(frozen=True)
class ShortFormRules:
    """The rules above, as ``linker annotate`` sets them."""

    redefined: str = "drop"
    undefined_max: int = 0
    genes: str = "drop"
    disease_symbols: str = "drop"

    def __post_init__(self) -> None:
        if self.redefined not in REDEFINED_CHOICES:
            raise ValueError(f"redefined_short_forms must be one of {REDEFINED_CHOICES}, "
                             f"not {self.redefined!r}")
        if self.genes not in GENE_CHOICES:
            raise ValueError(f"gene_short_forms must be one of {GENE_CHOICES}, "
                             f"not {self.genes!r}")
        if self.disease_symbols not in SYMBOL_CHOICES:
            raise ValueError(f"disease_symbols must be one of {SYMBOL_CHOICES}, "
                             f"not {self.disease_symbols!r}")
        if self.undefined_max < 0:
            raise ValueError("undefined_short_max must be at least 0")

    def apply(self, annotations: Sequence[Annotation | None], spans: Sequence[SpanPrediction],
              abbreviations: Sequence[DocumentAbbreviations], kb
              ) -> list[Annotation | None]:
        """``annotations`` (one per span) with the rules applied (None: a span dropped).

        ``abbreviations``: each document's scan, by the spans' ``doc_index``; ``kb`` answers
        ``get(concept_id)`` with a :class:`~data_tools.kb.Concept` (None: no KB at hand, the
        redefined rule changes nothing).
        """
        out = list(annotations)
        for k, (ann, span) in enumerate(zip(out, spans, strict=True)):
            if ann is None:
                continue
            abbr = abbreviations[span.doc_index].definitions.get(ann.text)
            if self.genes == "drop" and abbr is not None and ann.type != GENE_TYPE \
                    and GENE_LONG_FORM.search(abbr.long.strip()):
                out[k] = None
                continue
            if ann.infons.get("link_method") in THROUGH_LONG_FORM:
                continue
            if abbr is None:
                if (self.undefined_max and len(ann.text) <= self.undefined_max
                        and ann.text.isupper() and ann.infons.get("link_method") == "exact"):
                    out[k] = None
                elif (self.disease_symbols == "drop" and ann.type == "Disease"
                      and GENE_SYMBOL.fullmatch(ann.text)):
                    out[k] = None
                continue
            if self.redefined == "drop" and kb is not None and ann.concept_ids:
                concept = kb.get(ann.concept_ids[0])
                if concept is not None and not agrees(abbr.long, concept.all_names()):
                    out[k] = None
        return out
