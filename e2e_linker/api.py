"""The Python door to the linker: ``Linker.load()`` then ``linker("text")``.

Why a class of its own: ``linker annotate``, this API and the spaCy component must load and
run the same model the same way, so the command line obtains its annotator through
:meth:`Linker.load` too (one loading path, :func:`e2e_linker.collective.loading.load_annotator`)
and every door sees the same mentions at the same offsets. Offsets are Python string indices
(code points), so ``text[m.start:m.end] == m.text`` holds on accents, Greek letters and emoji.

Errors are the project's own (:class:`e2e_linker.errors.UserError`, :class:`FormatError`): the
command line prints them as one line, a Python caller can catch them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from data_tools.documents import Annotation, Document, Passage

if TYPE_CHECKING:
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.normalizer.normalizer import Normalizer

#: how detected spans are linked: the collective span vectors (the model's own dense step), or
#: the normalizer's text encoder and sieves on each span's text (issue 17's dev comparison:
#: eval/results/linking_ablation_fair)
LINKINGS = ("collective", "text")
#: the ``annotator`` infon that marks the annotations this linker predicted
ANNOTATOR = "e2e_linker"


@dataclass(frozen=True)
class Mention:
    """One linked mention. ``start``/``end`` index the string (or document text) it came from;
    ``concept_id`` is None when nothing was linked (several IDs are joined with ``|``);
    ``concept_name`` is the concept's preferred name in the KB, None when unknown;
    ``mention_score`` is None for mentions given to :meth:`Linker.normalize`."""

    start: int
    end: int
    text: str
    type: str
    concept_id: str | None
    concept_name: str | None
    mention_score: float | None
    link_score: float | None


def concept_name_in(kb: Any, concept_id: str | None) -> str | None:
    """The preferred name of ``concept_id`` in ``kb`` (a :class:`data_tools.kb.KB`); None for
    no KB, no ID, several IDs or an ID the KB does not hold."""
    if kb is None or not concept_id or "|" in concept_id:
        return None
    concept = kb.get(concept_id)
    return concept.name if concept is not None else None


def mention_of(annotation: Annotation, kb: Any = None) -> Mention:
    """An annotation as a :class:`Mention`, its concept named from ``kb`` when it can be."""
    concept_id = "|".join(annotation.concept_ids) or None
    return Mention(start=annotation.start, end=annotation.end, text=annotation.text,
                   type=annotation.type, concept_id=concept_id,
                   concept_name=concept_name_in(kb, concept_id),
                   mention_score=annotation.mention_score, link_score=annotation.link_score)


def text_document(text: str, doc_id: str = "text") -> Document:
    """``text`` as a one-passage document at offset 0, so document offsets are string offsets."""
    return Document(id=doc_id, passages=[Passage(offset=0, text=text)])


class Linker:
    """A loaded collective linker (detection + linking) and, on demand, the normalizer for
    mentions found elsewhere.

    Build it with :meth:`load` (the same options as ``linker annotate``), or wrap an
    :class:`Annotator` you already have with ``Linker(annotator)``.
    """

    def __init__(self, annotator: Annotator, *, normalizer_model: str | os.PathLike | None = None,
                 kb: str | None = None, device: str | None = None,
                 cache_dir: str | None = None):
        self.annotator = annotator
        self.normalizer_model = normalizer_model
        self._normalizer_kb_spec = kb
        self._device = device
        self._cache_dir = cache_dir
        self._normalizer: Normalizer | None = None

    @classmethod
    def load(cls, model_dir: str | os.PathLike | None = None, kb: str | None = None,
             device: str | None = None, threshold: float | None = None, batch_size: int = 16,
             mode: str = "collective", cache_dir: str | None = None, quantize: bool = False,
             index_kind: str = "auto", kb_memory_budget_mb: float | None = None,
             precision: str = "fp32",
             normalizer_model: str | os.PathLike | None = None,
             linking: str = "collective", sieves: bool = True,
             lexical_gate: float | None = None,
             propagation_threshold: float | None = None,
             short_forms: bool | None = None,
             dictionary_threshold: float | None = None) -> Linker:
        """The default model and KB, or the ones named: every option means what the
        ``linker annotate`` option of that name means. ``normalizer_model`` is the model
        :meth:`normalize` loads on its first call (default: the embedded normalizer);
        ``linking="text"`` loads it at once and links every detected span with it (its text
        encoder on the span's text and its sieves) instead of the collective span vectors; it
        then searches through the model's packed shortlist, for :meth:`normalize` too.
        ``sieves=False`` links a span the exact-name sieve misses by dense search alone,
        without the lexical steps of :class:`~e2e_linker.lexical.sieve_stack.SieveStack`;
        ``lexical_gate`` overrides the model's: the mention score a span that no lexical step
        links must reach to be kept (0 keeps every span, above 1 none);
        ``propagation_threshold`` and ``short_forms`` override the model's document-level
        detection: a weaker repeat of a detected surface form is kept above the former (1:
        off), and short forms defined in the document are tagged like their long forms;
        ``dictionary_threshold`` keeps a weaker span whose text is an exact KB name (1: off).

        The first load of a KB encodes its names (cached afterwards; see the README)."""
        from e2e_linker.collective.loading import DEFAULT_SIEVES, load_annotator

        if linking not in LINKINGS:  # before minutes of loading, not after
            raise ValueError(f"linking must be one of {LINKINGS}, not {linking!r}")

        annotator = load_annotator(model_dir, kb=kb, device=device, threshold=threshold,
                                   batch_size=batch_size, mode=mode, cache_dir=cache_dir,
                                   quantize=quantize, index_kind=index_kind,
                                   kb_memory_budget_mb=kb_memory_budget_mb, precision=precision,
                                   sieves=DEFAULT_SIEVES if sieves else None,
                                   lexical_gate=lexical_gate,
                                   propagation_threshold=propagation_threshold,
                                   short_forms=short_forms,
                                   dictionary_threshold=dictionary_threshold)
        linker = cls(annotator, normalizer_model=normalizer_model, kb=kb, device=device,
                     cache_dir=cache_dir)
        if linking == "text":
            # shortlists through the shipped packed index even with the full matrix cached:
            # an exact search over every ontology text per span would cost more than the
            # encoder pass that found the spans
            linker._normalizer = linker._load_normalizer(packed_always=True)
            annotator.text_linker = linker._normalizer
        return linker

    @property
    def kb(self) -> Any:
        """The KB the annotator links against (None when it was built without one)."""
        return self.annotator.kb

    def concept_name(self, concept_id: str | None) -> str | None:
        """The preferred name of a concept of the annotator's KB (None when unknown)."""
        return concept_name_in(self.kb, concept_id)

    def annotate(self, docs: Sequence[Document], replace: bool = False) -> list[Document]:
        """Copies of ``docs`` with the predicted annotations: ``linker annotate``'s transform."""
        return self.annotator.annotate(docs, replace=replace)

    def __call__(self, text: str) -> list[Mention]:
        """The mentions of one string, in offset order."""
        return next(self.pipe([text], batch_size=1))

    def mentions_of(self, doc: Document) -> list[Mention]:
        """The mentions this linker predicted in an annotated document."""
        return [mention_of(a, self.kb) for a in doc.annotations
                if a.infons.get("annotator") == ANNOTATOR]

    def pipe(self, items: Iterable[str | Document], batch_size: int = 64
             ) -> Iterator[list[Mention]]:
        """The mentions of each string or :class:`Document`, in input order, lazily:
        ``batch_size`` items are read and annotated at a time, so a long stream is never held
        in memory. A document's old annotations are ignored (and left untouched)."""
        if batch_size < 1:
            from e2e_linker.errors import UserError

            raise UserError("batch_size must be at least 1")
        iterator = iter(items)
        counter = itertools.count()
        while True:
            block = list(itertools.islice(iterator, batch_size))
            if not block:
                return
            docs = [self._as_document(item, next(counter)) for item in block]
            for doc in self.annotator.annotate(docs, replace=True):
                yield self.mentions_of(doc)

    @staticmethod
    def _as_document(item: str | Document, number: int) -> Document:
        if isinstance(item, Document):
            return item
        if isinstance(item, str):
            return text_document(item, f"text-{number}")
        from e2e_linker.errors import UserError

        raise UserError(f"expected a str or a Document, not {type(item).__name__}")

    # -- pre-extracted mentions ------------------------------------------------------------
    @property
    def normalizer(self) -> Normalizer:
        """The text-only normalizer, loaded on first use (it is a second model)."""
        if self._normalizer is None:
            self._normalizer = self._load_normalizer()
        return self._normalizer

    def _load_normalizer(self, packed_always: bool = False) -> Normalizer:
        from e2e_linker.collective.model_kb import assemble_kb
        from e2e_linker.errors import UserError
        from e2e_linker.normalizer.model_dir import load_model, model_mentions_of, packed_index_of
        from e2e_linker.normalizer.normalizer import DEFAULT_MODE, NormalizeOptions, Normalizer

        encoder, settings = load_model(self.normalizer_model, device=self._device)
        spec = self._normalizer_kb_spec or settings.kb
        if not spec:
            raise UserError("the normalizer model records no KB; pass kb=")
        options = NormalizeOptions(mode=settings.search or DEFAULT_MODE,
                                   lowercase=settings.lowercase,
                                   punctuation=settings.punctuation)
        return Normalizer(encoder, assemble_kb(spec), None, options, self._cache_dir,
                          mentions=model_mentions_of(self.normalizer_model),
                          packed=packed_index_of(self.normalizer_model),
                          packed_always=packed_always and packed_index_of(
                              self.normalizer_model) is not None)

    def normalize(self, mentions: Iterable[str | tuple[str, str]]) -> list[Mention]:
        """Link mentions found elsewhere, given as ``(text, type)`` pairs (or bare texts,
        untyped), with the normalizer (``linker normalize``'s engine and default model).

        Each mention is normalized as its own one-mention document, so mentions of unrelated
        texts never define abbreviations for each other; results come back in input order with
        ``start=0``, ``end=len(text)`` and no ``mention_score``."""
        docs = []
        for number, item in enumerate(mentions):
            text, type_ = (item, "") if isinstance(item, str) else item
            doc = text_document(text, f"mention-{number}")
            doc.passages[0].annotations.append(Annotation(start=0, end=len(text), text=text,
                                                          type=type_, id="m0"))
            docs.append(doc)
        if not docs:
            return []
        normalizer = self.normalizer
        return [mention_of(doc.annotations[0], normalizer.kb)
                for doc in normalizer.normalize(docs)]
