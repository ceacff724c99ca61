"""Normalize given mentions to KB concepts with a text-only encoder (Xu & Bethard 2021).

This is the engine behind ``linker normalize``: the mention spans are given (gold spans, or
another tool's NER output); each mention's text — abbreviations expanded from its own
document, case and punctuation folded, composites split — is encoded and searched against the
KB's names and/or training mentions with one of the 14 search modes of
:mod:`e2e_linker.kb_search.concept_search`.

The model directory's format is :mod:`e2e_linker.normalizer.normalizer_dir`; the text pools are
built by :mod:`e2e_linker.normalizer.pools`.

For a library caller the one-stop function is :func:`normalize_documents`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from data_tools.documents import Annotation, Document
from data_tools.formats.mentions_jsonl import CONFIDENCE
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.kb_search.cache import VectorStore
from e2e_linker.kb_search.concept_search import (
    SIEVE_THRESHOLD,
    ConceptSearcher,
    mode_requires,
    parse_mode,
)
from e2e_linker.kb_search.label_index import LabeledTexts, Ranked
from e2e_linker.kb_search.unit_vectors import encode_unit
from e2e_linker.lexical.abbreviations import (
    DocumentAbbreviations,
    document_mentions,
    expand_mention,
)
from e2e_linker.lexical.sieves import CompactKeyIndex, CompactKeySieve
from e2e_linker.lexical.text_forms import TextNormalizer, composite_parts
from e2e_linker.normalizer.confidence import answer_confidence
from e2e_linker.normalizer.pools import (
    TYPE_ALIASES,
    mention_pool,
    ontology_pool,
    synonym_pool,
)
from e2e_linker.normalizer.spelling import ConceptSpellings

#: The search mode used when neither the caller nor the model directory names one.
DEFAULT_MODE = "D-T+OD-T"
#: The link score below which ``linker normalize``, :meth:`e2e_linker.api.Linker.normalize`
#: and ``POST /normalize`` answer "no concept" (NIL), chosen on BC5CDR and NCBI disease dev
#: (docs/results.md, "NIL: the normalizer's no-match answer"); 0 links every mention.
DEFAULT_NIL_THRESHOLD = 0.78
#: With a NIL threshold, a link resting on less than this share of the mention's spelling
#: (:func:`~e2e_linker.normalizer.spelling.spelling_share`) needs a link score of at least
#: :data:`UNSUPPORTED_NIL_THRESHOLD`; both chosen on BC5CDR and NCBI disease dev as the
#: threshold was (docs/results.md, "NIL: the normalizer's no-match answer").
SPELLING_EVIDENCE = 0.3
UNSUPPORTED_NIL_THRESHOLD = 0.85
COMPOSITE_POLICIES = ("auto", "always", "never")


# ---- normalizing ---------------------------------------------------------------------------

@dataclass
class NormalizeOptions:
    """Switches of ``linker normalize``; each preprocessing step can be turned off (ablation)."""

    mode: str = DEFAULT_MODE
    top_k: int = 5
    #: below this link score a mention gets no concept (None or 0: every mention gets one);
    #: the doors pass :data:`DEFAULT_NIL_THRESHOLD`, annotate's text linker none
    nil_threshold: float | None = None
    #: with a NIL threshold: a link with little spelling evidence needs the higher bar
    #: (:data:`SPELLING_EVIDENCE`, :data:`UNSUPPORTED_NIL_THRESHOLD`)
    spelling_nil: bool = True
    type_aware: bool = True
    #: "auto": split a composite when every part matches better than the whole mention
    composite: str = "auto"
    abbreviations: bool = True
    #: with abbreviations: also one-letter definitions ("testosterone (T)") and short forms
    #: never defined but matching another mention of the document ("PB" … "phenobarbital")
    inferred_abbreviations: bool = True
    #: with abbreviations: a mention that *contains* a short form and is, as written, a
    #: near-exact name (cosine ≥ the sieve threshold) keeps that match over its expansion
    written_first: bool = True
    lowercase: bool = True
    punctuation: bool = True
    #: exact compact-key match to one KB concept first, in modes that search O (see
    #: :mod:`e2e_linker.lexical.sieves`)
    lexical: bool = True
    #: with lexical: chemical names also answer to their salt-free form ("Tiapride
    #: Hydrochloride" to "tiapride"; :mod:`e2e_linker.lexical.salt_forms`), in that sieve only
    salt_free: bool = True
    sieve_threshold: float = SIEVE_THRESHOLD
    batch_size: int = 256
    progress: bool = True

    def __post_init__(self) -> None:
        parse_mode(self.mode)
        if self.composite not in COMPOSITE_POLICIES:
            raise ValueError(f"composite must be one of {COMPOSITE_POLICIES}")


@dataclass
class MentionQuery:
    """One annotation to normalize: the texts to search (whole, and parts if composite)."""

    doc_index: int
    annotation: Annotation
    type: str | None
    whole: str
    parts: list[str] = field(default_factory=list)
    part_surfaces: list[str] = field(default_factory=list)
    #: the mention as written (folded) when abbreviation expansion changed it
    raw: str | None = None


@dataclass
class Prediction:
    """The answer for one mention: its concepts (none: NIL), the best link's score and
    spelling share (:mod:`e2e_linker.normalizer.spelling`; a composite's weakest part's),
    the ranked candidates and the answer's confidence (:mod:`e2e_linker.normalizer.confidence`;
    None without a candidate)."""

    concept_ids: list[str]
    score: float | None
    candidates: str
    parts: list[str] | None = None
    spelling_share: float | None = None
    confidence: float | None = None


def _ids_of(label: str) -> list[str]:
    return [i for i in label.split("|") if i]


def _format(ranked: Ranked) -> str:
    return ";".join(f"{label}|{min(score, 1.0):.4f}" for label, score in ranked)


class Normalizer:
    """An encoder plus a KB (O), optional training mentions (D) and the options above.

    D comes from annotated ``training`` documents and/or saved ``mentions`` triples
    (``(text, label, type)``, e.g. a model directory's ``mentions.tsv``).

    Build once, then call :meth:`normalize` on any number of document batches; the KB's
    vectors are encoded (or read from the cache) on the first call.
    """

    def __init__(self, encoder: TextEncoder, kb, training: Iterable[Document] | None = None,
                 options: NormalizeOptions | None = None,
                 cache_dir: str | os.PathLike | None = None,
                 extra_synonyms: Iterable[tuple[str, str]] = (),
                 mentions: Iterable[tuple[str, str, str]] | None = None,
                 packed: str | os.PathLike | None = None, packed_always: bool = False):
        self.encoder = encoder.eval()
        self.kb = kb
        self.options = options or NormalizeOptions()
        self.text = TextNormalizer(self.options.lowercase, self.options.punctuation)
        #: annotation types that restrict the search: only types the KB itself uses, so an
        #: NCBI "SpecificDisease" mention searches everything while a BC5CDR "Chemical" one
        #: sees chemicals only
        self.kb_types = {t for c in kb for t in c.types()}
        ontology = ontology_pool(kb, self.text)
        extra = list(extra_synonyms)
        synonyms = synonym_pool(kb, self.text, extra) if extra else None
        pool = mention_pool(self.text, kb, training, mentions, self.options.abbreviations)
        self._lexical_pools = ([p for p in (ontology, synonyms) if p is not None],
                               [pool] if pool is not None else [])
        self._lexical: CompactKeySieve | None = None
        #: the names a link rests on, for its spelling share
        self.spellings = ConceptSpellings(kb, self.text,
                                          [p for p in (synonyms, pool) if p is not None])
        cache = VectorStore(cache_dir, encoder, unit=True, batch_size=self.options.batch_size,
                            progress=self.options.progress)
        self.searcher = ConceptSearcher(encoder, ontology, pool, cache,
                                        self.options.sieve_threshold,
                                        extra_synonyms=synonyms, packed=packed,
                                        packed_always=packed_always)

    # -- steps, public so that evaluation can reuse one encoding for every mode --
    def queries(self, docs: Sequence[Document],
                abbreviations: Sequence[DocumentAbbreviations] | None = None
                ) -> list[MentionQuery]:
        """The mention texts to search, after abbreviation expansion, folding and splitting.

        ``abbreviations``: each document's scan when the caller already made it (annotate's
        text linking); otherwise each text is scanned here, once."""
        out: list[MentionQuery] = []
        for d, doc in enumerate(docs):
            defined: dict[str, str] = {}
            expansions: dict[str, str] = {}
            if self.options.abbreviations:
                found = abbreviations[d] if abbreviations is not None \
                    else DocumentAbbreviations.scan(doc.text)
                defined = found.defined
                inferred = self.options.inferred_abbreviations
                expansions = found.expansions(document_mentions(doc) if inferred else None,
                                              letters=inferred)
            for ann in doc.annotations:
                surface = expand_mention(ann.text, expansions) if expansions else ann.text
                parts = composite_parts(surface) if self.options.composite != "never" else []
                type_ = None
                if self.options.type_aware:
                    type_ = TYPE_ALIASES.get(ann.type, ann.type)
                    if type_ not in self.kb_types:
                        type_ = None
                raw = self.text(ann.text)
                whole = self.text(surface)
                # a bare short form defined in the text ("NS") always takes its long form; a
                # longer mention holding one ("diminished GALC activity"), or a short form
                # resolved from a one-letter definition or another mention ("NAD" from
                # "nicotinic acid amide"), may also match as written
                bare = ann.text.strip() in defined
                out.append(MentionQuery(d, ann, type_, whole, [self.text(p) for p in parts],
                                        parts, raw if raw != whole and not bare else None))
        return out

    def rank(self, queries: Sequence[MentionQuery], modes: Sequence[str],
             k: int | None = None, nil_threshold: float | None = None
             ) -> dict[str, list[Prediction]]:
        """Predictions of every mode for every query, from one encoding and base search.

        Each distinct (text, type) of the queries — whole mentions, composite parts, texts as
        written — is encoded once and searched once per base search the modes need; each mode
        is then assembled from those results (:meth:`ConceptSearcher.combine`) and decided per
        mention by the rule of :meth:`_decide`. ``nil_threshold``: this call's (None: the
        options'; 0: none).
        """
        k = k or self.options.top_k
        if nil_threshold is None:
            nil_threshold = self.options.nil_threshold
        keys: dict[tuple[str, str | None], int] = {}
        for q in queries:
            for text in (q.whole, *q.parts, *([q.raw] if q.raw else [])):
                keys.setdefault((text, q.type), len(keys))
        texts = [t for t, _ in keys]
        types = [t for _, t in keys]
        unique_texts = sorted(set(texts))
        position = {t: i for i, t in enumerate(unique_texts)}
        vectors = encode_unit(self.encoder, unique_texts, self.options.batch_size,
                              progress="encoding mentions" if self.options.progress else False)
        query_vectors = vectors[[position[t] for t in texts]] if texts else vectors
        needed = set().union(*(mode_requires(m) | set(parse_mode(m)) for m in modes)) \
            if modes else set()
        base = self.searcher.base_search(query_vectors, needed, max(k, 1), types)
        out: dict[str, list[Prediction]] = {}
        for mode in modes:
            ranked = self.searcher.combine(mode, base)
            lexical = self.options.lexical and any(source in ("O", "OD")
                                                   for source, _ in parse_mode(mode))
            out[mode] = [self._decide(q, ranked, keys, k, lexical, nil_threshold)
                         for q in queries]
        return out

    def _salt_free_pools(self) -> list[LabeledTexts]:
        """The KB's salt-free and anion name forms as a pool for the lexical sieve (none when
        switched off; see :mod:`e2e_linker.lexical.salt_forms`)."""
        if not self.options.salt_free:
            return []
        from e2e_linker.lexical.salt_forms import salt_free_synonyms

        forms = [(self.text(name), cid, self.kb.get(cid).type)
                 for cid, name in salt_free_synonyms(self.kb)]
        return [LabeledTexts.from_pairs(forms)] if forms else []

    def lexical_match(self, q: MentionQuery) -> str | None:
        """The KB concept whose names share the whole mention's compact key, if exactly one
        does and no training mention has that key (:class:`CompactKeySieve`, the rule annotate's
        sieve stack shares); None for a composite mention."""
        if q.parts:
            return None
        if self._lexical is None:  # built on first use: deriving salt-free forms takes ~1 s
            ontology, training = self._lexical_pools
            self._lexical = CompactKeySieve(CompactKeyIndex(ontology + self._salt_free_pools()),
                                            CompactKeyIndex(training))
        return self._lexical.match(q.whole, q.type)

    def _decide(self, q: MentionQuery, ranked: list[Ranked],
                keys: dict[tuple[str, str | None], int], k: int,
                lexical: bool = False, nil_threshold: float | None = None) -> Prediction:
        """The decision rule for one mention, given the mode's ranked answers for every text.

        1. Start from the ranking of the whole mention after abbreviation expansion.
        2. *Written first*: if expansion changed the text and the mention as written is itself
           a near-exact match (best cosine ≥ the sieve threshold, and not worse than the
           expanded text's), its ranking wins — Schwartz–Hearst long forms can be incomplete.
        3. *Lexical sieve* (modes that search O): a unique compact-key match to one KB concept,
           unless training mentions hold that key, goes to the top with score 1.0.
        4. *Composites*: with a split into parts
           (:func:`~e2e_linker.lexical.text_forms.composite_parts`), policy ``always`` takes
           the parts; ``auto`` takes them when every part found an answer and the weakest
           part's best score beats the whole mention's; the answer is then the parts' concepts
           in order. ``linker annotate``'s policy
           (:meth:`~e2e_linker.collective.span_linking.SpanLinker.composite_ids`) differs
           because its inputs do: here every part is encoded and searched like the whole, so
           scores compare; a detected span has one vector and its parts none, so there a
           part counts only as an exact name or sieve match.
        5. *NIL*: below ``nil_threshold`` (none when None or 0) the concept IDs are dropped;
           so they are, with ``spelling_nil``, when the link's spelling share (the text whose
           ranking won against its concept's names: :mod:`e2e_linker.normalizer.spelling`;
           a composite's weakest part) is below :data:`SPELLING_EVIDENCE` and its score below
           :data:`UNSUPPORTED_NIL_THRESHOLD`: a cosine alone does not make nonsense a
           concept. The score and the candidates are kept, so a caller sees what the best
           link was.
        6. *Confidence*: :func:`~e2e_linker.normalizer.confidence.answer_confidence` of the
           best link and the decision.
        """
        whole = ranked[keys[(q.whole, q.type)]]
        whole_text = q.whole
        if q.raw is not None and self.options.written_first:
            # the mention as written wins when it is itself a (near-)exact name or training
            # mention ("AAPC" seen in training, "diminished GALC activity" in the KB): the
            # Schwartz–Hearst long form may be incomplete ("adenomatous polyposis coli")
            raw = ranked[keys[(q.raw, q.type)]]
            if raw and raw[0][1] >= self.options.sieve_threshold and (
                    not whole or raw[0][1] >= whole[0][1] - 1e-5):
                whole, whole_text = raw, q.raw
        if lexical and (label := self.lexical_match(q)) is not None:
            whole = [(label, 1.0), *[(la, sc) for la, sc in whole if la != label]][:k]
        whole_score = whole[0][1] if whole else -np.inf
        use_parts = False
        if q.parts and self.options.composite != "never":
            part_lists = [ranked[keys[(p, q.type)]] for p in q.parts]
            if all(part_lists):
                part_score = min(r[0][1] for r in part_lists)
                use_parts = self.options.composite == "always" or part_score > whole_score
        if use_parts:
            ids = [i for r in part_lists for i in _ids_of(r[0][0])]
            score = min(r[0][1] for r in part_lists)
            candidates = " || ".join(_format(r[:k]) for r in part_lists)
            share = min(self.spellings.share(part, r[0][0])
                        for part, r in zip(q.parts, part_lists, strict=True))
            pred = Prediction(ids, score, candidates, list(q.part_surfaces), share)
        elif whole:
            pred = Prediction(_ids_of(whole[0][0]), whole_score, _format(whole[:k]),
                              spelling_share=self.spellings.share(whole_text, whole[0][0]))
        else:
            pred = Prediction([], None, "")
        if nil_threshold and pred.score is not None and self.is_nil(
                pred.score, pred.spelling_share, nil_threshold):
            pred.concept_ids = []
        pred.confidence = answer_confidence(pred.score, pred.spelling_share,
                                            bool(pred.concept_ids))
        return pred

    def is_nil(self, score: float, share: float | None, nil_threshold: float) -> bool:
        """Whether a best link of ``score`` and spelling ``share`` is no match under
        ``nil_threshold`` (rule 5 of :meth:`_decide`)."""
        if score < nil_threshold:
            return True
        return self.options.spelling_nil and share is not None \
            and share < SPELLING_EVIDENCE and score < UNSUPPORTED_NIL_THRESHOLD

    @staticmethod
    def apply(queries: Sequence[MentionQuery], predictions: Sequence[Prediction]) -> None:
        """Write predictions into the annotations (IDs, link score, candidates and
        confidence infons; no confidence infon for an answer without one)."""
        for q, pred in zip(queries, predictions, strict=True):
            ann = q.annotation
            ann.concept_ids = list(pred.concept_ids)
            ann.no_id = False
            ann.link_score = None if pred.score is None else float(min(pred.score, 1.0))
            ann.composite_texts = pred.parts if pred.parts and len(pred.parts) == len(
                pred.concept_ids) else None
            ann.infons["candidates"] = pred.candidates
            if pred.confidence is None:
                ann.infons.pop(CONFIDENCE, None)
            else:
                ann.infons[CONFIDENCE] = f"{pred.confidence:.4f}"

    def normalize(self, docs: Iterable[Document],
                  abbreviations: Sequence[DocumentAbbreviations] | None = None,
                  nil_threshold: float | None = None) -> list[Document]:
        """Fill ``concept_ids``, ``link_score`` and the ``candidates`` and ``confidence``
        infons in place (``abbreviations``: as in :meth:`queries`; ``nil_threshold``: as in
        :meth:`rank`)."""
        docs = list(docs)
        queries = self.queries(docs, abbreviations)
        predictions = self.rank(queries, [self.options.mode],
                                nil_threshold=nil_threshold)[self.options.mode]
        self.apply(queries, predictions)
        return docs


def normalize_documents(documents: Iterable[Document], encoder: TextEncoder, kb,
                        mode: str = DEFAULT_MODE, training: Iterable[Document] | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        extra_synonyms: Iterable[tuple[str, str]] = (),
                        mentions: Iterable[tuple[str, str, str]] | None = None,
                        packed: str | os.PathLike | None = None,
                        **options) -> list[Document]:
    """Normalize every annotation of ``documents`` (in place; also returned).

    ``training`` documents (and/or saved ``mentions`` triples) make up the D pool, needed by
    every mode that mentions D; without them D-searches find nothing and sieves fall through
    to their second search. ``options``
    are :class:`NormalizeOptions` fields (``top_k``, ``nil_threshold``, ``type_aware``,
    ``composite``, ``abbreviations``, ``lowercase``, ``punctuation``...). ``packed`` is the
    model's packed KB index (:func:`e2e_linker.normalizer.normalizer_dir.packed_index_of`).
    """
    opts = NormalizeOptions(mode=mode, **options)
    normalizer = Normalizer(encoder, kb, training, opts, cache_dir, extra_synonyms, mentions,
                            packed)
    return normalizer.normalize(documents)
