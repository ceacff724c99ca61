"""Training configuration for ``linker train CONFIG.yaml`` (see configs/bc5cdr.yaml)."""

from __future__ import annotations

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


@dataclass
class TrainConfig:
    """Data, KB, optimisation and schedule; ``model`` holds the architecture (LinkerConfig)."""

    output_dir: str = "runs/bc5cdr"
    train: list[str] = field(default_factory=lambda: ["bc5cdr:train"])
    dev: str | None = "bc5cdr:dev"
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
    #: SpecificDisease / DiseaseClass / Modifier / CompositeMention → Disease)
    type_map: dict[str, str] = field(default_factory=dict)
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
    thresholds: list[float] = field(default_factory=lambda: [0.3, 0.4, 0.5, 0.6, 0.7])
    #: γ written into the saved model instead of the best of ``thresholds`` (training-time
    #: validation links with the exact-name sieve and dense search only; annotate's full
    #: pipeline — sieves, lexical gate, document-level steps — may want another γ, chosen on
    #: dev by eval.setting_sweep); None: the validation's choice
    annotate_threshold: float | None = None
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
    model: LinkerConfig = field(default_factory=LinkerConfig)

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrainConfig:
        return cls.from_dict(read_yaml_mapping(path), str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> TrainConfig:
        reject_unknown_keys(cls, data, source)
        data = dict(data)
        data["model"] = LinkerConfig.from_dict(data.get("model") or {})
        return cls(**data)

    def to_dict(self) -> dict:
        return asdict(self)
