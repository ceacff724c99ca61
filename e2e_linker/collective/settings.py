"""Everything ``linker annotate`` and ``Linker.load()`` can be told, as one value.

Why one object: the options used to travel as two dozen positional and keyword parameters
through the command, ``Linker.load``, ``load_annotator`` and ``Annotator.__init__``, and were
gathered again by hand for a shard directory's manifest. Now the command builds one
:class:`AnnotateSettings`, :meth:`AnnotateSettings.for_model` fills what was left to the model
(γ, the lexical gate, the document-level steps) once, the annotator keeps the result, and the
manifest records ``asdict`` of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from e2e_linker.errors import UserError
from e2e_linker.pipeline.declaration import Pipeline, check_changes

#: how spans are encoded: one pass per chunk, or the paper's per-mention baseline
MODES = ("collective", "per-mention")
#: how detected spans are linked: the collective span vectors (the model's own dense step), or
#: the normalizer's text encoder and sieves on each span's text (issue 17's dev comparison:
#: docs/decisions/0018-sieve-stack.md)
LINKINGS = ("collective", "text")
#: the settings the model's config supplies when they are left unset (None)
MODEL_DEFAULTS = ("threshold", "max_span_len", "lexical_types")


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
    lexical_types: tuple[str, ...] | None = None
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
    #: the pipeline declaration: a name the model ships (``bc5cdr``: its
    #: ``pipeline.bc5cdr.toml``) or a TOML file (None: the model directory's
    #: ``pipeline.toml``, or the one its config implies) — :mod:`e2e_linker.pipeline.declaration`
    pipeline: str | None = None
    #: steps left out of, and added to, the declared pipeline (``--disable a,b``,
    #: ``--enable c``), and parameters set (``--set step.param=value``, each one string)
    disable: tuple[str, ...] = ()
    enable: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        if self.linking not in LINKINGS:  # before minutes of loading, not after
            raise ValueError(f"linking must be one of {LINKINGS}, not {self.linking!r}")
        for name in ("disable", "enable", "overrides"):
            value = getattr(self, name) or ()
            if isinstance(value, str):  # "a,b" as --disable writes it; one --set string
                value = (value,) if name == "overrides" else tuple(
                    n.strip() for n in value.split(",") if n.strip())
            object.__setattr__(self, name, tuple(value))
        check_changes(self.disable, self.enable, self.overrides)  # before minutes of loading
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

    def resolved_pipeline(self, config, directory: str | os.PathLike | None) -> Pipeline:
        """The pipeline these settings run with a model of ``config`` from ``directory``:
        :attr:`pipeline`'s file, or the model's declaration, with :attr:`disable`,
        :attr:`enable` and :attr:`overrides` applied."""
        declared = Pipeline.chosen(self.pipeline, directory, config)
        return declared.changed(self.disable, self.enable, self.overrides)
