"""``nlp.add_pipe("e2e_linker")``: the linker as a spaCy pipeline component.

Why: spaCy pipelines expect entities in ``doc.ents``; this component puts the linker's
mentions there, so the rest of a spaCy pipeline (and displaCy) sees them. Each entity has
``label_`` = the mention type, ``kb_id_`` = the concept ID ("" when unlinked) and the extension
attributes ``ent._.mention_score``, ``ent._.link_score`` and ``ent._.concept_name``. Mentions
are character spans; each becomes the smallest token span that covers it
(``alignment_mode="expand"``) and overlapping spans are resolved by
:func:`spacy.util.filter_spans` (the longest wins). Existing ``doc.ents`` are replaced.

The factory is registered under spaCy's ``spacy_factories`` entry point, so
``spacy.blank("en").add_pipe("e2e_linker")`` works without importing this module; the model
is loaded once, when the component is built (``Linker.load``, the same options as
``linker annotate``). Needs the ``spacy`` extra: ``pip install 'e2e-linker[spacy]'``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

from e2e_linker.api import Linker, Mention

#: extension attributes set on every entity span
EXTENSIONS = ("mention_score", "link_score", "concept_name")


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
            span = doc.char_span(mention.start, mention.end, label=mention.type or "ENTITY",
                                 kb_id=mention.concept_id or "", alignment_mode="expand")
            if span is None:  # only whitespace: no token to hold it
                continue
            span._.mention_score = mention.mention_score
            span._.link_score = mention.link_score
            span._.concept_name = mention.concept_name
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
                         cache_dir=cache_dir)
    return LinkerComponent(linker, batch_size=batch_size)
