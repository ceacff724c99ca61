"""The link stage: the linker and its switchable parts.

:class:`~e2e_linker.collective.span_linking.SpanLinker` links every kept span in one batched
search and tries its parts in a fixed order (exact name, sieve stack, dense ranking,
composites, short forms through their long forms); each part is a step here so a declaration
can switch it off, and the linker is built with the parts the pipeline declares
(:meth:`~e2e_linker.pipeline.declaration.Pipeline.has`).
"""

from __future__ import annotations

from dataclasses import dataclass

from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.step import Step, register


@register
@dataclass(frozen=True)
class ExactName(Step):
    """The exact-name sieve: a KB name of the span's type (case and spelling folds) decides,
    the dense ranking breaking ties between concepts that share the name."""

    name = "exact_name"
    stage = "link"
    summary = "a span that is a KB name of its type takes that concept (linker part)"


@register
@dataclass(frozen=True)
class SieveStack(Step):
    """The normalizer's lexical steps on a span the exact name does not resolve, before the
    dense choice: in-document short forms expanded, the model's mined names, a unique
    letters-and-digits key, salt-free forms (:mod:`e2e_linker.lexical.sieve_stack`)."""

    name = "sieve_stack"
    stage = "link"
    summary = "expanded short forms, mined names, compact keys, salt-free forms (linker part)"


@register
@dataclass(frozen=True)
class Composites(Step):
    """A span of a dense-linked type no name or sieve links as a whole takes its parts'
    concepts when every part is one ("breast or ovarian cancer"; genes: ``coordinated_genes``;
    :meth:`~e2e_linker.collective.span_linking.SpanLinker.composite_ids`)."""

    name = "composites"
    stage = "link"
    summary = "a coordination (\"breast or ovarian cancer\") links to each part (linker part)"


@register
@dataclass(frozen=True)
class CoordinatedGenes(Step):
    """A Gene span writing numbered genes together ("JNK1/2", "MMP-2/-9", "Notch1-4") takes
    each gene of its species, in the order written, when no name links it as a whole or the
    gene its whole text names is another species' than the document's
    (:meth:`~e2e_linker.collective.span_linking.SpanLinker.coordination_of_species`;
    docs/decisions/0051-coordinated-genes.md)."""

    name = "coordinated_genes"
    stage = "link"
    summary = ("numbered genes written together (\"JNK1/2\", \"Notch1-4\") link to each gene "
               "(linker part)")


@register
@dataclass(frozen=True)
class AbbreviationLinks(Step):
    """A short form defined in the document takes its long form's concept
    (:meth:`~e2e_linker.collective.span_linking.SpanLinker.link_short_forms`)."""

    name = "abbreviation_links"
    stage = "link"
    summary = "a defined short form takes the concept of its long form (linker part)"


@register
@dataclass(frozen=True)
class SpeciesMentions(Step):
    """A gene's species order starts from the species its document's Species spans link to,
    most mentioned first, before the species the cue words find
    (:func:`~data_tools.species.mentioned_taxa_first`); for a model that predicts Species and
    a KB with species concepts."""

    name = "species_mentions"
    stage = "link"
    summary = "a gene's species order starts from its document's Species mentions (linker part)"


@register
@dataclass(frozen=True)
class LearnedSpecies(Step):
    """A gene mention's species chosen by the model's fitted species choice (its
    ``species_choice.json``: :mod:`~e2e_linker.collective.species_choice`) in place of the
    rule's per-mention cues; the document's species order still comes after it. A model
    without the file links as without the step."""

    name = "learned_species"
    stage = "link"
    summary = "a gene mention's species chosen by the fitted species model (linker part)"


@register
@dataclass(frozen=True)
class GeneUsage(Step):
    """Among the genes a name links, those the model's training mentions written so link
    to (its mined names: :meth:`~e2e_linker.lexical.sieve_stack.SieveStack.training_labels`,
    or a gene of another species with such a gene's symbol) come first, before the official
    symbol and the gene with more names (:meth:`~e2e_linker.collective.gene_ranking.GeneRanking
    .name_ranking_of`); the species order still comes after it. Reads the sieve stack's pool:
    without the ``sieve_stack`` step, or a model without mined names, it changes nothing."""

    name = "gene_usage"
    stage = "link"
    summary = "a gene name's genes that training mentions link it to first (linker part)"


@register
@dataclass(frozen=True)
class SpeciesUsage(Step):
    """Among the taxa a Species span's text names, those the species corpora's training
    mentions written so are annotated with come first ("yeast": S. cerevisiae, before the
    other yeasts whose common name it is; ``data_tools/species_forms.tsv``,
    :func:`~e2e_linker.collective.span_linking.usage_with_species`)."""

    name = "species_usage"
    stage = "link"
    summary = "a species word's taxon that training mentions annotate it with first (linker part)"


@register
@dataclass(frozen=True)
class Link(Step):
    """Every kept span linked: one batched dense search, species order, then the parts
    above (:meth:`~e2e_linker.collective.span_linking.SpanLinker.link`)."""

    name = "link"
    stage = "link"
    summary = "link each kept span (dense search, species order, the parts switched on)"
    reads = ("kept", "abbreviations")
    writes = ("annotations",)
    required = True

    def run(self, batch: Batch) -> None:
        batch.annotations = batch.linker.link(batch.kept, batch.docs, batch.abbreviations,
                                              explain=batch.explain)
