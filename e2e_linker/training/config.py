"""Training configuration for ``linker train CONFIG.yaml`` (see configs/bc5cdr.yaml)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from e2e_linker.collective.model import LinkerConfig
from e2e_linker.errors import UserError


def read_yaml_mapping(path: str | Path) -> dict:
    """A YAML config file as a dict; one clear UserError for bad YAML or a non-mapping file."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of options")
    return data


def reject_unknown_keys(cls: type, data: dict, source: str) -> None:
    """Refuse keys that are not fields of the dataclass ``cls``, so typos never pass silently."""
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise UserError(f"{source}: unknown keys {', '.join(sorted(unknown))}")


#: the keys of a corpus entry given as a mapping (``weight``: training corpora only)
CORPUS_KEYS = ("corpus", "types", "type_map", "weight", "exclude", "guideline")


@dataclass
class CorpusEntry:
    """One training or dev corpus of a config, resolved against the model's types.

    Why: corpora annotate different types (BC5CDR chemicals and diseases, GNormPlus genes
    only), so each one says which model types it annotates exhaustively (``types``), how its
    annotation types become model types (``type_map``; ``None``: annotated but not one of the
    model's types, so neither a positive nor a negative example) and how much of it an epoch
    trains on (``weight``: 1.0 each of its chunks once, 0.5 a seeded random half, 2.0 twice).
    ``exclude`` names corpora whose documents (by ID) are left out of this one: a document
    that two corpora annotate to two guidelines is taught once, and one that a dev or test
    set holds is never trained on. ``guideline`` names the guideline tag its chunks are read
    with, for a model trained with guideline tags (``model.guidelines``).
    """

    corpus: str
    types: tuple[str, ...]
    type_map: dict[str, str | None] = field(default_factory=dict)
    weight: float = 1.0
    #: the corpus annotates only some of the model's types
    partial: bool = False
    #: corpus specs whose document IDs are left out of this corpus
    exclude: tuple[str, ...] = ()
    #: the annotation guideline its text is tagged with (one of ``model.guidelines``; None:
    #: the model's default), :mod:`e2e_linker.collective.guidelines`
    guideline: str | None = None

    @property
    def renames(self) -> dict[str, str]:
        """The type renames applied to the corpus's annotations (not the ``None`` entries)."""
        return {k: v for k, v in self.type_map.items() if v is not None}

    @property
    def ignored_types(self) -> frozenset[str]:
        """Corpus annotation types whose spans are masked out of the mention loss."""
        return frozenset(k for k, v in self.type_map.items() if v is None)


def _check_type_map(value, model_types: Sequence[str], where: str) -> dict[str, str | None]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UserError(f"{where}: type_map must map corpus types to model types or null")
    for source, target in value.items():
        if target is not None and target not in model_types:
            raise UserError(f"{where}: type_map sends {source} to {target!r}, which is not one "
                            f"of model.types ({', '.join(model_types)}); map it to null to mask "
                            "such spans out of the mention loss")
    return dict(value)


def _check_types(value, model_types: Sequence[str], where: str) -> tuple[str, ...]:
    if value is None:
        return tuple(model_types)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value \
            or not all(isinstance(t, str) for t in value):
        raise UserError(f"{where}: types must be a non-empty list of model types")
    unknown = [t for t in value if t not in model_types]
    if unknown:
        raise UserError(f"{where}: types {', '.join(unknown)} not in model.types "
                        f"({', '.join(model_types)})")
    if len(set(value)) != len(value):
        raise UserError(f"{where}: types lists a type twice")
    return tuple(value)


def _check_weight(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise UserError(f"{where}: weight must be a positive number (the corpus's share of an "
                        f"epoch: 1.0 each chunk once, 0.5 a random half, 2 twice), not "
                        f"{value!r}; to leave a corpus out, remove its entry")
    return float(value)


def parse_corpus_entry(raw, model_types: Sequence[str], global_map: dict[str, str | None],
                       where: str, dev: bool = False) -> CorpusEntry:
    """A ``train``/``dev`` list entry — a corpus spec string, or a mapping of
    :data:`CORPUS_KEYS` — resolved: the config's global ``type_map`` applies first and the
    entry's own ``type_map`` overrides it; ``types`` defaults to all model types."""
    if isinstance(raw, str):
        if not raw.strip():
            raise UserError(f"{where}: empty corpus spec")
        return CorpusEntry(raw, tuple(model_types), dict(global_map))
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a corpus spec (e.g. bc5cdr:train) or a mapping "
                        f"with keys {', '.join(CORPUS_KEYS)}, not {raw!r}")
    allowed = set(CORPUS_KEYS) - ({"weight"} if dev else set())
    unknown = sorted(set(raw) - allowed)
    if unknown:
        why = " (dev corpora are not sampled: the selection metric is the plain mean over " \
              "them)" if dev and "weight" in unknown else ""
        raise UserError(f"{where}: unknown keys {', '.join(unknown)}; a corpus entry takes "
                        f"{', '.join(k for k in CORPUS_KEYS if k in allowed)}{why}")
    corpus = raw.get("corpus")
    if not isinstance(corpus, str) or not corpus.strip():
        raise UserError(f"{where}: a corpus entry needs 'corpus: NAME:SPLIT' (or a path)")
    where = f"{where} ({corpus})"
    types = _check_types(raw.get("types"), model_types, where)
    type_map = dict(global_map) | _check_type_map(raw.get("type_map"), model_types, where)
    weight = 1.0 if dev else _check_weight(raw.get("weight", 1.0), where)
    exclude = raw.get("exclude") or []
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(x, str) and x for x in exclude):
        raise UserError(f"{where}: exclude must be a list of corpus specs")
    guideline = raw.get("guideline")
    if guideline is not None and (not isinstance(guideline, str) or not guideline):
        raise UserError(f"{where}: guideline must be the name of one of model.guidelines")
    return CorpusEntry(corpus, types, type_map, weight, partial=set(types) != set(model_types),
                       exclude=tuple(exclude), guideline=guideline)


def held_out_reason(spec: str) -> str | None:
    """Why the corpus ``spec`` may not be trained on, selected on or mined for names (None:
    it may): test splits are for the final scores, and BioRED dev is the out-of-domain dev
    set, evaluated on its own (issue 29) so that it keeps measuring text not tuned on."""
    name, _, split = spec.partition(":")
    if split == "test" and not Path(spec).exists():
        return "a test split is held out for the final scores"
    if name == "biored" and split == "dev" and not Path(spec).exists():
        return ("BioRED dev is the out-of-domain dev set: never trained on, selected on or "
                "mined; it is a row of the dev table (python -m eval.ood_dev)")
    return None


@dataclass
class TrainConfig:
    """Data, KB, optimisation and schedule; ``model`` holds the architecture (LinkerConfig)."""

    output_dir: str = "runs/bc5cdr"
    #: training corpora: specs (``bc5cdr:train``) or mappings ``{corpus, types, type_map,
    #: weight}`` for corpora that annotate only some of the model's types (:class:`CorpusEntry`)
    train: list[str | dict] = field(default_factory=lambda: ["bc5cdr:train"])
    #: the dev corpus, or a list of entries like ``train``'s (no ``weight``): each is scored on
    #: its own ``types`` and the epoch is selected by the mean strict F1 over them
    dev: str | list[str | dict] | None = "bc5cdr:dev"
    #: a model directory whose encoder and heads are the starting point (type-head rows are
    #: matched by type name: a new type starts fresh); None: the pretrained ``model.encoder``
    init_from: str | None = None
    #: KB spec for the saved model (annotate time) — see data_tools.kb_loaders.load_kb
    kb: str = "bc5cdr"
    #: smaller KB spec for hard negatives and dev validation during training (None: ``kb``)
    train_kb: str | None = None
    #: corpora whose annotation texts are added to the KB as names (saved with the model)
    kb_corpus_names: list[str] = field(default_factory=lambda: ["bc5cdr:train", "bc5cdr:dev"])
    #: corpora mined for names during training and dev validation (never the dev set itself,
    #: so that validation does not see its own answers)
    train_kb_corpus_names: list[str] = field(default_factory=lambda: ["bc5cdr:train"])
    max_names_per_concept: int | None = None
    #: corpus annotation types renamed before training and validation, so a corpus whose
    #: classes are finer than the KB's types trains one model type (NCBI disease's
    #: SpecificDisease / DiseaseClass / Modifier / CompositeMention → Disease); applied to
    #: every corpus, under each corpus entry's own ``type_map``
    type_map: dict[str, str | None] = field(default_factory=dict)
    epochs: int = 4
    batch_size: int = 4
    lr: float = 5e-5
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    n_random: int = 10
    n_hard: int = 10
    names_per_concept: int = 2
    max_mentions_per_chunk: int = 64
    train_max_length: int = 512
    linking_weight: float = 1.0
    mention_weight: float = 1.0
    type_weight: float = 0.5
    #: the mention loss's weight on a gold span the model scores below
    #: ``missed_positive_below`` at that step (1.0: plain BCE; collective_losses.py:
    #: missed_positive_weights says why)
    missed_positive_weight: float = 1.0
    missed_positive_below: float = 0.25
    thresholds: list[float] = field(default_factory=lambda: [0.3, 0.4, 0.5, 0.6, 0.7])
    #: γ written into the saved model instead of the best of ``thresholds`` (training-time
    #: validation links with the exact-name sieve and dense search only; annotate's full
    #: pipeline — sieves, lexical gate, document-level steps — may want another γ, chosen on
    #: dev by eval.setting_sweep); None: the validation's choice
    annotate_threshold: float | None = None
    #: the longest span (word pieces) the saved model scores when it annotates, instead of
    #: ``model.max_span_len`` (the span score has no width term, so spans longer than those
    #: trained on can be scored; the dev table chose the value, docs/decisions/0009-span-length.md); None: the same
    annotate_max_span_len: int | None = None
    max_train_docs: int | None = None
    max_dev_docs: int | None = None
    seed: int = 13
    device: str | None = None
    mixed_precision: str = "auto"  # "auto": bf16 on CUDA, none on CPU
    num_threads: int | None = None
    cache_dir: str | None = None
    save_half: bool = False
    #: minutes between the resumable saves within an epoch (one is also made at every epoch
    #: end); an interrupted `linker train` loses at most this much work
    checkpoint_minutes: float = 10.0
    #: also save each validated epoch's model to ``output_dir/epoch_N`` (each a model
    #: directory), so that any epoch can be chosen afterwards on the whole dev table
    keep_epochs: bool = False
    model: LinkerConfig = field(default_factory=LinkerConfig)

    def __post_init__(self) -> None:
        """Check the corpus entries now, so a bad one stops the run before any loading."""
        train, dev = self.train_corpora(), self.dev_corpora()
        for key, specs in (("train", [e.corpus for e in train]), ("dev", [e.corpus for e in dev]),
                           ("kb_corpus_names", self.kb_corpus_names or []),
                           ("train_kb_corpus_names", self.train_kb_corpus_names or [])):
            for spec in specs:
                reason = held_out_reason(spec)
                if reason:
                    raise UserError(f"{key}: {spec} is not allowed here: {reason}")
        for entry in train + dev:
            if entry.guideline is not None and entry.guideline not in self.model.guidelines:
                raise UserError(f"{entry.corpus}: guideline {entry.guideline!r} is not one of "
                                f"model.guidelines ({', '.join(self.model.guidelines) or 'none'})")
        if self.model.guidelines and self.model.default_guideline is None \
                and any(e.guideline is None for e in train + dev):
            raise UserError("model.guidelines is set: give every corpus entry a guideline, or "
                            "set model.default_guideline")
        if not self.missed_positive_weight > 0 or not 0 < self.missed_positive_below < 1:
            raise UserError("missed_positive_weight must be a positive number (1.0: plain BCE) "
                            "and missed_positive_below a probability between 0 and 1, not "
                            f"{self.missed_positive_weight!r} and {self.missed_positive_below!r}")
        partial = [e.corpus for e in train if e.partial]
        if partial and self.model.mention_head == "bio":
            raise UserError(
                f"train: {', '.join(partial)} annotate only some of model.types, which the BIO "
                "head cannot train on: it tags tokens as in or out of a mention without a type, "
                "so it has no way to count an unannotated span as possibly a mention of "
                "another type; use mention_head: exhaustive, or list all model types")

    def train_corpora(self) -> list[CorpusEntry]:
        """The ``train`` entries resolved (a single spec string counts as a one-item list)."""
        raw = [self.train] if isinstance(self.train, str | dict) else list(self.train or [])
        return [parse_corpus_entry(r, self.model.types, self.type_map, f"train[{n}]")
                for n, r in enumerate(raw)]

    def dev_corpora(self) -> list[CorpusEntry]:
        """The ``dev`` entries resolved (none without dev)."""
        if self.dev is None:
            return []
        raw = [self.dev] if isinstance(self.dev, str | dict) else list(self.dev)
        return [parse_corpus_entry(r, self.model.types, self.type_map, f"dev[{n}]", dev=True)
                for n, r in enumerate(raw)]

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrainConfig:
        return cls.from_dict(read_yaml_mapping(path), str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> TrainConfig:
        reject_unknown_keys(cls, data, source)
        data = dict(data)
        data["model"] = LinkerConfig.from_dict(data.get("model") or {})
        try:
            return cls(**data)
        except UserError as exc:
            raise UserError(f"{source}: {exc}") from exc

    def to_dict(self) -> dict:
        return asdict(self)
