"""``linker train-triplet CONFIG.yaml``: refine a text encoder with batch-hard triplets.

Xu & Bethard (2021): the encoder sees only names — ontology synonyms (Train:O) and, for
Train:OD, training-set mentions too, repeated so that |D| / |O| = 1/3 (the mentions are few
but are what the test set looks like). Batches are P concepts × K texts (every anchor has a
positive, see :mod:`e2e_linker.training.triplet_batching`) and the loss is the batch-hard soft-margin
triplet loss on Euclidean similarity (:mod:`e2e_linker.training.triplet_loss`).

The output is a normalizer model directory (``encoder/`` + ``normalizer.json``, see
:mod:`e2e_linker.normalizer.normalizer`) plus ``train_history.json`` with the loss curve.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from e2e_linker.errors import UserError
from e2e_linker.training.config import read_yaml_mapping, reject_unknown_keys


@dataclass
class TripletConfig:
    """Everything a triplet run needs; see configs/triplet_medic.yaml for a commented example."""

    output_dir: str = "runs/triplet"
    #: base encoder: a name, a Hugging Face folder, or a normalizer model directory
    encoder: str = "all-MiniLM-L6-v2"
    pooling: str = "mean"
    max_length: int = 32
    #: KB spec (data_tools.kb_loaders.load_kb): the ontology synonyms (O)
    kb: str = "medic"
    #: corpora whose mentions form D (empty: Train:O)
    train: list[str] = field(default_factory=list)
    #: keep only mentions of these types (None: all)
    mention_types: list[str] | None = None
    #: |D| / |O| after repeating the mentions (Xu & Bethard: 1/3)
    mention_ratio: float = 1 / 3
    #: keep at most this many ontology names per concept (None: all) — for large KBs on CPU
    max_names_per_concept: int | None = None
    #: drop ontology concepts that have a single name instead of pairing the name with itself
    drop_singletons: bool = False
    lowercase: bool = True
    punctuation: bool = True
    abbreviations: bool = True
    epochs: int = 1
    #: P: concepts per batch
    concepts_per_batch: int = 32
    #: K: texts per concept in a batch (at least 2)
    names_per_concept: int = 4
    lr: float = 2e-5
    #: train a rank-r LoRA adapter on a frozen base instead of all weights (None: full
    #: fine-tuning); the model directory then holds ``adapter/`` (~1 MB, peft's format)
    #: instead of ``encoder/``
    lora_rank: int | None = None
    lora_alpha: float = 32.0
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    similarity: str = "euclidean"
    max_steps: int | None = None
    seed: int = 13
    device: str | None = None
    num_threads: int | None = None
    #: the search mode recorded as the model's default
    search: str = "D-T+OD-T"
    log_every: int = 50

    @classmethod
    def from_yaml(cls, path: str | Path) -> TripletConfig:
        return cls.from_dict(read_yaml_mapping(path), str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> TripletConfig:
        reject_unknown_keys(cls, data, source)
        cfg = cls(**data)
        if cfg.names_per_concept < 2 or cfg.concepts_per_batch < 2:
            raise UserError(f"{source}: concepts_per_batch and names_per_concept must be ≥ 2")
        if cfg.pooling not in ("mean", "cls"):
            raise UserError(f"{source}: pooling must be 'mean' or 'cls'")
        return cfg

    def to_dict(self) -> dict:
        return asdict(self)


def training_examples(cfg: TripletConfig, kb=None, train_docs=None
                      ) -> tuple[list[str], list[int], dict]:
    """Texts and integer concept labels for training, plus counts for the log.

    O: every (capped) KB name of every concept. D: single-concept training mentions and the
    parts of composite mentions, repeated ``round(mention_ratio·|O| / |D|)`` times (at least
    once). Multi-concept labels are left out: a triplet needs one concept per text.
    """
    from data_tools.registry import load_corpus, load_kb
    from e2e_linker.lexical.text_forms import TextNormalizer
    from e2e_linker.normalizer.pools import training_triples

    text = TextNormalizer(cfg.lowercase, cfg.punctuation)
    if kb is None:
        try:
            kb = load_kb(cfg.kb)
        except FileNotFoundError as exc:
            raise UserError(f"KB '{cfg.kb}': {exc}") from exc
    pairs_o: list[tuple[str, str]] = []
    for concept in kb:
        names = concept.all_names()
        if cfg.max_names_per_concept:
            names = names[:cfg.max_names_per_concept]
        if cfg.drop_singletons and len(names) < 2:
            continue
        pairs_o.extend((text(n), concept.id) for n in names)
    if train_docs is None:
        train_docs = [d for spec in cfg.train for d in load_corpus(spec)]
    pairs_d = [(t, label) for t, label, _ in training_triples(
        train_docs, text, kb, cfg.abbreviations, cfg.mention_types) if "|" not in label]
    repeat = 0
    if pairs_d:
        repeat = max(1, round(cfg.mention_ratio * len(pairs_o) / len(pairs_d)))
    pairs = pairs_o + pairs_d * repeat
    label_ids: dict[str, int] = {}
    labels = [label_ids.setdefault(cid, len(label_ids)) for _, cid in pairs]
    stats = {"ontology_texts": len(pairs_o), "mention_texts": len(pairs_d),
             "mention_repeat": repeat, "texts": len(pairs), "concepts": len(label_ids)}
    return [t for t, _ in pairs], labels, stats


def _pick_device(device: str | None) -> str:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("device cuda asked for, but no CUDA device is available")
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def train_triplet(cfg: TripletConfig, kb=None, train_docs=None, progress: bool = True) -> dict:
    """Train, save the model directory, and return a summary (losses, counts, timing)."""
    import torch
    from tqdm.auto import tqdm

    from data_tools.registry import load_kb
    from e2e_linker.encoder.adapter import add_lora
    from e2e_linker.encoder.text_encoder import TextEncoder, resolve_encoder_path
    from e2e_linker.lexical.text_forms import TextNormalizer
    from e2e_linker.normalizer.normalizer_dir import (
        ADAPTER_DIR,
        ENCODER_DIR,
        MENTIONS_FILE,
        ModelSettings,
        save_model,
        write_mentions,
    )
    from e2e_linker.normalizer.pools import training_triples
    from e2e_linker.training.triplet_batching import pk_batches
    from e2e_linker.training.triplet_loss import batch_hard_soft_margin_loss

    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    device = _pick_device(cfg.device)
    if kb is None:
        try:
            kb = load_kb(cfg.kb)
        except FileNotFoundError as exc:
            raise UserError(f"KB '{cfg.kb}': {exc}") from exc
    if train_docs is None:
        from data_tools.registry import load_corpus

        train_docs = [d for spec in cfg.train for d in load_corpus(spec)]
    texts, labels, stats = training_examples(cfg, kb, train_docs)
    source = cfg.encoder
    if (Path(source) / ADAPTER_DIR).is_dir():
        raise UserError(f"{source}: training on top of an adapter model is not supported; "
                        "start from its base encoder")
    if (Path(source) / ENCODER_DIR).is_dir():
        source = str(Path(source) / ENCODER_DIR)
    encoder = TextEncoder.from_pretrained(source, pooling=cfg.pooling, max_length=cfg.max_length)
    if cfg.lora_rank:
        add_lora(encoder.model, cfg.lora_rank, cfg.lora_alpha)
    encoder.to(device).train()
    trainable = [p for p in encoder.parameters() if p.requires_grad]

    epochs_batches = [pk_batches(labels, cfg.concepts_per_batch, cfg.names_per_concept,
                                 seed=cfg.seed + e,
                                 singletons="drop" if cfg.drop_singletons else "duplicate")
                      for e in range(cfg.epochs)]
    total = sum(len(b) for b in epochs_batches)
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr,
                                  weight_decay=cfg.weight_decay)
    warmup = int(cfg.warmup_ratio * total)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    history: list[dict] = []
    step = 0
    start = time.time()
    bar = tqdm(total=total, desc="triplet training", unit="batch", disable=not progress)
    running = None
    for epoch, batches in enumerate(epochs_batches):
        for batch in batches:
            if step >= total:
                break
            batch_texts = [texts[i] for i in batch]
            batch_labels = torch.tensor([labels[i] for i in batch], device=device)
            vectors = encoder.embed_texts(batch_texts)
            loss = batch_hard_soft_margin_loss(vectors, batch_labels, cfg.similarity)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, cfg.max_grad_norm)
            optimizer.step()
            scheduler.step()
            value = float(loss.detach())
            running = value if running is None else 0.98 * running + 0.02 * value
            history.append({"step": step, "epoch": epoch, "loss": value})
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{running:.4f}")
            if progress and cfg.log_every and step % cfg.log_every == 0:
                bar.write(f"step {step}/{total} loss {running:.4f}")
    bar.close()
    encoder.eval()
    settings = ModelSettings(pooling=cfg.pooling, max_length=cfg.max_length, kb=cfg.kb,
                             kb_hash=kb.content_hash(), lowercase=cfg.lowercase,
                             punctuation=cfg.punctuation, search=cfg.search,
                             extra={"train": list(cfg.train), "base_encoder": cfg.encoder,
                                    "steps": step, "training_data": "OD" if train_docs else "O",
                                    "mentions": MENTIONS_FILE if train_docs else None})
    adapter = None
    if cfg.lora_rank:
        adapter = {"base": cfg.encoder, "base_folder": resolve_encoder_path(source),
                   "rank": cfg.lora_rank, "alpha": cfg.lora_alpha}
    out = save_model(encoder, cfg.output_dir, settings, adapter=adapter)
    if train_docs:  # the raw training mentions: the model's default D pool at search time
        raw = TextNormalizer(lowercase=False, punctuation=False)
        write_mentions(out / MENTIONS_FILE, training_triples(
            train_docs, raw, kb, cfg.abbreviations, cfg.mention_types))
    summary = {"steps": step, "seconds": round(time.time() - start, 1), **stats,
               "first_loss": _mean([h["loss"] for h in history[:20]]),
               "last_loss": _mean([h["loss"] for h in history[-20:]]),
               "config": cfg.to_dict(), "output_dir": str(out)}
    (out / "train_history.json").write_text(
        json.dumps({"summary": summary, "history": history}, indent=1) + "\n", encoding="utf-8")
    return summary


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan
