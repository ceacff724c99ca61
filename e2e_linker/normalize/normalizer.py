"""Normalize given mentions to KB concepts with a text-only encoder (Xu & Bethard 2021).

This is the engine behind ``linker normalize``: the mention spans are given (gold spans, or
another tool's NER output); each mention's text — abbreviations expanded from its own
document, case and punctuation folded, composites split — is encoded and searched against the
KB's names and/or training mentions with one of the 14 search modes of
:mod:`e2e_linker.normalize.search`.

A *model directory* is what ``linker train-triplet`` writes::

    encoder/          Hugging Face folder (config.json, model.safetensors, tokenizer files), or
    adapter/          a LoRA adapter over a base encoder (see :mod:`e2e_linker.adapter`)
    normalizer.json   {"pooling", "max_length", "kb", "kb_hash", "lowercase", "punctuation", ...}
    mentions.tsv      (optional) the training mentions, the default D pool at search time

Any plain Hugging Face folder or name also works as a model (mean pooling, the default text
settings, no recorded KB). Without ``--model`` the embedded default model directory
(``e2e_linker/default_model/normalizer/``, an adapter over the packaged MiniLM) is used; see
:func:`default_model_dir`.

For a library caller the one-stop function is :func:`normalize_documents`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from data_tools.documents import Annotation, Document, strip_prefix
from e2e_linker.encoder import TextEncoder
from e2e_linker.errors import UserError
from e2e_linker.normalize.abbreviation import (
    abbreviation_expansions,
    document_expansions,
    expand_mention,
)
from e2e_linker.normalize.lexical import CompactKeyIndex
from e2e_linker.normalize.preprocess import TextNormalizer, split_composite
from e2e_linker.normalize.search import (
    MODES,
    SIEVE_THRESHOLD,
    ConceptSearcher,
    LabeledTexts,
    Ranked,
    VectorCache,
    encode_unit,
    mode_requires,
    parse_mode,
)

NORMALIZER_FILE = "normalizer.json"
ENCODER_DIR = "encoder"
#: a LoRA adapter over a base encoder (see :mod:`e2e_linker.adapter`), instead of ``encoder/``
ADAPTER_DIR = "adapter"
#: optional: the training mentions a model was trained with (``label<TAB>type<TAB>text``); used
#: as the D pool when ``linker normalize`` is given no ``--train-mentions``
MENTIONS_FILE = "mentions.tsv"
#: Shipped with the package, beside the collective model that ``linker annotate`` reads: the
#: triplet-trained adapter, ``normalizer.json`` and the training mentions.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "default_model" / "normalizer"
#: Annotation types of other corpora that mean a KB type: NCBI disease's four classes are all
#: diseases, so over a KB holding chemicals too (bc5cdr) they search the diseases only.
TYPE_ALIASES = {"SpecificDisease": "Disease", "DiseaseClass": "Disease",
                "Modifier": "Disease", "CompositeMention": "Disease"}
#: The search mode used when neither the caller nor the model directory names one.
DEFAULT_MODE = "D-T+OD-T"
COMPOSITE_POLICIES = ("auto", "always", "never")


# ---- model directories ---------------------------------------------------------------------

@dataclass
class ModelSettings:
    """What ``normalizer.json`` records: how texts were encoded and which KB the model knows."""

    pooling: str = "mean"
    max_length: int = 32
    kb: str | None = None
    kb_hash: str | None = None
    lowercase: bool = True
    punctuation: bool = True
    #: the search mode to use by default with this model (None: :data:`DEFAULT_MODE`)
    search: str | None = None
    #: anything else recorded (training corpora, steps, ...), kept verbatim
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> ModelSettings:
        known = {f.name for f in fields(cls)} - {"extra"}
        settings = cls(**{k: v for k, v in data.items() if k in known})
        settings.extra = {k: v for k, v in data.items() if k not in known}
        return settings

    def to_dict(self) -> dict:
        data = asdict(self)
        extra = data.pop("extra")
        return {**data, **extra}


def default_model_dir() -> Path:
    """The embedded default normalizer model (``e2e_linker/default_model/normalizer/``).

    Raises a :class:`UserError` naming the fix when the package was built without one.
    """
    if not ((DEFAULT_MODEL_DIR / NORMALIZER_FILE).is_file()
            and ((DEFAULT_MODEL_DIR / ADAPTER_DIR).is_dir()
                 or (DEFAULT_MODEL_DIR / ENCODER_DIR).is_dir())):
        raise UserError(f"no embedded default normalizer at {DEFAULT_MODEL_DIR} (needs "
                        f"{ADAPTER_DIR}/ or {ENCODER_DIR}/, and {NORMALIZER_FILE}); pass --model DIR "
                        "(a triplet model directory, a Hugging Face folder, or all-MiniLM-L6-v2)")
    return DEFAULT_MODEL_DIR


def load_model(model: str | os.PathLike | None = None, device: str | None = None
               ) -> tuple[TextEncoder, ModelSettings]:
    """The encoder and settings of a model directory, a plain HF folder, or a model name.

    ``None`` means :func:`default_model_dir`. A directory with an ``encoder/`` or ``adapter/``
    subfolder is a triplet model directory (its ``normalizer.json`` gives pooling and text settings);
    anything else goes to ``TextEncoder.from_pretrained`` with mean pooling. Weights are only
    ever read from safetensors.
    """
    path = Path(model) if model is not None else default_model_dir()
    if (path / ADAPTER_DIR).is_dir() or (path / ENCODER_DIR).is_dir():
        settings_path = path / NORMALIZER_FILE
        data = {}
        if settings_path.is_file():
            try:
                data = json.loads(settings_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise UserError(f"{settings_path}: not valid JSON ({exc})") from exc
        settings = ModelSettings.from_dict(data)
        if (path / ADAPTER_DIR).is_dir():
            return _load_adapter_model(path / ADAPTER_DIR, settings, device), settings
        source = str(path / ENCODER_DIR)
    else:
        if model is not None and not path.exists() and os.sep in str(model):
            raise UserError(f"{model}: no such model directory")
        settings = ModelSettings()
        source = str(model)
    try:
        encoder = TextEncoder.from_pretrained(source, pooling=settings.pooling,
                                              max_length=settings.max_length)
    except OSError as exc:
        raise UserError(f"cannot load encoder from {source}: {exc}") from exc
    if device:
        encoder.to(device)
    return encoder.eval(), settings


def _load_adapter_model(folder: Path, settings: ModelSettings, device: str | None
                        ) -> TextEncoder:
    """The adapter's base encoder with the adapter merged in."""
    from e2e_linker.adapter import apply_adapter, read_adapter_config
    from e2e_linker.encoder import resolve_encoder_path

    base = read_adapter_config(folder).get("base")
    if not base:
        raise UserError(f"{folder}: adapter.json names no base encoder")
    base_folder = resolve_encoder_path(base)
    try:
        encoder = TextEncoder.from_pretrained(base_folder, pooling=settings.pooling,
                                              max_length=settings.max_length)
    except OSError as exc:
        raise UserError(f"cannot load the adapter's base encoder {base}: {exc}") from exc
    apply_adapter(encoder.model, folder, base_folder)
    if device:
        encoder.to(device)
    return encoder.eval()


def model_mentions_of(model: str | os.PathLike | None) -> list[tuple[str, str, str]] | None:
    """The saved training mentions of a model directory (``None`` for a model without any)."""
    if model is None:
        try:
            path = default_model_dir()
        except UserError:
            return None
    else:
        path = Path(model)
    file = path / MENTIONS_FILE
    return read_mentions(file) if file.is_file() else None


def save_model(encoder: TextEncoder, directory: str | os.PathLike,
               settings: ModelSettings, adapter: dict | None = None) -> Path:
    """Write ``encoder/`` (safetensors) and ``normalizer.json``; returns the directory.

    With ``adapter`` (keys ``base``, ``base_folder``, ``rank``, ``alpha``) the encoder carries
    LoRA layers and only they are written, to ``adapter/`` (fp16).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if adapter is not None:
        from e2e_linker.adapter import save_adapter

        save_adapter(encoder.model, directory / ADAPTER_DIR, adapter["base"],
                     adapter["base_folder"], adapter["rank"], adapter["alpha"])
    else:
        encoder.save(directory / ENCODER_DIR)
    settings.pooling = encoder.pooling
    settings.max_length = encoder.max_length
    (directory / NORMALIZER_FILE).write_text(json.dumps(settings.to_dict(), indent=2) + "\n",
                                            encoding="utf-8")
    return directory


# ---- text pools ----------------------------------------------------------------------------

def ontology_pool(kb, text: TextNormalizer) -> LabeledTexts:
    """Every KB name, normalised, labelled with its concept ID and typed with the KB type."""
    return LabeledTexts.from_pairs(
        (text(name), c.id, c.type) for c in kb for name in c.all_names())


def synonym_pool(kb, text: TextNormalizer, pairs: Iterable[tuple[str, str]]) -> LabeledTexts:
    """Extra ``(concept_id, name)`` synonyms as a pool (IDs resolved through the KB)."""
    def triples():
        for cid, name in pairs:
            primary = kb.resolve(cid) if kb is not None else strip_prefix(cid)
            concept = kb.get(primary) if kb is not None else None
            yield text(name), primary, concept.type if concept else ""
    return LabeledTexts.from_pairs(triples())


def read_synonyms(path: str | os.PathLike) -> list[tuple[str, str]]:
    """``concept_id<TAB>name`` lines (blank lines and ``#`` comments skipped)."""
    from data_tools.documents import FormatError

    out = []
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0].strip() or not parts[1].strip():
                raise FormatError("expected 'concept_id<TAB>name'", path=str(path),
                                  where=f"line {lineno}")
            out.append((parts[0].strip(), parts[1].strip()))
    return out


def write_mentions(path: str | os.PathLike, triples: Iterable[tuple[str, str, str]]) -> int:
    """Save ``(text, label, type)`` triples as ``label<TAB>type<TAB>text`` lines (sorted)."""
    rows = sorted({(label, type_, " ".join(text.split())) for text, label, type_ in triples})
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for label, type_, text in rows:
            handle.write(f"{label}\t{type_}\t{text}\n")
    return len(rows)


def read_mentions(path: str | os.PathLike) -> list[tuple[str, str, str]]:
    """``(text, label, type)`` triples from :func:`write_mentions`'s format."""
    from data_tools.documents import FormatError

    out = []
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 or not parts[0] or not parts[2]:
                raise FormatError("expected 'label<TAB>type<TAB>text'", path=str(path),
                                  where=f"line {lineno}")
            out.append((parts[2], parts[0], parts[1]))
    return out


def mention_ids(ann: Annotation, kb=None) -> list[str]:
    """An annotation's concept IDs without prefixes, mapped to the KB's primary IDs."""
    ids = [strip_prefix(c) for c in ann.concept_ids if c.strip()]
    return [kb.resolve(c) for c in ids] if kb is not None else ids


def training_triples(docs: Iterable[Document], text: TextNormalizer, kb=None,
                     abbreviations: bool = True, types: Iterable[str] | None = None
                     ) -> list[tuple[str, str, str]]:
    """``(normalised text, label, type)`` for each training mention with a concept.

    Composite mentions contribute their parts (gold ``composite_texts`` when present, else the
    heuristic split paired with the IDs by :func:`align_parts`) and, labelled ``D1|D2``,
    their whole text. With ``abbreviations`` a mention holding a short form defined in its document is
    added a second time with the long form, as queries are expanded the same way.
    """
    wanted = set(types) if types is not None else None
    out: list[tuple[str, str, str]] = []
    for doc in docs:
        expansions = document_expansions(doc) if abbreviations else {}
        for ann in doc.annotations:
            if wanted is not None and ann.type not in wanted:
                continue
            ids = mention_ids(ann, kb)
            if not ids:
                continue

            def type_of(cid: str, ann: Annotation = ann) -> str:
                concept = kb.get(cid) if kb is not None else None
                if concept is not None and concept.type:
                    return concept.type
                return TYPE_ALIASES.get(ann.type, ann.type)

            surfaces = {ann.text}
            if expansions:
                surfaces.add(expand_mention(ann.text, expansions))
            for surface in sorted(surfaces):
                if len(ids) == 1:
                    out.append((text(surface), ids[0], type_of(ids[0])))
                    continue
                out.append((text(surface), "|".join(ids), TYPE_ALIASES.get(ann.type, ann.type)))
                parts = ann.composite_texts if surface == ann.text else None
                aligned: list[str] | None = list(parts) if parts and len(parts) == len(ids) \
                    else None
                if aligned is None:
                    aligned = align_parts(split_composite(surface), ids, kb, text)
                if aligned is not None:
                    out.extend((text(p), cid, type_of(cid))
                               for p, cid in zip(aligned, ids, strict=True))
    return out


def align_parts(parts: list[str], ids: list[str], kb, text: TextNormalizer
                ) -> list[str] | None:
    """``parts`` reordered to match ``ids``, or None when no confident pairing exists.

    Why: corpora do not always list a composite's IDs in text order (NCBI writes
    "breast and ovarian cancer" as ``D010051|D001943`` as often as the other way round), and a
    positional pairing would teach "ovarian cancer" the breast-cancer ID. Each (part, ID) pair
    scores the best word overlap (Jaccard) between the part and the concept's KB names; the
    permutation with the highest total wins if every part overlaps its concept. Without a KB,
    or for more than 5 parts, parts are paired in order.
    """
    if len(parts) != len(ids) or len(parts) < 2:
        return None
    if kb is None or len(parts) > 5:
        return parts
    from itertools import permutations

    def words(value: str) -> set[str]:
        return set(text(value).lower().split())

    def overlap(part: str, cid: str) -> float:
        concept = kb.get(cid)
        if concept is None:
            return 0.0
        mine = words(part)
        return max((len(mine & words(n)) / len(mine | words(n)) for n in concept.all_names()),
                   default=0.0)

    scores = [[overlap(part, cid) for cid in ids] for part in parts]
    best, best_total = None, 0.0
    for perm in permutations(range(len(parts))):  # perm[j]: the part paired with ids[j]
        pair_scores = [scores[perm[j]][j] for j in range(len(ids))]
        total = sum(pair_scores)
        if min(pair_scores) > 0 and total > best_total:
            best, best_total = perm, total
    return None if best is None else [parts[best[j]] for j in range(len(ids))]


# ---- normalizing ---------------------------------------------------------------------------

@dataclass
class NormalizeOptions:
    """Switches of ``linker normalize``; each preprocessing step can be turned off (ablation)."""

    mode: str = DEFAULT_MODE
    top_k: int = 5
    nil_threshold: float | None = None
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
    #: :mod:`e2e_linker.normalize.lexical`)
    lexical: bool = True
    #: with lexical: chemical names also answer to their salt-free form ("Tiapride
    #: Hydrochloride" to "tiapride"; :mod:`e2e_linker.normalize.salts`), in that sieve only
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
    """The answer for one mention."""

    concept_ids: list[str]
    score: float | None
    candidates: str
    parts: list[str] | None = None


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
                 mentions: Iterable[tuple[str, str, str]] | None = None):
        self.encoder = encoder.eval()
        self.kb = kb
        self.options = options or NormalizeOptions()
        self.text = TextNormalizer(self.options.lowercase, self.options.punctuation)
        #: annotation types that restrict the search: only types the KB itself uses, so an
        #: NCBI "SpecificDisease" mention searches everything while a BC5CDR "Chemical" one
        #: sees chemicals only
        self.kb_types = {t for c in kb for t in c.type.split("|") if t}
        ontology = ontology_pool(kb, self.text)
        extra = list(extra_synonyms)
        synonyms = synonym_pool(kb, self.text, extra) if extra else None
        triples: list[tuple[str, str, str]] = []
        if training is not None:
            triples += training_triples(training, self.text, kb, self.options.abbreviations)
        if mentions is not None:  # saved triples (raw text): fold them like everything else
            triples += [(self.text(t), "|".join(kb.resolve(i) for i in label.split("|")), ty)
                        for t, label, ty in mentions]
        pool = LabeledTexts.from_pairs(triples) if triples else None
        self._lexical_pools = ([p for p in (ontology, synonyms) if p is not None],
                               [pool] if pool is not None else [])
        self._lexical: tuple[CompactKeyIndex, CompactKeyIndex] | None = None
        cache = VectorCache(encoder, cache_dir, batch_size=self.options.batch_size,
                            progress=self.options.progress)
        self.searcher = ConceptSearcher(encoder, ontology, pool, cache,
                                        self.options.sieve_threshold,
                                        extra_synonyms=synonyms)

    # -- steps, public so that evaluation can reuse one encoding for every mode --
    def queries(self, docs: Sequence[Document]) -> list[MentionQuery]:
        """The mention texts to search, after abbreviation expansion, folding and splitting."""
        out: list[MentionQuery] = []
        for d, doc in enumerate(docs):
            defined: dict[str, str] = {}
            expansions: dict[str, str] = {}
            if self.options.abbreviations:
                defined = abbreviation_expansions(doc.text)
                inferred = self.options.inferred_abbreviations
                expansions = document_expansions(doc, letters=inferred, mentions=inferred,
                                                 defined=defined)
            for ann in doc.annotations:
                surface = expand_mention(ann.text, expansions) if expansions else ann.text
                parts: list[str] = []
                if self.options.composite != "never":
                    parts = split_composite(surface)
                    if len(parts) < 2:
                        parts = []
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
             k: int | None = None) -> dict[str, list[Prediction]]:
        """Predictions of every mode for every query, from one encoding and base search."""
        k = k or self.options.top_k
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
            out[mode] = [self._decide(q, ranked, keys, k, lexical) for q in queries]
        return out

    def _salt_free_pools(self) -> list[LabeledTexts]:
        """The KB's salt-free and anion name forms as a pool for the lexical sieve (none when
        switched off; see :mod:`e2e_linker.normalize.salts`)."""
        if not self.options.salt_free:
            return []
        from e2e_linker.normalize.salts import salt_free_synonyms

        forms = [(self.text(name), cid, self.kb.get(cid).type)
                 for cid, name in salt_free_synonyms(self.kb)]
        return [LabeledTexts.from_pairs(forms)] if forms else []

    def lexical_match(self, q: MentionQuery) -> str | None:
        """The KB concept whose names share the whole mention's compact key, if exactly one
        does and no training mention has that key (see :mod:`e2e_linker.normalize.lexical`)."""
        if self._lexical is None:  # built on first use: deriving salt-free forms takes ~1 s
            ontology, training = self._lexical_pools
            self._lexical = (CompactKeyIndex(ontology + self._salt_free_pools()),
                             CompactKeyIndex(training))
        ontology_keys, training_keys = self._lexical
        if q.parts or q.whole in training_keys:
            return None
        return ontology_keys.unique(q.whole, q.type)

    def _decide(self, q: MentionQuery, ranked: list[Ranked],
                keys: dict[tuple[str, str | None], int], k: int,
                lexical: bool = False) -> Prediction:
        whole = ranked[keys[(q.whole, q.type)]]
        if q.raw is not None and self.options.written_first:
            # the mention as written wins when it is itself a (near-)exact name or training
            # mention ("AAPC" seen in training, "diminished GALC activity" in the KB): the
            # Schwartz–Hearst long form may be incomplete ("adenomatous polyposis coli")
            raw = ranked[keys[(q.raw, q.type)]]
            if raw and raw[0][1] >= self.options.sieve_threshold and (
                    not whole or raw[0][1] >= whole[0][1] - 1e-5):
                whole = raw
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
            pred = Prediction(ids, score, candidates, list(q.part_surfaces))
        elif whole:
            pred = Prediction(_ids_of(whole[0][0]), whole_score, _format(whole[:k]))
        else:
            pred = Prediction([], None, "")
        threshold = self.options.nil_threshold
        if threshold is not None and pred.score is not None and pred.score < threshold:
            pred.concept_ids = []
        return pred

    @staticmethod
    def apply(queries: Sequence[MentionQuery], predictions: Sequence[Prediction]) -> None:
        """Write predictions into the annotations (IDs, link score, candidates infon)."""
        for q, pred in zip(queries, predictions, strict=True):
            ann = q.annotation
            ann.concept_ids = list(pred.concept_ids)
            ann.no_id = False
            ann.link_score = None if pred.score is None else float(min(pred.score, 1.0))
            ann.composite_texts = pred.parts if pred.parts and len(pred.parts) == len(
                pred.concept_ids) else None
            ann.infons["candidates"] = pred.candidates

    def normalize(self, docs: Iterable[Document]) -> list[Document]:
        """Fill ``concept_ids``, ``link_score`` and ``infons['candidates']`` in place."""
        docs = list(docs)
        queries = self.queries(docs)
        predictions = self.rank(queries, [self.options.mode])[self.options.mode]
        self.apply(queries, predictions)
        return docs


def normalize_documents(documents: Iterable[Document], encoder: TextEncoder, kb,
                        mode: str = DEFAULT_MODE, training: Iterable[Document] | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        extra_synonyms: Iterable[tuple[str, str]] = (),
                        mentions: Iterable[tuple[str, str, str]] | None = None,
                        **options) -> list[Document]:
    """Normalize every annotation of ``documents`` (in place; also returned).

    ``training`` documents (and/or saved ``mentions`` triples) make up the D pool, needed by
    every mode that mentions D; without them D-searches find nothing and sieves fall through
    to their second search. ``options``
    are :class:`NormalizeOptions` fields (``top_k``, ``nil_threshold``, ``type_aware``,
    ``composite``, ``abbreviations``, ``lowercase``, ``punctuation``...).
    """
    opts = NormalizeOptions(mode=mode, **options)
    normalizer = Normalizer(encoder, kb, training, opts, cache_dir, extra_synonyms, mentions)
    return normalizer.normalize(documents)


__all__ = [
    "DEFAULT_MODE", "MODES", "ModelSettings", "NormalizeOptions", "Normalizer",
    "default_model_dir", "load_model", "normalize_documents", "read_mentions", "save_model",
    "write_mentions",
]
