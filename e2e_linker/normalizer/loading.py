"""One way to assemble a :class:`Normalizer` from a model directory, for ``linker normalize``
and :class:`e2e_linker.api.Linker` alike (they used to build it twice, with two policies for a
KB that differs from the model's)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from e2e_linker.errors import UserError
from e2e_linker.normalizer.normalizer import DEFAULT_MODE, NormalizeOptions, Normalizer

#: ``--index`` choices for the ontology search
INDEX_KINDS = ("auto", "exact", "packed")


def load_normalizer(model: str | os.PathLike | None = None, kb: str | None = None,
                    device: str | None = None, cache_dir: str | None = None,
                    options: dict | None = None, train_mentions: Sequence[str] = (),
                    model_mentions: bool = True, extra_synonyms: str | None = None,
                    index_kind: str = "auto", packed_always: bool = False,
                    note: Callable[[str], None] | None = None) -> Normalizer:
    """The normalizer of ``model`` (default: the embedded one) over its KB, or ``kb``.

    ``options`` are :class:`NormalizeOptions` fields (``mode`` defaults to the model's search
    mode); the D pool comes from ``train_mentions`` corpora when given, else from the model's
    saved mentions (``model_mentions``), both built the same way
    (:func:`~e2e_linker.normalizer.pools.mention_pool`). A KB whose content differs from the
    one the model records is an error unless ``kb`` names it, as for ``linker annotate``.
    ``index_kind`` ``exact`` ignores the model's packed index, ``packed`` requires it;
    ``packed_always`` shortlists through it even when every ontology text is cached. ``note``
    receives one-line remarks for the user.
    """
    from data_tools.registry import load_corpus
    from e2e_linker.collective.model_kb import open_kb
    from e2e_linker.console import say
    from e2e_linker.kb_search.concept_search import mode_requires
    from e2e_linker.normalizer.normalizer_dir import (
        load_model,
        model_mentions_of,
        packed_index_of,
        read_synonyms,
    )

    if index_kind not in INDEX_KINDS:
        raise UserError(f"index kind must be one of {', '.join(INDEX_KINDS)}, not {index_kind}")
    encoder, settings = load_model(model, device=device)
    spec = kb or settings.kb
    if not spec:
        raise UserError("the normalizer model records no KB; pass --kb")
    # the first normalize call of a process pays this load; on a machine that never compiled
    # the KB it takes a minute or more, so a person watching is told why it waits
    say(f"loading the normalizer over KB '{spec}' (its first use on this machine compiles "
        "the KB and encodes its mentions: a minute or two, cached afterwards)...")
    knowledge = open_kb(spec, cache_dir=cache_dir, sieves=False)  # it folds its own texts
    if kb is None and settings.kb_hash and knowledge.content_hash() != settings.kb_hash:
        raise UserError(
            f"KB '{spec}' on this machine differs from the one the normalizer was built with "
            f"(hash {knowledge.content_hash()[:12]} != {settings.kb_hash[:12]}); pass --kb "
            "explicitly to use it anyway")
    chosen = dict(options or {})
    chosen.setdefault("mode", settings.search or DEFAULT_MODE)
    normalize_options = NormalizeOptions(lowercase=settings.lowercase,
                                         punctuation=settings.punctuation, **chosen)
    training = [d for corpus in train_mentions for d in load_corpus(corpus)] or None
    saved = model_mentions_of(model) if training is None and model_mentions else None
    if note is not None and training is None and saved is None and any(
            source == "D" for source, _ in mode_requires(normalize_options.mode)):
        note(f"note: --search {normalize_options.mode} uses training mentions (D) but no "
             "--train-mentions was given; D searches find nothing and sieves fall through")
    packed = None if index_kind == "exact" else packed_index_of(model)
    if index_kind == "packed" and packed is None:
        raise UserError("--index packed: the model has no packed KB index; "
                        "`linker kb pack --normalizer` writes one")
    synonyms = read_synonyms(extra_synonyms) if extra_synonyms else ()
    return Normalizer(encoder, knowledge, training, normalize_options, cache_dir, synonyms,
                      saved, packed,
                      packed_always=(index_kind == "packed" or packed_always)
                      and packed is not None)
