"""The select stage: which scored candidates become spans to link.

Each step calls the rule it names in :mod:`e2e_linker.collective.span_selection` (or the
linker's KB lookups); the order that reproduces the shipped output is declared in the model's
``pipeline.toml``. The decisions and their figures: docs/decisions/.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.gene_appositions import keep_gene_appositions
from e2e_linker.collective.span_selection import (
    SpanPrediction,
    extend_to_names,
    gate_unlinked,
    keep_long_forms,
    keep_repeats,
    named_parts,
    never_a_mention,
    resolve_overlaps,
    tag_short_forms,
)
from e2e_linker.errors import UserError
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.step import Step, register


def type_set(step: str, types: str) -> frozenset[str] | None:
    """A ``types`` parameter ("all", or types separated by commas, as the type head names them)
    as a set, None for all; the steps that keep a text's repeats (``propagation``,
    ``kept_repeats``) read it alike. Raises ValueError for a value that names no type."""
    names = frozenset(t.strip() for t in types.split(",") if t.strip())
    if not names:
        raise ValueError(f"{step}.types must be 'all' or a comma-separated list of types, "
                         f"not {types!r}")
    return None if names == {"all"} else names


def check_type_set(step: Step, model_types: Sequence[str]) -> None:
    """Raise :class:`UserError` when ``step``'s ``types`` parameter (:func:`type_set`) names a
    type that ``model_types`` (the model's type head) lacks and the parameter's default does
    not name: a type the default names is accepted for a model without it (the default was
    chosen for the shipped model's types, not by the user), a misspelt or foreign one is not."""
    default = next(f.default for f in dataclasses.fields(step) if f.name == "types")
    names = type_set(step.name, step.types)
    accepted = set(model_types) | (type_set(step.name, default) or set())
    unknown = sorted(names - accepted) if names is not None else []
    if unknown:
        raise UserError(f"{step.name}.types names {', '.join(map(repr, unknown))}, which the model "
                        f"has no type for (its types: {', '.join(model_types)}; or 'all')")


@register
@dataclass(frozen=True)
class GeneNamedChemicals(Step):
    """A Chemical span whose text names a gene and no chemical but gene products becomes a
    Gene span (:meth:`~e2e_linker.collective.span_linking.SpanLinker.gene_named_chemicals`);
    only with a model whose genes are a name-only type."""

    name = "gene_named_chemicals"
    summary = "a Chemical span named only by a gene (and gene products) becomes Gene"
    reads = ("spans",)
    writes = ("spans",)

    def run(self, batch: Batch) -> None:
        batch.replace_spans(batch.linker.gene_named_chemicals(
            batch.spans, [batch.text(s) for s in batch.spans]))


@register
@dataclass(frozen=True)
class SpeciesNamedSpans(Step):
    """A Chemical, Disease or Gene span scored above γ whose text is an exact name of a
    species and of nothing of its own type becomes a Species span
    (:meth:`~e2e_linker.collective.span_linking.SpanLinker.species_named_spans`)."""

    name = "species_named_spans"
    summary = "a span named exactly as a species and as nothing of its type becomes Species"
    reads = ("spans",)
    writes = ("spans",)

    def run(self, batch: Batch) -> None:
        batch.replace_spans(batch.linker.species_named_spans(
            batch.spans, [batch.text(s) for s in batch.spans], batch.keep))


@register
@dataclass(frozen=True)
class NeverAMention(Step):
    """Candidates whose text is never a mention of any type (an unbalanced bracket, an ion
    cut before its charge: :func:`~e2e_linker.collective.span_selection.never_a_mention`)
    leave the running."""

    name = "never_a_mention"
    summary = "drop candidates with an unbalanced bracket or an ion cut before its charge"
    reads = ("spans",)
    writes = ("spans",)

    def run(self, batch: Batch) -> None:
        batch.replace_spans([s for s in batch.spans
                             if not never_a_mention(s, batch.docs[s.doc_index])])


@register
@dataclass(frozen=True)
class ScoreFloor(Step):
    """Candidates scored at most the pipeline's floor (γ, or the lowest threshold a rescue
    step reads below it) leave the running; the candidates as they stand before it are those
    name extension may grow a span into."""

    name = "score_floor"
    summary = "keep the candidates scored above γ or a rescue step's lower threshold"
    reads = ("spans",)
    writes = ("spans", "candidates")
    required = True

    def run(self, batch: Batch) -> None:
        batch.candidates = batch.spans
        batch.replace_spans([s for s in batch.spans if s.mention_score > batch.floor])


@register
@dataclass(frozen=True)
class LexicalGate(Step):
    """A candidate no lexical step links (exact name, short form, sieves) stays only when
    scored at least ``gate`` (:func:`~e2e_linker.collective.span_selection.gate_unlinked`);
    above 1 only named spans stay."""

    gate: float = 1.01

    name = "lexical_gate"
    summary = "a candidate no name, short form or sieve links must score at least `gate`"
    reads = ("spans", "abbreviations")
    writes = ("spans", "gated")

    def run(self, batch: Batch) -> None:
        linked = batch.linker.lexically_linked(batch.spans, [batch.text(s) for s in batch.spans],
                                               batch.abbreviations)
        passed = gate_unlinked(batch.spans, linked, self.gate)
        taken = {id(s) for s in passed}
        batch.gated = [s for s in batch.spans if id(s) not in taken]
        batch.replace_spans(passed)


@register
@dataclass(frozen=True)
class NamedParts(Step):
    """A candidate above γ that the lexical gate took out is replaced by the longest run of
    its words that is an exact KB name of one of the ``top_k`` concepts of its type its
    vector links to ("asthma" in "allergic asthma"), with its score
    (:func:`~e2e_linker.collective.span_selection.named_parts`;
    docs/decisions/0050-named-parts.md: the concept the whole links to, not one of five)."""

    top_k: int = 1

    name = "named_parts"
    summary = ("replace a gated candidate above γ by the longest run of its words naming one "
               "of the `top_k` concepts its vector links to")
    reads = ("gated",)
    writes = ("spans",)

    def run(self, batch: Batch) -> None:
        linker = batch.linker
        parts = named_parts([s for s in batch.gated if s.mention_score > batch.keep],
                            batch.docs, linker.name_concepts,
                            lambda spans: linker.dense_concepts(spans, self.top_k))
        if parts:
            batch.replace_spans(batch.spans + parts)


@dataclass(frozen=True)
class RescueStep(Step):
    """A step that keeps weaker candidates (above ``threshold``, at most γ) it finds support
    for (:meth:`supports`); off when ``threshold`` is not below γ."""

    threshold: float = 0.5

    reads = ("spans",)
    writes = ("rescued",)
    rescues = True

    def floor(self, keep: float) -> float | None:
        return self.threshold if self.threshold < keep else None

    def supports(self, batch: Batch) -> Callable[[SpanPrediction], bool]:
        """What makes a weaker candidate of ``batch`` worth keeping."""
        raise NotImplementedError

    def run(self, batch: Batch) -> None:
        if self.threshold >= batch.keep:
            return
        supported = self.supports(batch)
        batch.rescued.update(id(s) for s in batch.spans
                             if self.threshold < s.mention_score <= batch.keep and supported(s))


@register
@dataclass(frozen=True)
class Propagation(RescueStep):
    """A weaker candidate whose text, case folded, a span above γ has in the same document is
    kept too (a name spelled out once and repeated bare); ``types``: "all", or the types (comma
    separated, as the type head names them) whose candidates it keeps (docs/results.md, "Every
    rule re-earned": a gene's weaker repeats are mostly a class or family word)."""

    threshold: float = 0.2
    types: str = "all"

    name = "propagation"
    summary = ("keep a weaker repeat (score > `threshold`) of a text kept in the document, "
               "of `types` (all, or a comma-separated list)")

    def __post_init__(self) -> None:
        type_set(self.name, self.types)

    def check_model_types(self, model_types: Sequence[str]) -> None:
        check_type_set(self, model_types)

    def supports(self, batch: Batch) -> Callable[[SpanPrediction], bool]:
        seen = {(s.doc_index, batch.text(s).casefold()) for s in batch.strong()}
        kinds = type_set(self.name, self.types)
        return lambda s: (kinds is None or s.type in kinds) \
            and (s.doc_index, batch.text(s).casefold()) in seen


@register
@dataclass(frozen=True)
class Dictionary(RescueStep):
    """A weaker candidate whose text is an exact KB name of its type is kept too.

    Its default threshold is below the shipped γ so that declaring the step (``--set
    dictionary``, the re-earning's "with dictionary" row) does something; at the rescue
    steps' 0.5 it never acted (docs/decisions/0006-dictionary.md)."""

    threshold: float = 0.15

    name = "dictionary"
    summary = "keep a weaker candidate (score > `threshold`) that is an exact KB name"

    def supports(self, batch: Batch) -> Callable[[SpanPrediction], bool]:
        return lambda s: batch.linker.is_name(batch.text(s), s.type)


@register
@dataclass(frozen=True)
class Overlaps(Step):
    """The spans above γ and the rescued ones, the most probable of overlapping spans kept
    (:func:`~e2e_linker.collective.span_selection.resolve_overlaps`)."""

    name = "overlaps"
    summary = "keep the most probable of overlapping spans (above γ, or rescued)"
    reads = ("spans", "rescued")
    writes = ("kept",)
    required = True

    def run(self, batch: Batch) -> None:
        strong = batch.strong()
        weak = [s for s in batch.spans if id(s) in batch.rescued]
        batch.kept = resolve_overlaps(strong + weak) if weak else strong


@register
@dataclass(frozen=True)
class NameExtension(Step):
    """A kept span grows to the longest candidate around it scored above ``floor_score``
    that is an exact KB name of its type ("aggressive periodontitis" for "periodontitis":
    :func:`~e2e_linker.collective.span_selection.extend_to_names`)."""

    floor_score: float = 0.02

    name = "name_extension"
    summary = "grow a kept span to the longest KB name around it scored above `floor_score`"
    reads = ("kept", "candidates")
    writes = ("kept",)

    def floor(self, keep: float) -> float | None:
        return self.floor_score

    def run(self, batch: Batch) -> None:
        batch.kept = extend_to_names(batch.kept, batch.candidates, batch.docs,
                                     batch.linker.is_name, self.floor_score)


@register
@dataclass(frozen=True)
class LongForms(Step):
    """A ``long form (SF)`` definition that no kept span covers is decided through its long
    form: the long form is kept when it links (an exact name, a sieve match, or its vector's
    best concept of its type scored at least ``link_floor``) and the model scored it above
    ``with_short`` (an occurrence of the short form was kept) or ``alone`` (none was); a kept
    short form that is no KB name itself and whose long form links to nothing is dropped
    (:func:`~e2e_linker.collective.span_selection.keep_long_forms`). Short-form tagging and
    abbreviation links then give every occurrence of the short form its type and concept."""

    #: the defaults are the floors calibrated on the training splits (above 1: never;
    #: docs/decisions/0039-short-forms-through-long-forms.md)
    with_short: float = 0.15
    alone: float = 1.01
    link_floor: float = 20.0

    name = "long_forms"
    summary = ("decide a defined short form through its long form: keep a long form that "
               "links, scored above `with_short` (short form kept) or `alone`; drop a short "
               "form whose long form links to nothing above `link_floor`")
    reads = ("kept", "candidates", "abbreviations")
    writes = ("kept",)

    def floor(self, keep: float) -> float | None:
        return min(self.with_short, self.alone)

    def run(self, batch: Batch) -> None:
        batch.kept = keep_long_forms(
            batch.kept, batch.candidates, batch.docs, batch.abbreviations, self.with_short,
            self.alone, lambda span, text: batch.linker.links_above(span, text, self.link_floor),
            batch.linker.is_name)


@register
@dataclass(frozen=True)
class ShortForms(Step):
    """Every occurrence of a short form defined in the document whose long form a kept span
    covers is a span too, of that span's type
    (:func:`~e2e_linker.collective.span_selection.tag_short_forms`)."""

    name = "short_forms"
    summary = "tag each occurrence of a defined short form like its kept long form"
    reads = ("kept", "abbreviations")
    writes = ("kept",)

    def run(self, batch: Batch) -> None:
        batch.kept = tag_short_forms(batch.kept, batch.docs, batch.abbreviations)


@register
@dataclass(frozen=True)
class GeneAppositions(Step):
    """The name written right before a bracketed kept Gene span ("Psoriasin (S100A7)") is kept
    as a Gene span when the model scored it above ``floor_score``, with every other occurrence
    of its text (:func:`~e2e_linker.collective.gene_appositions.keep_gene_appositions`); the
    annotate step ``gene_apposition_links`` gives them the bracketed gene's concept."""

    floor_score: float = 0.02

    name = "gene_appositions"
    summary = ("keep the name written right before a bracketed Gene span (scored above "
               "`floor_score`) and its other occurrences, as Gene spans")
    reads = ("kept", "candidates", "abbreviations")
    writes = ("kept",)

    def floor(self, keep: float) -> float | None:
        return self.floor_score

    def run(self, batch: Batch) -> None:
        batch.kept = keep_gene_appositions(batch.kept, batch.candidates, batch.docs,
                                           batch.abbreviations, self.floor_score, GENE_TYPE)


@register
@dataclass(frozen=True)
class KeptRepeats(Step):
    """A candidate scored above ``floor_score`` whose text, case folded, a kept span of
    ``types`` has in the same document is kept too where no kept span touches it, with that
    span's type (:func:`~e2e_linker.collective.span_selection.keep_repeats`); declared after
    the steps that add spans, so that a repeat only fills text they left free. ``types``:
    "all", or a comma-separated list of types; the defaults (any score the model gives,
    chemicals and diseases) were chosen on the widened dev table
    (docs/decisions/0054-kept-repeats.md)."""

    floor_score: float = 0.001
    types: str = "Chemical,Disease"

    name = "kept_repeats"
    summary = ("keep a weaker repeat (score > `floor_score`) of a text kept in the document "
               "where nothing else is kept, of `types` (all, or a comma-separated list)")
    reads = ("kept", "candidates")
    writes = ("kept",)

    def __post_init__(self) -> None:
        type_set(self.name, self.types)

    def check_model_types(self, model_types: Sequence[str]) -> None:
        check_type_set(self, model_types)

    def floor(self, keep: float) -> float | None:
        return self.floor_score

    def run(self, batch: Batch) -> None:
        batch.kept = keep_repeats(batch.kept, batch.candidates, batch.docs, self.floor_score,
                                  type_set(self.name, self.types))
