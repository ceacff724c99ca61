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
from data_tools.formats.mentions_jsonl import (
    ANNOTATOR,
    CONCEPT_NAME,
    SPECIES,
    SPECIES_NAME,
    confidence_of,
    explanation_of,
)
from data_tools.formats.records import concept_name_in
from e2e_linker.collective.settings import AnnotateSettings

if TYPE_CHECKING:
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.normalizer.normalizer import Normalizer



@dataclass(frozen=True)
class Mention:
    """One linked mention. ``start``/``end`` index the string (or document text) it came from;
    ``concept_id`` is None when nothing was linked (several IDs are joined with ``|``), and
    namespaced for mentions the linker found (``MESH:D013629``, ``NCBIGene:672``:
    :mod:`data_tools.formats.namespaces`); ``concept_name`` is the concept's preferred name in
    the KB, None when unknown; ``species`` and ``species_name`` are a gene's species
    (``NCBITaxon:9606``, ``Homo sapiens``), None for other concepts or when unknown;
    ``mention_score`` is None for mentions given to :meth:`Linker.normalize`; ``confidence``
    is the linker's estimate, in [0, 1], that span, type and concept are all right
    (:mod:`e2e_linker.collective.confidence`), filled for every mention the linker finds; for
    a mention given to :meth:`Linker.normalize`, that its answer is right
    (:mod:`e2e_linker.normalizer.confidence`; None only where no candidate was found);
    ``candidates`` is the ranking the concept was chosen from, best first, as ``(namespaced
    ID, score)`` pairs (the dense similarity; 0.0 for a ranking by names), filled only when
    the linker explains (``Linker.load(explain=True)``)."""

    start: int
    end: int
    text: str
    type: str
    concept_id: str | None
    concept_name: str | None
    mention_score: float | None
    link_score: float | None
    species: str | None = None
    species_name: str | None = None
    confidence: float | None = None
    candidates: tuple[tuple[str, float | None], ...] = ()


def mention_of(annotation: Annotation, kb: Any = None) -> Mention:
    """An annotation as a :class:`Mention`: its record as the linker filled it
    (:mod:`data_tools.formats.records`), the concept named from ``kb`` when the record does
    not name it."""
    concept_id = "|".join(annotation.concept_ids) or None
    infons = annotation.infons
    explanation = explanation_of(annotation) or {"candidates": []}
    return Mention(start=annotation.start, end=annotation.end, text=annotation.text,
                   type=annotation.type, concept_id=concept_id,
                   concept_name=infons.get(CONCEPT_NAME) or concept_name_in(kb, concept_id),
                   mention_score=annotation.mention_score, link_score=annotation.link_score,
                   species=infons.get(SPECIES) or None,
                   species_name=infons.get(SPECIES_NAME) or None,
                   confidence=confidence_of(annotation),
                   candidates=tuple((c["concept_id"], c["score"])
                                    for c in explanation["candidates"]))


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

        The first load of a KB encodes its names (cached afterwards; see the README). An
        unknown option, or a value out of its range (``threshold`` outside [0, 1], a device
        other than cpu or cuda...), is a :class:`~e2e_linker.errors.UserError` naming what is
        accepted, before anything loads."""
        from e2e_linker.collective.loading import load_annotator

        if settings is None:
            settings = settings_from_options(model_dir, options)
        elif options or model_dir is not None:
            raise TypeError("pass either settings or options, not both")
        check_settings(settings)
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

    def normalize(self, mentions: Iterable[str | tuple[str, ...]], species: str | None = None,
                  nil_threshold: float | None = None) -> list[Mention]:
        """Link mentions found elsewhere, given as ``(text, type)`` pairs or ``(text, type,
        species)`` triples, against this linker's KB (``linker normalize``'s engine:
        :mod:`e2e_linker.normalizer.given_mentions`). A mention of a type annotate links by
        its names only (genes and species, with the default model) is linked as annotate links
        one, its species first among same-named genes (the item's ``species`` or this call's:
        an NCBI Taxonomy ID such as ``10090`` or a name such as ``"mouse"``; else human);
        every other mention goes to the text normalizer (its own KB and default model). The
        type is optional: a bare text, a ``(text,)`` tuple or a ``None`` type is an untyped
        mention (type ``""``), searched against every concept of the normalizer's KB.

        No match: a mention whose best link scores below ``nil_threshold`` (default
        :data:`~e2e_linker.normalizer.normalizer.DEFAULT_NIL_THRESHOLD`, chosen on dev data;
        0 gives every mention its best concept), or whose link rests on too little of its
        spelling and scores below a higher bar (nonsense: rule 5 of
        :meth:`~e2e_linker.normalizer.normalizer.Normalizer._decide`), or a gene no name
        links, comes back with ``concept_id`` None (its ``link_score`` kept). A linked one
        carries annotate's record: namespaced ID (``NCBIGene:672``), concept name, a gene's
        species. Every answer carries a ``confidence`` in [0, 1]: that its concept is right,
        or for a no-match answer that its best candidate is wrong
        (:mod:`e2e_linker.normalizer.given_mentions` says how each is estimated); None only
        for an answer without a candidate (a gene no name links).

        Each mention is normalized as its own one-mention document, so mentions of unrelated
        texts never define abbreviations for each other; results come back in input order with
        ``start=0``, ``end=len(text)`` and no ``mention_score``. Every item is checked before
        the normalizer loads: a bad one raises :class:`~e2e_linker.errors.UserError` naming
        its position (``normalize item 2: ...``, from 0), and so does a bare str in place of
        the list (one mention: pass ``[text]``); an unknown species or a threshold outside
        [0, 1] is a ``UserError`` too. The first call loads the normalizer (announced on a
        terminal: the first time on a machine it compiles its KB)."""
        from e2e_linker.errors import UserError
        from e2e_linker.normalizer.given_mentions import GivenMentionLinker
        from e2e_linker.normalizer.normalizer import DEFAULT_NIL_THRESHOLD

        if isinstance(mentions, (str, bytes)):
            raise UserError("normalize() takes an iterable of mentions, and a str is one "
                            "mention: pass [text] or [(text, type)]")
        if species is not None and not isinstance(species, str):
            raise UserError(f"normalize: species must be a str (or None), not "
                            f"{type(species).__name__}")
        linker = GivenMentionLinker(lambda: self.normalizer, lambda: self.annotator,
                                    DEFAULT_NIL_THRESHOLD if nil_threshold is None
                                    else nil_threshold)
        docs, species_of = [], []
        for number, item in enumerate(mentions):
            text, type_, item_species = _mention_item(item, number)
            doc = text_document(text, f"mention-{number}")
            doc.passages[0].annotations.append(Annotation(start=0, end=len(text), text=text,
                                                          type=type_, id="m0"))
            docs.append(doc)
            species_of.append(item_species or species)
        if not docs:
            return []
        return [mention_of(doc.annotations[0]) for doc in linker.normalize(docs, species_of)]


def settings_from_options(model_dir: str | os.PathLike | None, options: dict[str, Any]
                          ) -> AnnotateSettings:
    """``Linker.load``'s keyword options as settings; a name that is no option, or a value
    the settings refuse, is a one-line :class:`~e2e_linker.errors.UserError` naming what is
    accepted (a misspelt ``treshold=`` was a TypeError from deep inside a dataclass)."""
    from dataclasses import fields

    from e2e_linker.errors import UserError

    accepted = sorted(f.name for f in fields(AnnotateSettings) if f.name != "model_dir")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise UserError(f"Linker.load: unknown option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)}; the options are model_dir, settings, "
                        f"{', '.join(accepted)}")
    try:
        return AnnotateSettings(model_dir=None if model_dir is None else str(model_dir),
                                **options)
    except (TypeError, ValueError) as exc:
        raise UserError(f"Linker.load: {exc}") from None


#: the devices ``Linker.load`` and ``linker annotate --device`` take (None: CUDA when present)
DEVICES = ("cpu", "cuda")


def check_settings(settings: AnnotateSettings) -> None:
    """Refuse, before anything loads, settings a caller could only have got wrong: each
    :class:`~e2e_linker.errors.UserError` names the setting and the values it accepts
    (``Linker.load(threshold=2)`` used to load and then find nothing, silently)."""
    from e2e_linker.encoder.precision import PRECISIONS
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.backends import SEARCH_KINDS

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    s = settings
    if s.threshold is not None and not (number(s.threshold) and 0 <= s.threshold <= 1):
        raise UserError(f"threshold={s.threshold!r}: the mention threshold is a number from "
                        "0 to 1 (None: the model's)")
    for name in ("batch_size", "max_batch_tokens", "context_window", "max_span_len"):
        value = getattr(s, name)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool)
                                      and value >= 1):
            raise UserError(f"{name}={value!r}: a whole number, at least 1")
    if s.kb_memory_budget_mb is not None and not (number(s.kb_memory_budget_mb)
                                                  and s.kb_memory_budget_mb > 0):
        raise UserError(f"kb_memory_budget_mb={s.kb_memory_budget_mb!r}: megabytes, above 0 "
                        "(None: no budget)")
    # (mode and linking: AnnotateSettings refuses them itself, on construction)
    for name, accepted in (("device", (None, *DEVICES)), ("index_kind", SEARCH_KINDS),
                           ("precision", PRECISIONS)):
        value = getattr(s, name)
        if value not in accepted:
            shown = ", ".join("None" if a is None else a for a in accepted)
            raise UserError(f"{name}={value!r}: use one of {shown}")


def _mention_item(item: Any, number: int) -> tuple[str, str, str | None]:
    """One item of :meth:`Linker.normalize` as ``(text, type, species)``, or a ``UserError``
    naming it."""
    from e2e_linker.errors import UserError

    if isinstance(item, str):
        text, type_, species = item, None, None
    elif isinstance(item, (tuple, list)) and 1 <= len(item) <= 3:
        text, type_, species = (*item, None, None)[:3]
    else:
        shown = repr(item) if len(repr(item)) <= 60 else f"a {type(item).__name__}"
        raise UserError(f"normalize item {number}: expected a text, a (text, type) pair or a "
                        f"(text, type, species) triple, not {shown}")
    if not isinstance(text, str):
        raise UserError(f"normalize item {number}: the text must be a str, not "
                        f"{type(text).__name__}")
    if not text.strip():
        raise UserError(f"normalize item {number}: the text is empty")
    for name, value in (("type", type_), ("species", species)):
        if value is not None and not isinstance(value, str):
            raise UserError(f"normalize item {number}: the {name} must be a str (or None), "
                            f"not {type(value).__name__}")
    return text, type_ or "", species or None


def load_normalizer_for(settings: AnnotateSettings, packed_always: bool = False) -> Normalizer:
    """The normalizer an annotate run's settings name (their ``normalizer_model``, ``kb``,
    ``device`` and ``cache_dir``), loaded by the one normalizer loader."""
    from e2e_linker.normalizer.loading import load_normalizer

    return load_normalizer(settings.normalizer_model, settings.kb, settings.device,
                           settings.cache_dir, packed_always=packed_always)
