"""``nlp.add_pipe("e2e_linker")``: the linker as a spaCy pipeline component.

Why: spaCy pipelines expect entities in ``doc.ents``; this component puts the linker's
mentions there, so the rest of a spaCy pipeline (and displaCy) sees them. Each entity has
``label_`` = the mention type, ``kb_id_`` = the concept ID, namespaced (``MESH:D013629``,
``NCBIGene:672``; "" when unlinked; a composite mention's first part), and the extension
attributes ``ent._.concept_ids`` (every ID: a composite's parts; ``[]`` when unlinked),
``ent._.mention_score``, ``ent._.link_score``, ``ent._.confidence`` (in [0, 1]: how likely
span, type and concept are all right; :mod:`e2e_linker.collective.confidence`),
``ent._.concept_name``, ``ent._.kb_ents`` (the ranked candidates, as scispacy gives them:
:func:`ranked_candidates`) and, for a gene,
``ent._.species`` (``NCBITaxon:9606``) and ``ent._.species_name``. Mentions
are character spans; each becomes the smallest token span that covers it
(``alignment_mode="expand"``) and overlapping spans are resolved by
:func:`spacy.util.filter_spans` (the longest wins). Existing ``doc.ents`` are replaced.

The factory is registered under spaCy's ``spacy_factories`` entry point, so
``spacy.blank("en").add_pipe("e2e_linker")`` works without importing this module; the model
is loaded once, when the component is built (``Linker.load``, the same options as
``linker annotate``, with ``explain`` on: the ranking ``kb_ents`` lists). Needs the ``spacy``
extra: ``pip install 'e2e-linker[spacy]'``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

from e2e_linker.api import Linker, Mention

#: the :class:`~e2e_linker.api.Mention` fields every entity span carries as extensions
MENTION_FIELDS = ("mention_score", "link_score", "confidence", "concept_name", "species",
                  "species_name")
#: extension attributes set on every entity span
EXTENSIONS = ("concept_ids", "kb_ents", *MENTION_FIELDS)


def ranked_candidates(mention: Mention) -> list[tuple[str, float]]:
    """scispacy's ``kb_ents`` for ``mention``: ``(namespaced concept ID, confidence)`` pairs,
    best first, each confidence in [0, 1].

    First the concept the linker chose (each part of a composite) with the mention's
    ``confidence``, the linker's calibrated estimate that it is right. Then the other concepts
    of the ranking it chose from (:attr:`Mention.candidates <e2e_linker.api.Mention>`, the
    annotation's explanation: only a linker that explains has them) share what is left,
    1 − confidence, as the dense model's softmax over their scores weighs them (it is trained
    as a softmax over these scores: ``linking_ce`` in
    :mod:`e2e_linker.training.collective_losses`; a ranking by names alone has no scores, so
    its concepts share equally), none above the chosen concept. That share is an upper
    estimate: what is left also covers a wrong span or type. A mention with no concept, or
    without a confidence (one the linker did not make), lists none."""
    if not mention.concept_id or mention.confidence is None:
        return []
    confidence = mention.confidence
    chosen = mention.concept_id.split("|")
    others = [(cid, score) for cid, score in mention.candidates if cid not in chosen]
    if any(score is None for _, score in others):
        weights = [1.0] * len(others)
    else:
        top = max((score for _, score in others), default=0.0)
        weights = [math.exp(score - top) for _, score in others]
    total = sum(weights)
    shared = [(cid, round(min(confidence, (1.0 - confidence) * w / total), 4))
              for (cid, _), w in zip(others, weights, strict=True)]
    shared.sort(key=lambda pair: -pair[1])
    return [(cid, confidence) for cid in chosen] + shared


def register_extensions() -> None:
    """Declare the ``Span`` extensions (once per process; spaCy keeps them globally)."""
    for name in EXTENSIONS:
        if not Span.has_extension(name):
            Span.set_extension(name, default=None)


class LinkerComponent:
    """Fills ``doc.ents`` from a :class:`Linker`; see the module docstring."""

    def __init__(self, linker: Linker, batch_size: int = 64):
        register_extensions()
        self.linker = linker
        self.batch_size = batch_size

    def __call__(self, doc: Doc) -> Doc:
        return self.set_entities(doc, self.linker(doc.text))

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        """Annotate ``batch_size`` docs per linker batch (what ``nlp.pipe`` calls)."""
        size = batch_size or self.batch_size
        pending: list[Doc] = []

        def texts() -> Iterator[str]:
            for doc in docs:
                pending.append(doc)
                yield doc.text

        for mentions in self.linker.pipe(texts(), batch_size=size):
            yield self.set_entities(pending.pop(0), mentions)

    @staticmethod
    def set_entities(doc: Doc, mentions: list[Mention]) -> Doc:
        """``doc`` with its entities replaced by ``mentions`` (token-aligned, no overlaps)."""
        spans = []
        for mention in mentions:
            ids = mention.concept_id.split("|") if mention.concept_id else []
            span = doc.char_span(mention.start, mention.end, label=mention.type or "ENTITY",
                                 kb_id=ids[0] if ids else "", alignment_mode="expand")
            if span is None:  # only whitespace: no token to hold it
                continue
            span._.concept_ids = ids
            span._.kb_ents = ranked_candidates(mention)
            for name in MENTION_FIELDS:
                setattr(span._, name, getattr(mention, name))
            spans.append(span)
        # set on the kept spans themselves: doc.ents keeps label and kb_id, not extensions
        kept = filter_spans(spans)
        doc.ents = kept
        for span, ent in zip(kept, doc.ents, strict=True):
            for name in EXTENSIONS:
                setattr(ent._, name, getattr(span._, name))
        return doc


@Language.factory("e2e_linker", default_config={
    "model_dir": None, "kb": None, "threshold": None, "device": None, "batch_size": 64,
    "cache_dir": None})
def make_component(nlp: Language, name: str, model_dir: str | None, kb: str | None,
                   threshold: float | None, device: str | None, batch_size: int,
                   cache_dir: str | None) -> LinkerComponent:
    """Build the component: the linker is loaded here, once (the default model without
    ``model_dir``). ``batch_size`` is how many texts go through the linker at a time."""
    linker = Linker.load(model_dir, kb=kb, device=device, threshold=threshold,
                         cache_dir=cache_dir, explain=True)
    return LinkerComponent(linker, batch_size=batch_size)
