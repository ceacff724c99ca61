"""Everything ``linker annotate`` and ``Linker.load()`` can be told, as one value.

Why one object: the options used to travel as two dozen positional and keyword parameters
through the command, ``Linker.load``, ``load_annotator`` and ``Annotator.__init__``, and were
gathered again by hand for a shard directory's manifest. Now the command builds one
:class:`AnnotateSettings`, :meth:`AnnotateSettings.for_model` fills what was left to the model
(γ, the lexical gate, the document-level steps) once, the annotator keeps the result, and the
manifest records ``asdict`` of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from e2e_linker.collective.concept_types import ConceptTypeRules
from e2e_linker.collective.gene_context import GeneContextRule
from e2e_linker.collective.sequence_context import SequenceContextRule
from e2e_linker.collective.short_form_rules import ShortFormRules
from e2e_linker.collective.span_selection import SelectionRules
from e2e_linker.errors import UserError

#: how spans are encoded: one pass per chunk, or the paper's per-mention baseline
MODES = ("collective", "per-mention")
#: how detected spans are linked: the collective span vectors (the model's own dense step), or
#: the normalizer's text encoder and sieves on each span's text (issue 17's dev comparison:
#: eval/results/linking_ablation_fair)
LINKINGS = ("collective", "text")
#: what happens to a gene mention linked to genes of a species its document does not name
UNNAMED_SPECIES_CHOICES = ("drop", "keep")
#: the ``annotator`` infon that marks the annotations this linker predicted
ANNOTATOR = "e2e_linker"
#: the score a longer KB name around a kept span must pass to replace it (chosen on the dev
#: table: eval/results/name_extension)
NAME_EXTENSION = 0.02
#: the settings the model's config supplies when they are left unset (None)
MODEL_DEFAULTS = ("threshold", "lexical_gate", "propagation_threshold", "dictionary_threshold",
                  "short_forms", "max_span_len", "lexical_types")


def type_list(text: str) -> tuple[str, ...]:
    """``"Chemical, Disease"`` → ``("Chemical", "Disease")``: a list of types as an option
    writes it."""
    return tuple(t.strip() for t in text.split(",") if t.strip())


@dataclass(frozen=True)
class AnnotateSettings:
    """The options of ``linker annotate`` (each documented in its ``--help``), by the names
    ``Linker.load`` takes. ``None`` in a :data:`MODEL_DEFAULTS` field means "the model's"
    until :meth:`for_model` fills it; after that, ``None`` means off."""

    model_dir: str | None = None
    kb: str | None = None
    device: str | None = None
    threshold: float | None = None
    #: the longest span scored, in word pieces (the span score has no width term, so it may
    #: exceed the length the model was trained with: "Schwartz-Jampel chondrodystrophic
    #: myotonia" is 13); None: the model's config's
    max_span_len: int | None = None
    batch_size: int = 16
    max_batch_tokens: int = 16384
    mode: str = "collective"
    cache_dir: str | None = None
    quantize: bool = False
    index_kind: str = "auto"
    kb_memory_budget_mb: float | None = None
    precision: str = "fp32"
    linking: str = "collective"
    #: the normalizer's lexical steps after the exact-name sieve (off: dense search alone)
    sieves: bool = True
    #: a span that no exact name or sieve links as a whole is linked to its parts' concepts
    #: when every part is one ("breast or ovarian cancer") —
    #: :meth:`e2e_linker.collective.span_linking.SpanLinker.composite_ids`
    composites: bool = True
    #: types linked by their names only, their KB names not encoded (None: the model's
    #: :attr:`~e2e_linker.collective.model.LinkerConfig.lexical_types`; ``()``: none)
    lexical_types: tuple[str, ...] | None = None
    lexical_gate: float | None = None
    propagation_threshold: float | None = None
    dictionary_threshold: float | None = None
    short_forms: bool | None = None
    #: a kept span grows to the longest candidate around it scored above this that is an
    #: exact KB name of its type ("aggressive periodontitis" for "periodontitis"); None or
    #: above 1: off — :func:`e2e_linker.collective.span_selection.extend_to_names` (the value:
    #: eval/results/name_extension)
    name_extension: float | None = NAME_EXTENSION
    #: the normalizer :meth:`e2e_linker.api.Linker.normalize` (and ``linking="text"``) loads
    normalizer_model: str | None = None
    #: tokens around a mention in ``mode="per-mention"``
    context_window: int = 128
    #: the mention types written out (None: every type the model predicts), e.g.
    #: ``("Chemical", "Disease")`` for a model that also finds genes
    types: tuple[str, ...] | None = None
    #: each annotation also carries why it got its concept: its top dense candidates with
    #: scores beside the deciding step (``--explain``; off: the output is unchanged)
    explain: bool = False
    #: a span linked to a concept of the other type takes the concept's type, and a Chemical
    #: linked to a protein or enzyme (MeSH gene product) is dropped ("keep": kept) —
    #: :mod:`e2e_linker.collective.concept_types`
    type_from_concept: bool = True
    gene_products: str = "drop"
    #: with a model that finds genes, a Chemical span whose text names a gene and no chemical
    #: but gene products becomes a Gene span before the lexical gate —
    #: :meth:`e2e_linker.collective.span_linking.SpanLinker.gene_named_chemicals`
    gene_named_chemicals: bool = True
    #: a short form the document defines, linked by its letters to a concept none of whose
    #: names shares a word with the long form, is dropped ("keep": kept); an all-capital span
    #: of at most ``undefined_short_max`` characters (0: off) that the document does not
    #: define, linked by an exact name, is dropped —
    #: :mod:`e2e_linker.collective.short_form_rules`
    redefined_short_forms: str = "drop"
    undefined_short_max: int = 0
    #: a span whose text the document defines as a gene or protein ("von Hippel-Lindau tumor
    #: suppressor gene (VHL)") is dropped ("keep": kept) — the same module
    gene_short_forms: str = "drop"
    #: a Disease written like a gene symbol ("RB1", "IDDM2") that the document does not define
    #: is dropped ("keep": kept) — the same module
    disease_symbols: str = "drop"
    #: a Chemical named as a residue or base of a sequence ("arginine residue", "tryptophan to
    #: arginine substitution") or naming a sequence element itself ("stop codon", an
    #: undefined "SNP") is dropped ("keep": kept) —
    #: :mod:`e2e_linker.collective.sequence_context`
    sequence_residues: str = "drop"
    #: a name used as part of a gene's or protein's name ("creatine kinase", "thyrotropin
    #: receptor", "retinoblastoma (Rb) gene") is dropped: "drop" Chemical and Disease spans,
    #: "chemicals" Chemical spans only, "keep" none (the default: BC5CDR's guideline annotates
    #: these chemicals) — :mod:`e2e_linker.collective.gene_context`
    gene_modifiers: str = "keep"
    #: a span of a name-only type linked to fly or yeast genes only, in a document that
    #: names neither species, is dropped ("keep": kept) —
    #: :meth:`e2e_linker.collective.gene_ranking.GeneRanking.of_unnamed_species`
    unnamed_species: str = "drop"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        if self.linking not in LINKINGS:  # before minutes of loading, not after
            raise ValueError(f"linking must be one of {LINKINGS}, not {self.linking!r}")
        self.type_rules()  # a bad gene_products fails here, before minutes of loading
        if self.undefined_short_max != int(self.undefined_short_max):
            raise ValueError("undefined_short_max must be a whole number")
        object.__setattr__(self, "undefined_short_max", int(self.undefined_short_max))
        self.short_form_rules()  # a bad redefined_short_forms fails here too
        self.sequence_rule()
        self.gene_rule()
        if self.unnamed_species not in UNNAMED_SPECIES_CHOICES:
            raise ValueError(f"unnamed_species must be one of {UNNAMED_SPECIES_CHOICES}, "
                             f"not {self.unnamed_species!r}")
        if self.name_extension is not None and self.name_extension > 1:
            object.__setattr__(self, "name_extension", None)  # --name-extension 1.01: off
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self.max_span_len is not None and self.max_span_len < 1:
            raise ValueError("max_span_len must be at least 1")
        if isinstance(self.types, str):  # "Chemical,Disease", as --types writes it
            object.__setattr__(self, "types", type_list(self.types) or None)
        elif self.types is not None:
            object.__setattr__(self, "types", tuple(self.types))
        if isinstance(self.lexical_types, str):  # "Gene"; "" for none
            object.__setattr__(self, "lexical_types", type_list(self.lexical_types))
        elif self.lexical_types is not None:
            object.__setattr__(self, "lexical_types", tuple(self.lexical_types))

    def for_model(self, config) -> AnnotateSettings:
        """These settings with every :data:`MODEL_DEFAULTS` field left unset taken from
        ``config`` (a :class:`~e2e_linker.collective.model.LinkerConfig`)."""
        # (replace runs __post_init__ again: the config's list of lexical types becomes a tuple)
        resolved = replace(self, **{name: getattr(config, name) for name in MODEL_DEFAULTS
                                    if getattr(self, name) is None})
        for option, chosen in (("--types", resolved.types or ()),
                               ("--lexical-types", resolved.lexical_types)):
            unknown = sorted(set(chosen) - set(config.types))
            if unknown:
                raise UserError(f"{option} {','.join(unknown)}: the model predicts "
                                f"{', '.join(config.types)}")
        # a chunk must hold an owned span plus the overlap (collective/chunking.py), checked
        # here rather than when the first document is cut
        longest = config.max_length - 3 - config.chunk_overlap
        if resolved.max_span_len > longest:
            raise UserError(f"--max-span-len {resolved.max_span_len}: the model's chunks of "
                            f"{config.max_length} tokens hold spans of at most {longest}")
        return resolved

    def type_rules(self) -> ConceptTypeRules:
        """The type rules these settings ask for."""
        return ConceptTypeRules(self.type_from_concept, self.gene_products)

    def short_form_rules(self) -> ShortFormRules:
        """The short-form rules these settings ask for."""
        return ShortFormRules(self.redefined_short_forms, self.undefined_short_max,
                              self.gene_short_forms, self.disease_symbols)

    def sequence_rule(self) -> SequenceContextRule:
        """The sequence-residue rule these settings ask for."""
        return SequenceContextRule(self.sequence_residues)

    def gene_rule(self) -> GeneContextRule:
        """The gene-modifier rule these settings ask for."""
        return GeneContextRule(self.gene_modifiers)

    def selection_rules(self, keep: float | None = None) -> SelectionRules:
        """The selection these settings ask for, with ``keep`` (default: the threshold)."""
        return SelectionRules(self.threshold if keep is None else keep, self.lexical_gate,
                              bool(self.short_forms), self.propagation_threshold,
                              self.dictionary_threshold, self.name_extension)
