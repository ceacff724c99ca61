"""After linking: a span's type made to agree with the concept it was linked to.

Why: the type head and the KB disagree in two ways that cost precision on text we were not
tuned on (docs/decisions/0010-type-from-concept.md):

* an exact name, a sieve or a short form may link a span to a concept of the other type (the
  exact-name sieve falls back to every concept of a name when none has the span's type), and
  the span kept the type head's guess: "PDB" typed Chemical but linked to Paget disease of
  bone. The KB's type of a lexically found concept is the better evidence, so the span takes
  it (:func:`take_concept_types`, the step ``type_from_concept``);
* MeSH files proteins and enzymes as chemicals (D12.776, D08.811:
  :attr:`data_tools.kb.Concept.gene_product`), so "transgelin", "VDR" or "caspase" linked as
  Chemical — while BioRED, BC5CDR and the gene corpora annotate them as genes or not at all.
  A Chemical linked to a gene product is dropped (:func:`drop_gene_products`, the step
  ``gene_products``; disabling the step keeps it), and so is a span that became Gene by such
  a concept and kept its MeSH ID (the step ``gene_product_genes``).

A span that ends up Gene with fewer than two letters and digits, or of two bases ("AA",
"GC"), is dropped (:func:`~e2e_linker.lexical.gene_forms.too_short_for_a_gene`), and so is one
that names a class of proteins ("protein kinase", "GTPase"), a subunit by its Greek letter
alone ("zeta", "beta subunit") or a protein domain ("SH3")
(:func:`~e2e_linker.lexical.protein_classes.names_no_single_gene`; :func:`drop_no_single_gene`,
the step ``no_single_gene``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from data_tools.documents import Annotation
from data_tools.kb_loaders import SPECIES_TYPE
from e2e_linker.lexical.gene_forms import too_short_for_a_gene
from e2e_linker.lexical.protein_classes import names_no_single_gene


def concept_of(annotation: Annotation | None, kb):
    """The KB concept an annotation is linked to first (None: dropped, unlinked, no KB at
    hand, or an ID the KB lacks): what every rule of this module reads."""
    if annotation is None or not annotation.concept_ids or kb is None:
        return None
    return kb.get(annotation.concept_ids[0])


def take_concept_types(annotations: list[Annotation | None], kb,
                       model_types: Sequence[str]) -> None:
    """Each linked span takes its concept's type, in place, when exactly one of the
    concept's types is one the model predicts, a gene product counting as Gene too; a span of
    neither of a gene product's types takes Gene when the model predicts genes."""
    for ann in annotations:
        concept = concept_of(ann, kb)
        if concept is None:
            continue
        # a gene product is a gene's product too: a model's Gene span linked to one keeps
        # its type (MeSH types these concepts Chemical only)
        types = concept.types() + (["Gene"] if concept.gene_product else [])
        kinds = [t for t in types if t in model_types]
        if ann.type not in kinds:
            if len(kinds) == 1:
                ann.type = kinds[0]
            elif "Gene" in kinds and concept.gene_product:
                # "Wiskott-Aldrich syndrome protein" typed Disease by the type head and linked
                # to the protein: both Chemical and Gene are the concept's, and the guidelines
                # that annotate genes call a gene product a gene
                ann.type = "Gene"


def drop_gene_products(annotations: list[Annotation | None], kb,
                       type_: str = "Chemical") -> None:
    """A span of ``type_`` linked to a gene product (a protein MeSH files as a chemical) is
    dropped (set to None), in place: a Chemical under BC5CDR's guideline (the step
    ``gene_products``), a Gene because a gene mention's ID is a gene's (``gene_product_genes``).

    Why Gene too: such a span became Gene by its concept's type (:func:`take_concept_types`)
    and kept the MeSH ID, and every guideline that annotates genes links a gene mention to
    NCBI Gene, so no gene corpus counts it right (docs/decisions/0046-gene-product-genes.md)."""
    for k, ann in enumerate(annotations):
        concept = concept_of(ann, kb)
        if concept is not None and ann.type == type_ and concept.gene_product:
            annotations[k] = None


def drop_no_single_gene(annotations: list[Annotation | None], kb) -> None:
    """A linked span that ends up Gene and is too short for a gene, or names a class of
    proteins, a subunit's letter or a domain, is dropped (set to None), in place."""
    for k, ann in enumerate(annotations):
        if concept_of(ann, kb) is not None and ann.type == "Gene" and (
                too_short_for_a_gene(ann.text) or names_no_single_gene(ann.text)):
            # a base of a variant ("c.686C>G") kept as a chemical's name and linked to a
            # gene's one-letter alias: the gate keeps no such Gene span
            # (SpanLinker.lexically_linked), nor does this rule; a class name linked to the
            # one gene whose other designations hold it; a subunit's letter or a domain alone
            annotations[k] = None


def drop_higher_taxa(annotations: list[Annotation | None],
                     read_taxa: Callable[[], frozenset[str] | None]) -> None:
    """Each Species annotation linked to a taxon in ``read_taxa()`` (the taxa above a species:
    :func:`~data_tools.kb_loaders.taxa_above_species`; read only when a Species annotation
    is linked, so text that names no organism does not pay for the taxonomy's parse) is
    dropped (set to None), in place.

    Why: a genus, family, order or kingdom ("Arabidopsis", "fleas", "fungi", "rodents") names
    a group of organisms, and every species guideline we read (LINNAEUS, S800 and BioRED's
    OrganismTaxon) annotates species and what lies below them, 98-100 % of their gold; the
    model proposes such groups all the same (docs/decisions/0048-higher-taxa.md)."""
    species = [k for k, ann in enumerate(annotations)
               if ann is not None and ann.type == SPECIES_TYPE and ann.concept_ids]
    taxa = read_taxa() if species else None
    if not taxa:
        return
    for k in species:
        if annotations[k].concept_ids[0] in taxa:
            annotations[k] = None

