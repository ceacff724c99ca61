"""After linking: a span's type made to agree with the concept it was linked to.

Why: the type head and the KB disagree in two ways that cost precision on text we were not
tuned on (eval/results/concept_type_rules):

* an exact name, a sieve or a short form may link a span to a concept of the other type (the
  exact-name sieve falls back to every concept of a name when none has the span's type), and
  the span kept the type head's guess: "PDB" typed Chemical but linked to Paget disease of
  bone. The KB's type of a lexically found concept is the better evidence, so the span takes
  it (``type_from_concept``);
* MeSH files proteins and enzymes as chemicals (D12.776, D08.811:
  :attr:`data_tools.kb.Concept.gene_product`), so "transgelin", "VDR" or "caspase" linked as
  Chemical — while BioRED, BC5CDR and the gene corpora annotate them as genes or not at all.
  A Chemical linked to a gene product is dropped (``gene_products="drop"``) or kept as before
  (``"keep"``).

A span that ends up Gene with fewer than two letters and digits, or of two bases ("AA",
"GC"), is dropped (:func:`~e2e_linker.lexical.gene_forms.too_short_for_a_gene`), and so is one
that names a class of proteins ("protein kinase", "GTPase"), a subunit by its Greek letter
alone ("zeta", "beta subunit") or a protein domain ("SH3")
(:func:`~e2e_linker.lexical.protein_classes.names_no_single_gene`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from data_tools.documents import Annotation
from e2e_linker.lexical.gene_forms import too_short_for_a_gene
from e2e_linker.lexical.protein_classes import names_no_single_gene

#: what happens to a Chemical span linked to a gene product
GENE_PRODUCT_CHOICES = ("drop", "keep")


@dataclass(frozen=True)
class ConceptTypeRules:
    """The two rules above, as ``linker annotate`` sets them."""

    type_from_concept: bool = True
    gene_products: str = "drop"

    def __post_init__(self) -> None:
        if self.gene_products not in GENE_PRODUCT_CHOICES:
            raise ValueError(f"gene_products must be one of {GENE_PRODUCT_CHOICES}, "
                             f"not {self.gene_products!r}")

    def apply(self, annotations: Sequence[Annotation | None], kb,
              model_types: Sequence[str]) -> list[Annotation | None]:
        """``annotations`` with the rules applied in place (None: a span dropped).

        ``kb`` answers ``get(concept_id)`` with a :class:`~data_tools.kb.Concept` (None: no
        KB at hand, nothing changes); a span takes its concept's type only when exactly one
        of the concept's types is one the model predicts, a gene product counting as Gene too;
        a span of neither of a gene product's types takes Gene when the model predicts genes.
        """
        out = list(annotations)
        if kb is None:
            return out
        for k, ann in enumerate(out):
            if ann is None or not ann.concept_ids:
                continue
            concept = kb.get(ann.concept_ids[0])
            if concept is None:
                continue
            if self.type_from_concept:
                # a gene product is a gene's product too: a model's Gene span linked to one
                # keeps its type (MeSH types these concepts Chemical only)
                types = concept.type.split("|") + (["Gene"] if concept.gene_product else [])
                kinds = [t for t in types if t in model_types]
                if ann.type not in kinds:
                    if len(kinds) == 1:
                        ann.type = kinds[0]
                    elif "Gene" in kinds and concept.gene_product:
                        # "Wiskott-Aldrich syndrome protein" typed Disease by the type head
                        # and linked to the protein: both Chemical and Gene are the concept's,
                        # and the guidelines that annotate genes call a gene product a gene
                        ann.type = "Gene"
            if self.gene_products == "drop" and ann.type == "Chemical" \
                    and concept.gene_product:
                out[k] = None
            elif ann.type == "Gene" and (too_short_for_a_gene(ann.text)
                                         or names_no_single_gene(ann.text)):
                # a base of a variant ("c.686C>G") kept as a chemical's name and linked to a
                # gene's one-letter alias: the gate keeps no such Gene span
                # (SpanLinker.lexically_linked), nor does this rule; a class name linked to
                # the one gene whose other designations hold it; a subunit's letter or a
                # domain alone
                out[k] = None
        return out
