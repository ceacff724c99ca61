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
from data_tools.formats.mentions_jsonl import ANNOTATOR
from e2e_linker.collective.settings import AnnotateSettings

if TYPE_CHECKING:
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.normalizer.normalizer import Normalizer



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

    def __init__(self, annotator: Annotator, normalizer: Normalizer | None = None):
        self.annotator = annotator
        self._normalizer = normalizer

    @classmethod
    def load(cls, model_dir: str | os.PathLike | None = None,
             settings: AnnotateSettings | None = None, **options: Any) -> Linker:
        """The default model and KB, or the ones named. ``options`` are
        :class:`~e2e_linker.collective.settings.AnnotateSettings` fields, each meaning what the
        ``linker annotate`` option of that name means (``kb``, ``device``, ``threshold``,
        ``batch_size``, ``cache_dir``, ``index_kind``, ...; the pipeline's steps changed with
        ``disable=("lexical_gate",)`` and ``overrides=("propagation.threshold=0.3",)``), or
        one ``settings`` value with all of them. ``normalizer_model`` is the model
        :meth:`normalize` loads on its first call (default: the embedded normalizer);
        ``linking="text"`` loads it at once and links every detected span with it (its text
        encoder on the span's text and its sieves) instead of the collective span vectors; it
        then searches through the model's packed shortlist, for :meth:`normalize` too.

        The first load of a KB encodes its names (cached afterwards; see the README)."""
        from e2e_linker.collective.loading import load_annotator

        if settings is None:
            settings = AnnotateSettings(model_dir=None if model_dir is None else str(model_dir),
                                        **options)
        elif options or model_dir is not None:
            raise TypeError("pass either settings or options, not both")
        normalizer = None
        if settings.linking == "text":
            # shortlists through the shipped packed index even with the full matrix cached:
            # an exact search over every ontology text per span would cost more than the
            # encoder pass that found the spans
            normalizer = load_normalizer_for(settings, packed_always=True)
        annotator = load_annotator(settings, text_linker=normalizer)
        return cls(annotator, normalizer)

    @property
    def pipe_names(self) -> list[str]:
        """The steps this linker runs after the model scores spans, in order (``linker
        pipeline show`` says what each does)."""
        return self.annotator.pipeline.names

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
        in memory. A document's old annotations are ignored (and left untouched).

        ``items`` is checked at once, not at the first result: a str is one text, so
        ``pipe("text")`` raises :class:`~e2e_linker.errors.UserError` (pass ``[text]``, or
        call the linker). An item that is neither a str nor a Document raises ``UserError``
        naming its position (``pipe item 3: ...``, counted from 0 over the whole stream), and
        an item the annotator fails on raises :class:`~e2e_linker.errors.DocumentFailed`
        naming its position and the error (the original is its ``__cause__``)."""
        from e2e_linker.errors import UserError

        if isinstance(items, (str, bytes)):
            raise UserError("pipe() takes an iterable of texts or Documents, and a str is one "
                            "text: pass [text] (or call the linker on it)")
        if isinstance(items, Document):
            raise UserError("pipe() takes an iterable of texts or Documents: pass [document]")
        if batch_size < 1:
            raise UserError("batch_size must be at least 1")
        try:
            iterator = iter(items)
        except TypeError:
            raise UserError("pipe() takes an iterable of texts or Documents, not "
                            f"{type(items).__name__}") from None
        return self._stream(iterator, batch_size)

    def _stream(self, iterator: Iterator[str | Document], batch_size: int
                ) -> Iterator[list[Mention]]:
        """:meth:`pipe`'s generator: blocks of ``batch_size`` items, each annotated at once."""
        first = 0
        while True:
            block = list(itertools.islice(iterator, batch_size))
            if not block:
                return
            docs = [self._as_document(item, first + i) for i, item in enumerate(block)]
            for doc in self._annotate_block(docs, first):
                yield self.mentions_of(doc)
            first += len(block)

    def _annotate_block(self, docs: list[Document], first: int) -> list[Document]:
        """``docs`` (items ``first``... of the stream) annotated; when that fails, the item
        that fails alone is named (the block's own error is raised if none does)."""
        from e2e_linker.errors import DocumentFailed, UserError

        try:
            return self.annotator.annotate(docs, replace=True)
        except UserError:
            raise
        except Exception:
            for number, doc in enumerate(docs, first):
                try:
                    self.annotator.annotate([doc], replace=True)
                except Exception as alone:  # noqa: BLE001 - named, then raised with its cause
                    message = f"{type(alone).__name__}: {alone}".splitlines()[0]
                    raise DocumentFailed(f"pipe item {number} (document {doc.id}): "
                                         f"{message}") from alone
            raise

    @staticmethod
    def _as_document(item: str | Document, number: int) -> Document:
        if isinstance(item, Document):
            return item
        if isinstance(item, str):
            return text_document(item, f"text-{number}")
        from e2e_linker.errors import UserError

        raise UserError(f"pipe item {number}: expected a str or a Document, not "
                        f"{type(item).__name__}")

    # -- pre-extracted mentions ------------------------------------------------------------
    @property
    def normalizer(self) -> Normalizer:
        """The text-only normalizer, loaded on first use (it is a second model)."""
        if self._normalizer is None:
            self._normalizer = load_normalizer_for(self.annotator.settings)
        return self._normalizer

    def normalize(self, mentions: Iterable[str | tuple[str] | tuple[str, str | None]]
                  ) -> list[Mention]:
        """Link mentions found elsewhere, given as ``(text, type)`` pairs, with the normalizer
        (``linker normalize``'s engine and default model). The type is optional: a bare text,
        a ``(text,)`` tuple or a ``None`` type is an untyped mention (type ``""``), searched
        against every concept instead of those of its type.

        Each mention is normalized as its own one-mention document, so mentions of unrelated
        texts never define abbreviations for each other; results come back in input order with
        ``start=0``, ``end=len(text)`` and no ``mention_score``. Every item is checked before
        the normalizer loads: a bad one raises :class:`~e2e_linker.errors.UserError` naming
        its position (``normalize item 2: ...``, from 0), and so does a bare str in place of
        the list (one mention: pass ``[text]``)."""
        if isinstance(mentions, (str, bytes)):
            from e2e_linker.errors import UserError

            raise UserError("normalize() takes an iterable of mentions, and a str is one "
                            "mention: pass [text] or [(text, type)]")
        docs = []
        for number, item in enumerate(mentions):
            text, type_ = _mention_item(item, number)
            doc = text_document(text, f"mention-{number}")
            doc.passages[0].annotations.append(Annotation(start=0, end=len(text), text=text,
                                                          type=type_, id="m0"))
            docs.append(doc)
        if not docs:
            return []
        normalizer = self.normalizer
        return [mention_of(doc.annotations[0], normalizer.kb)
                for doc in normalizer.normalize(docs)]


def _mention_item(item: Any, number: int) -> tuple[str, str]:
    """One item of :meth:`Linker.normalize` as ``(text, type)``, or a ``UserError`` naming it."""
    from e2e_linker.errors import UserError

    if isinstance(item, str):
        text, type_ = item, None
    elif isinstance(item, (tuple, list)) and len(item) in (1, 2):
        text, type_ = item[0], item[1] if len(item) == 2 else None
    else:
        shown = repr(item) if len(repr(item)) <= 60 else f"a {type(item).__name__}"
        raise UserError(f"normalize item {number}: expected a text or a (text, type) pair, not "
                        f"{shown}")
    if not isinstance(text, str):
        raise UserError(f"normalize item {number}: the text must be a str, not "
                        f"{type(text).__name__}")
    if not text.strip():
        raise UserError(f"normalize item {number}: the text is empty")
    if type_ is not None and not isinstance(type_, str):
        raise UserError(f"normalize item {number}: the type must be a str (or None), not "
                        f"{type(type_).__name__}")
    return text, type_ or ""


def load_normalizer_for(settings: AnnotateSettings, packed_always: bool = False) -> Normalizer:
    """The normalizer an annotate run's settings name (their ``normalizer_model``, ``kb``,
    ``device`` and ``cache_dir``), loaded by the one normalizer loader."""
    from e2e_linker.normalizer.loading import load_normalizer

    return load_normalizer(settings.normalizer_model, settings.kb, settings.device,
                           settings.cache_dir, packed_always=packed_always)
