"""The annotate stage: rules on linked annotations, each a step.

Each calls the rule it names in :mod:`e2e_linker.collective.concept_types`,
:mod:`~e2e_linker.collective.short_form_rules`, :mod:`~e2e_linker.collective.sequence_context`,
:mod:`~e2e_linker.collective.gene_context`, :mod:`~e2e_linker.collective.gene_families` or the
linker's species check; a rule sets an annotation to None to drop its span. Why each exists,
with its figures: docs/decisions/.
"""

from __future__ import annotations

from dataclasses import dataclass

from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.concept_types import (
    drop_gene_products,
    drop_higher_taxa,
    drop_no_single_gene,
    take_concept_types,
)
from e2e_linker.collective.gene_appositions import link_gene_appositions
from e2e_linker.collective.gene_context import DROPPED_TYPES, drop_gene_modifiers
from e2e_linker.collective.gene_families import drop_gene_mentions
from e2e_linker.collective.sequence_context import drop_sequence_chemicals
from e2e_linker.collective.short_form_rules import (
    drop_disease_symbols,
    drop_gene_short_forms,
    drop_redefined_short_forms,
    drop_undefined_short_forms,
)
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.step import Step, register


@dataclass(frozen=True)
class AnnotationStep(Step):
    """A rule on linked annotations (one per kept span)."""

    stage = "annotate"
    reads = ("annotations",)
    writes = ("annotations",)


@register
@dataclass(frozen=True)
class GeneAppositionLinks(AnnotationStep):
    """A name ``gene_appositions`` kept beside a bracketed Gene annotation (and each repeat of
    it) takes that annotation's concept, and so does a name the model kept there that is
    linked to a gene product, with its repeats
    (:func:`~e2e_linker.collective.gene_appositions.link_gene_appositions`)."""

    name = "gene_apposition_links"
    summary = ("a name kept beside a bracketed Gene (by gene_appositions, or linked to a gene "
               "product) takes its concept")
    reads = ("annotations", "kept")

    def run(self, batch: Batch) -> None:
        link_gene_appositions(batch.annotations, batch.kept, batch.docs, batch.kb, GENE_TYPE)


@register
@dataclass(frozen=True)
class TypeFromConcept(AnnotationStep):
    """A span linked to a concept of another type takes the concept's type (the KB's type
    of a lexically found concept is the better evidence)."""

    name = "type_from_concept"
    summary = "a span takes the type of the concept it is linked to"

    def run(self, batch: Batch) -> None:
        take_concept_types(batch.annotations, batch.kb, batch.model_types)


@register
@dataclass(frozen=True)
class GeneProducts(AnnotationStep):
    """A Chemical linked to a protein or enzyme that MeSH files as a chemical is dropped
    (BC5CDR's guideline; other corpora annotate these as genes or not at all)."""

    name = "gene_products"
    summary = "drop a Chemical linked to a protein MeSH files as a chemical"

    def run(self, batch: Batch) -> None:
        drop_gene_products(batch.annotations, batch.kb)


@register
@dataclass(frozen=True)
class GeneProductGenes(AnnotationStep):
    """A Gene span linked to a protein MeSH files as a chemical, not to a gene, is dropped:
    a gene mention's ID is a gene's (:func:`~e2e_linker.collective.concept_types
    .drop_gene_products` for Gene)."""

    name = "gene_product_genes"
    summary = "drop a Gene span linked to a protein MeSH files as a chemical (no gene ID)"

    def run(self, batch: Batch) -> None:
        drop_gene_products(batch.annotations, batch.kb, GENE_TYPE)


@register
@dataclass(frozen=True)
class NoSingleGene(AnnotationStep):
    """A linked span that ends up Gene and names no single gene is dropped: too short, a
    class of proteins, a subunit's Greek letter or a domain alone."""

    name = "no_single_gene"
    summary = "drop a Gene span too short, or naming a protein class, subunit or domain"

    def run(self, batch: Batch) -> None:
        drop_no_single_gene(batch.annotations, batch.kb)


@register
@dataclass(frozen=True)
class GeneFamilyMentions(AnnotationStep):
    """A Gene annotation that the model's fitted family model (its ``gene_families.json``:
    :mod:`~e2e_linker.collective.gene_families`) finds a family of genes with probability at
    least ``threshold`` is dropped; a model without the file drops none."""

    threshold: float = 0.5

    name = "gene_families"
    summary = "drop a Gene span the fitted family model calls a family (p ≥ `threshold`)"

    def run(self, batch: Batch) -> None:
        if batch.linker.gene_families is not None:
            drop_gene_mentions(batch.annotations, batch.kept, batch.docs, batch.linker.genes,
                               batch.linker.gene_families, self.threshold)


@register
@dataclass(frozen=True)
class GeneFalseAlarms(AnnotationStep):
    """A Gene annotation that the model's fitted false-alarm model (its
    ``gene_false_alarms.json``: :mod:`~e2e_linker.collective.gene_families`) finds a span the
    gene corpora leave unannotated with probability at least ``threshold`` is dropped; a model
    without the file drops none (docs/decisions/0053-gene-false-alarms.md)."""

    threshold: float = 0.5

    name = "gene_false_alarms"
    summary = "drop a Gene span the fitted false-alarm model calls no gene mention (p ≥ `threshold`)"

    def run(self, batch: Batch) -> None:
        if batch.linker.gene_false_alarms is not None:
            drop_gene_mentions(batch.annotations, batch.kept, batch.docs, batch.linker.genes,
                               batch.linker.gene_false_alarms, self.threshold)


@register
@dataclass(frozen=True)
class GeneShortForms(AnnotationStep):
    """A span (not Gene) whose text the document defines as a gene or protein is dropped."""

    name = "gene_short_forms"
    summary = "drop a non-Gene span the document defines as a gene or protein"
    reads = ("annotations", "abbreviations")

    def run(self, batch: Batch) -> None:
        drop_gene_short_forms(batch.annotations, batch.kept, batch.abbreviations)


@register
@dataclass(frozen=True)
class UndefinedShortForms(AnnotationStep):
    """An undefined all-capital span of at most ``max_length`` characters linked by an exact
    name is dropped."""

    max_length: int = 3

    name = "undefined_short_forms"
    summary = "drop an undefined all-capital span of ≤ `max_length` linked by exact name"
    reads = ("annotations", "abbreviations")

    def run(self, batch: Batch) -> None:
        drop_undefined_short_forms(batch.annotations, batch.kept, batch.abbreviations,
                                   self.max_length)


@register
@dataclass(frozen=True)
class DiseaseSymbols(AnnotationStep):
    """A Disease written like a gene symbol ("RB1") that the document does not define is
    dropped."""

    name = "disease_symbols"
    summary = "drop an undefined Disease written like a gene symbol (\"RB1\")"
    reads = ("annotations", "abbreviations")

    def run(self, batch: Batch) -> None:
        drop_disease_symbols(batch.annotations, batch.kept, batch.abbreviations)


@register
@dataclass(frozen=True)
class RedefinedShortForms(AnnotationStep):
    """A defined short form linked by its letters to a concept no name of which shares a
    word with the long form is dropped."""

    name = "redefined_short_forms"
    summary = "drop a defined short form linked to a concept its long form does not name"
    reads = ("annotations", "abbreviations")

    def run(self, batch: Batch) -> None:
        drop_redefined_short_forms(batch.annotations, batch.kept, batch.abbreviations,
                                   batch.kb)


@register
@dataclass(frozen=True)
class SequenceChemicals(AnnotationStep):
    """A Chemical named as a residue or base of a sequence ("arginine residue") or naming a
    sequence element ("stop codon", an undefined "SNP") is dropped."""

    name = "sequence_chemicals"
    summary = "drop a Chemical that names a sequence residue or element"
    reads = ("annotations", "abbreviations")

    def run(self, batch: Batch) -> None:
        batch.annotations = drop_sequence_chemicals(batch.annotations, batch.kept, batch.docs,
                                                    batch.abbreviations, batch.kb)


@register
@dataclass(frozen=True)
class GeneModifiers(AnnotationStep):
    """A name used as part of a gene's or protein's name ("creatine kinase") is dropped:
    ``types`` "all" (Chemical and Disease spans) or "chemicals"."""

    types: str = "all"

    name = "gene_modifiers"
    summary = "drop a name used inside a gene's name (`types`: all or chemicals)"

    def __post_init__(self) -> None:
        if self.types not in DROPPED_TYPES:
            raise ValueError(f"gene_modifiers.types must be one of {', '.join(DROPPED_TYPES)}"
                             f", not {self.types!r}")

    def run(self, batch: Batch) -> None:
        batch.annotations = drop_gene_modifiers(batch.annotations, batch.kept, batch.docs,
                                                self.types)


@register
@dataclass(frozen=True)
class UnnamedSpecies(AnnotationStep):
    """A name-only span linked to fly or yeast genes only, in a document that names neither
    species, is dropped
    (:meth:`~e2e_linker.collective.span_linking.SpanLinker.drop_unnamed_species`)."""

    name = "unnamed_species"
    summary = "drop a gene linked only to fly/yeast genes where the text names neither"

    def run(self, batch: Batch) -> None:
        batch.annotations = batch.linker.drop_unnamed_species(batch.annotations, batch.kept,
                                                              batch.docs)


@register
@dataclass(frozen=True)
class HigherTaxa(AnnotationStep):
    """A Species annotation linked to a taxon above a species (a genus, family, order,
    kingdom) is dropped
    (:func:`~e2e_linker.collective.concept_types.drop_higher_taxa`; the taxa: the KB's
    taxonomy, :func:`~data_tools.kb_loaders.taxa_above_species`)."""

    name = "higher_taxa"
    summary = "drop a Species linked to a taxon above a species (genus, family, order...)"

    def run(self, batch: Batch) -> None:
        drop_higher_taxa(batch.annotations, lambda: batch.linker.higher_taxa)

