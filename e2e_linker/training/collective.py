"""``linker train``: joint mention + linking training of the collective dual encoder.

Each epoch: (1) encode the training KB with the current entity encoder; (2) validate on dev
with that index (strict F1 over a threshold sweep) and keep the best checkpoint; (3) mine hard
negatives — the nearest KB names to each gold mention's current span vector — and (4) train
on chunks with mention BCE + type CE + linking CE. Per batch, every mention is scored against
the union of its batch's candidate names (gold names, its hard negatives, shared random
negatives) encoded live by the entity encoder, so the entity side learns too.

Several corpora (``train`` entries with ``types``, ``type_map``, ``weight``; see
:class:`~e2e_linker.training.config.CorpusEntry`): each epoch draws every corpus's chunks by its
weight (:func:`~e2e_linker.training.examples.epoch_examples`) and shuffles them together, so a
batch mixes corpora; a chunk whose corpus annotates only some types takes the partial-label
mention loss (:mod:`~e2e_linker.training.collective_losses`); dev may be several corpora, each
scored on its own types, the epoch chosen by their mean strict F1. ``init_from`` starts from a
trained model (:mod:`~e2e_linker.training.warm_start`).

Data-parallel (``accelerate launch -m e2e_linker train CONFIG.yaml``): every batch of
``batch_size`` chunks is split over the processes (process ``i`` takes chunks ``i, i+N, ...``),
so the number of steps and the schedule do not change. Each process draws the batch's
candidate names for the *whole* batch (the same random draws everywhere), scales each loss
term by its share of the batch's count (gold spans, mentions, linkable mentions), and the
gradients are summed across processes before clipping: the update is that of one process on
the whole batch, up to floating-point noise (and dropout masks, which are drawn per process).
The index refresh and hard-negative mining run once, on the main process (the frozen tower's
KB vectors are cached by it and memory-mapped by the others), and the hard negatives are
broadcast; dev validation and checkpoints are the main process's alone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from data_tools.documents import FormatError
from data_tools.registry import get_dataset, load_corpus
from e2e_linker.collective.annotator import Annotator, attach_annotations, model_directory
from e2e_linker.collective.batches import collate_chunks
from e2e_linker.collective.guidelines import guideline_prefix
from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.collective.model_kb import assemble_model_kb, save_model_kb
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.collective.span_scorer import BIO_TAGS, span_validity
from e2e_linker.collective.span_selection import resolve_overlaps
from e2e_linker.errors import UserError
from e2e_linker.jobs.distributed import PROCESS_GROUP_TIMEOUT, World, init_world
from e2e_linker.kb_search.entity_index import EntityIndex, kb_names
from e2e_linker.lexical.sieves import NameDictionary
from e2e_linker.training.checkpoint import (
    TrainingState,
    discard_training_state,
    load_training_state,
    save_training_state,
    saved_state_exists,
)
from e2e_linker.training.collective_losses import (
    all_span_type_logits,
    linking_ce,
    mention_bce,
    mention_loss,
    missed_positive_weights,
)
from e2e_linker.training.config import CorpusEntry, TrainConfig
from e2e_linker.training.examples import (
    ChunkExample,
    build_examples,
    epoch_examples,
    epoch_size,
)
from e2e_linker.training.guideline_tags import attach_tags, fold_tags
from e2e_linker.training.warm_start import warm_start

#: the loss terms, in the order their counts and values are exchanged between processes
LOSS_TERMS = ("mention", "type", "linking")


def _log(msg: str) -> None:
    tqdm.write(f"[train {time.strftime('%H:%M:%S')}] {msg}")


def gold_tensors(examples: list[ChunkExample], length: int, max_span_len: int, bio: bool):
    """Mention targets for a batch: span labels (B, T, L) or BIO tags (B, T)."""
    if bio:
        tags = torch.zeros((len(examples), length), dtype=torch.long)
        for b, ex in enumerate(examples):
            for s in ex.spans:
                tags[b, s.i] = BIO_TAGS.index("B")
                tags[b, s.i + 1: s.j + 1] = BIO_TAGS.index("I")
        return tags
    gold = torch.zeros((len(examples), length, max_span_len), dtype=torch.bool)
    for b, ex in enumerate(examples):
        for s in ex.spans:
            gold[b, s.i, s.j - s.i] = True
    return gold


def ignore_tensors(examples: list[ChunkExample], length: int, max_span_len: int,
                   bio: bool) -> torch.Tensor | None:
    """What the mention loss leaves out for a batch: the ignore spans (B, T, L), or for the
    BIO head their tokens (B, T), never a gold span or token; None when there are none."""
    if not any(ex.ignore for ex in examples):
        return None
    if bio:
        out = torch.zeros((len(examples), length), dtype=torch.bool)
        for b, ex in enumerate(examples):
            for i, j in ex.ignore:
                out[b, i:j + 1] = True
            for s in ex.spans:
                out[b, s.i:s.j + 1] = False
        return out
    out = torch.zeros((len(examples), length, max_span_len), dtype=torch.bool)
    for b, ex in enumerate(examples):
        for i, j in ex.ignore:
            out[b, i, j - i] = True
        for s in ex.spans:
            out[b, s.i, s.j - s.i] = False
    return out


def evaluate_dev(model: CollectiveLinker, index: EntityIndex, names: NameDictionary,
                 dev_docs, thresholds: list[float], batch_size: int = 16,
                 types: Collection[str] | None = None, guideline: str | None = None) -> dict:
    """Strict/partial F1 on dev for each threshold (one detection pass at the lowest);
    with ``types``, predictions of other types are dropped (after overlaps are resolved)
    before scoring, for a dev corpus that annotates only those; ``guideline``: the tag its
    text is read with (None: the model's default)."""
    from e2e_linker.scoring import score

    settings = AnnotateSettings(threshold=min(thresholds), batch_size=batch_size)
    pipeline = dataclasses.replace(
        settings.for_model(model.config).resolved_pipeline(model.config,
                                                           model_directory(model)),
        guideline=guideline)
    annotator = Annotator.from_parts(model, index, names, settings, pipeline=pipeline)
    spans, _ = annotator.detect(dev_docs, resolve=False)
    annotations = annotator.link(spans, dev_docs)
    results = {}
    for gamma in thresholds:
        keep = [k for k, s in enumerate(spans) if s.mention_score > gamma]
        kept_spans = resolve_overlaps([spans[k] for k in keep])
        chosen = {id(s) for s in kept_spans}
        pairs = [(spans[k], annotations[k]) for k in keep if id(spans[k]) in chosen
                 and (types is None or spans[k].type in types)]
        pred = attach_annotations(dev_docs, [p[0] for p in pairs], [p[1] for p in pairs], True)
        strict = score(dev_docs, pred, mode="strict")
        mentions = score(dev_docs, pred, mode="mentions")
        results[gamma] = {"strict_f1": strict.f1, "strict_p": strict.precision,
                          "strict_r": strict.recall, "mention_f1": mentions.f1}
    return results


def rename_types(docs, type_map: dict[str, str]) -> int:
    """Rename the annotation types of ``docs`` in place by ``type_map``; how many changed."""
    changed = 0
    for doc in docs:
        for ann in doc.annotations:
            if ann.type in type_map:
                ann.type = type_map[ann.type]
                changed += 1
    return changed


def restrict_dev_gold(docs, entry: CorpusEntry, model_types: Sequence[str]) -> int:
    """Drop, in place, the gold annotations a dev corpus is not scored on: its ``None``-mapped
    types and the model types it does not annotate; how many were dropped. (Annotations of
    types the model does not know stay, as for a single dev corpus: they count as misses.)"""
    drop = set(entry.ignored_types) | (set(model_types) - set(entry.types))
    dropped = 0
    for doc in docs:
        for passage in doc.passages:
            kept = [a for a in passage.annotations if a.type not in drop]
            dropped += len(passage.annotations) - len(kept)
            passage.annotations = kept
    return dropped


def declared_types(spec: str) -> list[str] | None:
    """The model types the dataset registry says the corpus split ``spec`` annotates (None:
    a path, or a split the registry cannot define here)."""
    if ":" not in spec or Path(spec).exists():
        return None
    try:
        dataset = get_dataset(*spec.split(":", 1))
    except (FormatError, FileNotFoundError):
        return None
    return list(dataset.entity_types) or None


def leave_out_excluded(entry: CorpusEntry, docs: list) -> list:
    """``docs`` less those whose ID a corpus in ``entry.exclude`` also holds (logged)."""
    if not entry.exclude:
        return docs
    held = {d.id for spec in entry.exclude for d in load_corpus(spec)}
    kept = [d for d in docs if d.id not in held]
    _log(f"{entry.corpus}: {len(docs) - len(kept)} of {len(docs)} documents left out "
         f"(also in {', '.join(entry.exclude)})")
    return kept


def mean_over_corpora(per_corpus: dict[str, dict]) -> dict:
    """Per threshold, the mean of each metric over the dev corpora (the selection metric is
    the mean strict F1, so a small dev corpus counts as much as a large one)."""
    first = next(iter(per_corpus.values()))
    out = {}
    for gamma in first:
        rows = [results[gamma] for results in per_corpus.values()]
        out[gamma] = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    return out


@torch.inference_mode()
def tagging_f1(model: CollectiveLinker, examples: list[ChunkExample],
               batch_size: int = 16) -> float:
    """seqeval's mention-level F1 of the BIO head's argmax tags against the gold tags, over
    the tokens each chunk owns: the tagger's own score, before thresholds, overlaps and
    linking (the paper's Table 7 reports the BIO variant; this is its tagging quality).
    Gold mentions longer than ``max_span_len`` tokens are left out, as in training."""
    from seqeval.metrics import f1_score

    model.eval()
    gold_seqs: list[list[str]] = []
    pred_seqs: list[list[str]] = []
    names = [f"{t}-MENTION" if t != "O" else "O" for t in BIO_TAGS]
    for start in range(0, len(examples), batch_size):
        group = examples[start:start + batch_size]
        batch = collate_chunks([e.chunk for e in group], model.tokenizer.pad_token_id or 0,
                               model.device)
        length = batch["input_ids"].shape[1]
        gold = gold_tensors(group, length, model.config.max_span_len, bio=True)
        pred = model.span_scorer(model.token_states(batch)).argmax(-1).cpu()
        mask = (batch["owned"] & batch["attention_mask"].bool()).cpu()
        for b in range(len(group)):
            keep = mask[b]
            gold_seqs.append([names[t] for t in gold[b][keep].tolist()])
            pred_seqs.append([names[t] for t in pred[b][keep].tolist()])
    return float(f1_score(gold_seqs, pred_seqs))


class NameTable:
    """The index's names and concept IDs without vectors: what a process other than the main
    one needs of a re-encoded (unfrozen) index, whose vectors only the main process uses."""

    def __init__(self, kb, max_names_per_concept: int | None = None):
        pairs = kb_names(kb, max_names_per_concept)
        self.names = [n for n, _ in pairs]
        self.concept_ids = [c for _, c in pairs]

    def __len__(self) -> int:
        return len(self.names)


def sum_across(world: World, values: torch.Tensor) -> torch.Tensor:
    """``values`` summed over the processes (in place; unchanged with one process)."""
    if world.distributed:
        import torch.distributed as dist

        dist.all_reduce(values)
    return values


class CollectiveTrainer:
    """Holds the model, data, KB index and optimiser for one training run."""

    def __init__(self, cfg: TrainConfig, train_docs=None, dev_docs=None, kb=None, extra=None,
                 model: CollectiveLinker | None = None, resume: bool = True):
        """Data, KB and model come from ``cfg`` unless passed in (tests, notebooks). With
        ``resume``, a state left in ``cfg.output_dir/resume`` by an interrupted run with the
        same config is continued; without, it is discarded and the run starts over."""
        from accelerate import Accelerator, DataLoaderConfiguration, InitProcessGroupKwargs

        self.cfg = cfg
        self._given = {"train_docs": train_docs, "dev_docs": dev_docs, "kb": kb,
                       "extra": extra, "model": model}
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        use_cpu = cfg.device == "cpu" or not torch.cuda.is_available()
        precision = cfg.mixed_precision
        if precision == "auto":
            precision = "no" if use_cpu else "bf16"
        # split_batches: a step is one batch of cfg.batch_size chunks whatever the process
        # count, so the scheduler steps once per step
        self.accelerator = Accelerator(
            cpu=use_cpu, mixed_precision=precision,
            dataloader_config=DataLoaderConfiguration(split_batches=True),
            kwargs_handlers=[InitProcessGroupKwargs(timeout=PROCESS_GROUP_TIMEOUT)])
        self.world = init_world("cpu" if use_cpu else "cuda")  # cores // processes threads
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        self.out = Path(cfg.output_dir)
        self.resume = resume

    # ---- data ---------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load corpora, KBs (the linking KB and the training KB, each with mined names) and
        the model, and cut the training documents into chunk examples."""
        cfg = self.cfg
        given = self._given
        train_entries, dev_entries = cfg.train_corpora(), cfg.dev_corpora()
        if given["train_docs"] is not None:
            train_sets = self._given_sets(given["train_docs"], train_entries, "train")
            dev_sets = self._given_sets(given["dev_docs"] or [], dev_entries, "dev")
        else:
            _log(f"loading corpora {[e.corpus for e in train_entries]} / "
                 f"{[e.corpus for e in dev_entries]}")
            train_sets = [(e, load_corpus(e.corpus, cfg.max_train_docs)) for e in train_entries]
            for entry in train_entries:
                declared = declared_types(entry.corpus)
                if declared and not entry.partial and not set(entry.types) <= set(declared):
                    _log(f"WARNING: {entry.corpus} annotates {', '.join(declared)} (dataset "
                         f"registry) but is trained as annotating {', '.join(entry.types)}: "
                         "its unannotated spans are taught as non-mentions of every type; "
                         f"if that is wrong, give its entry types: [{', '.join(declared)}]")
            dev_sets = [(e, load_corpus(e.corpus, cfg.max_dev_docs)) for e in dev_entries]
            train_sets = [(e, leave_out_excluded(e, docs)) for e, docs in train_sets]
            dev_sets = [(e, leave_out_excluded(e, docs)) for e, docs in dev_sets]
        for entry, docs in train_sets + dev_sets:
            if entry.renames:
                renamed = rename_types(docs, entry.renames)
                _log(f"{entry.corpus}: renamed {renamed} annotation types ({entry.renames})")
        for entry, docs in dev_sets:
            if entry.partial or entry.ignored_types:
                dropped = restrict_dev_gold(docs, entry, cfg.model.types)
                _log(f"{entry.corpus}: scored on {', '.join(entry.types)} only ({dropped} "
                     "gold annotations of other types left out)")
        self.train_docs = [d for _, docs in train_sets for d in docs]
        self.dev_docs = [d for _, docs in dev_sets for d in docs]
        #: (entry, documents) of each dev corpus, validated one by one
        self.dev_sets = [(entry, docs) for entry, docs in dev_sets if docs]
        if given["kb"] is not None:
            self.extra = given["extra"]
            self.kb = self.train_kb = given["kb"]
        else:
            _log(f"loading KB '{cfg.kb}' + names from {cfg.kb_corpus_names}")
            self.extra, self.kb = assemble_model_kb(cfg.kb, cfg.kb_corpus_names)
            _, self.train_kb = assemble_model_kb(cfg.train_kb or cfg.kb,
                                                 cfg.train_kb_corpus_names)
        _log(f"KB {len(self.kb)} concepts; training KB {len(self.train_kb)} concepts")
        if given["model"] is not None:
            self.model = given["model"]
        elif cfg.init_from:
            _log(f"starting from the model in {cfg.init_from}")
            self.model = warm_start(cfg.model, cfg.init_from)
        else:
            self.model = CollectiveLinker.from_encoder(cfg.model)
        self.tokenizer = self.model.tokenizer
        if cfg.model.guidelines:  # the tags' rows learnt at the heads' rate (guideline_tags)
            attach_tags(self.model, [
                guideline_prefix(self.tokenizer, cfg.model.guidelines, None, name)[0]
                for name in cfg.model.guidelines])
        known = set(self.train_kb.concepts)
        self.examples = []
        #: examples per training corpus (consecutive in ``examples``) and each one's weight
        self.corpus_sizes: list[int] = []
        self.corpus_weights = [entry.weight for entry, _ in train_sets]
        for c, (entry, docs) in enumerate(train_sets):
            examples, stats = build_examples(
                docs, self.tokenizer, cfg.model.types, known, cfg.train_max_length,
                cfg.model.max_span_len, cfg.model.chunk_overlap, cfg.max_mentions_per_chunk,
                annotated=entry.types, ignore_types=entry.ignored_types, corpus=c,
                prefix_ids=guideline_prefix(self.tokenizer, cfg.model.guidelines,
                                            cfg.model.default_guideline, entry.guideline))
            if not stats["unknown_types"]:
                del stats["unknown_types"]
            what = f"annotates {', '.join(entry.types)}; " if entry.partial else ""
            _log(f"{entry.corpus}: {len(examples)} training chunks ({what}weight "
                 f"{entry.weight:g}); mention stats {stats}")
            self.examples.extend(examples)
            self.corpus_sizes.append(len(examples))
        self.dev_examples = build_examples(
            self.dev_docs, self.tokenizer, cfg.model.types, None, cfg.model.max_length,
            cfg.model.max_span_len, cfg.model.chunk_overlap, 10**9)[0] \
            if cfg.model.mention_head == "bio" else []
        self.names_dict = NameDictionary.from_kb(self.train_kb)

    def _given_sets(self, docs, entries: list[CorpusEntry], what: str
                    ) -> list[tuple[CorpusEntry, list]]:
        """Documents passed in (tests, notebooks) paired with the config's corpus entries:
        a mapping from each entry's corpus spec to its documents, or one list of documents
        (the one entry's, or a corpus annotating every type when there are several)."""
        if isinstance(docs, dict):
            missing = [e.corpus for e in entries if e.corpus not in docs]
            if missing:
                raise UserError(f"no {what} documents given for {', '.join(missing)}")
            return [(e, list(docs[e.corpus])) for e in entries]
        docs = list(docs)
        if len(entries) == 1:
            return [(entries[0], docs)]
        if not docs:
            return []
        return [(CorpusEntry(what, tuple(self.cfg.model.types), dict(self.cfg.type_map)), docs)]

    # ---- index and hard negatives -----------------------------------------------------------
    @property
    def frozen(self) -> bool:
        return self.model.config.freeze_entity_encoder

    def refresh_index(self) -> EntityIndex:
        """The training KB's index: re-encoded each epoch, or built once (and cached to disk)
        when the entity tower is frozen."""
        self.model.eval()
        if self.frozen and getattr(self, "_index", None) is not None:
            return self._index
        if self.frozen:  # encoded and cached once by the main process, memory-mapped by all
            with self.world.main_process_first():
                index = EntityIndex.build(self.train_kb, self.model.entity_encoder,
                                          cache_dir=self.cfg.cache_dir,
                                          progress=self.world.is_main,
                                          max_names_per_concept=self.cfg.max_names_per_concept)
            self._index = index
        elif not self.world.is_main:  # only the main process searches a re-encoded index
            index = NameTable(self.train_kb, self.cfg.max_names_per_concept)
        else:
            index = EntityIndex.build(self.train_kb, self.model.entity_encoder, cache_dir=False,
                                      batch_size=512, progress=True,
                                      max_names_per_concept=self.cfg.max_names_per_concept)
        self.name_rows: dict[str, list[int]] = {}
        for row, cid in enumerate(index.concept_ids):
            self.name_rows.setdefault(cid, []).append(row)
        return index

    @torch.inference_mode()
    def mine_hard_negatives(self, index: EntityIndex) -> dict[tuple[int, int], list[int]]:
        """Nearest names of other concepts for each linkable gold span: (example, span) → rows."""
        model = self.model.eval()
        device = self.accelerator.device
        keys, vecs = [], []
        for start in tqdm(range(0, len(self.examples), 16), desc="hard negatives", unit="batch"):
            group = self.examples[start:start + 16]
            batch = collate_chunks([e.chunk for e in group], self.tokenizer.pad_token_id, device)
            states = model.token_states(batch)
            b, i, j = [], [], []
            for k, ex in enumerate(group):
                for n, s in enumerate(ex.spans):
                    if s.concept_id is not None:
                        b.append(k)
                        i.append(s.i)
                        j.append(s.j)
                        keys.append((start + k, n))
            if b:
                v = model.span_vectors(states, torch.tensor(b, device=device),
                                       torch.tensor(i, device=device), torch.tensor(j, device=device))
                vecs.append(v.float().cpu().numpy())
        hard: dict[tuple[int, int], list[int]] = {}
        if not keys:
            return hard
        _, idx = index.search(np.concatenate(vecs), self.cfg.n_hard * 4 + 8)
        for key, row in zip(keys, idx, strict=True):
            gold = self.examples[key[0]].spans[key[1]].concept_id
            negs = [int(r) for r in row if r >= 0 and index.concept_ids[r] != gold]
            hard[key] = negs[: self.cfg.n_hard]
        return hard

    # ---- one batch ------------------------------------------------------------------------
    def candidate_rows(self, batch_ids: list[int], index, hard) -> list[int]:
        """Index rows of the batch's candidate names: each linkable mention's own names (all
        of them with a frozen tower, else a sample), its hard negatives, and random names.

        Drawn for the whole batch, so that with several processes every process scores its
        share of the mentions against the same candidates a single process would (all of
        them make the same draws from the same seed).
        """
        cfg = self.cfg
        rows: list[int] = []
        linkable = False
        for k in batch_ids:
            for n, s in enumerate(self.examples[k].spans):
                if s.concept_id is None or s.concept_id not in self.name_rows:
                    continue
                linkable = True
                own = self.name_rows[s.concept_id]
                n_pos = len(own) if self.frozen else cfg.names_per_concept
                rows.extend(random.sample(own, min(n_pos, len(own))))
                rows.extend(hard.get((k, n), []))
        if not linkable:
            return []
        n_rand = min(len(index), cfg.n_random * max(1, len(batch_ids)))
        rows.extend(random.sample(range(len(index)), n_rand))
        return sorted(set(rows))

    def batch_loss(self, batch_ids: list[int], index, hard, rows: list[int] | None = None
                   ) -> tuple[dict[str, torch.Tensor], dict[str, int]]:
        """The loss terms of ``batch_ids`` and what each one is averaged over (gold spans or
        tagged tokens, mentions, linkable mentions); ``rows`` are the candidate names (by
        default :meth:`candidate_rows` of these chunks)."""
        cfg = self.cfg
        if rows is None:
            rows = self.candidate_rows(batch_ids, index, hard)
        model = self.model
        device = self.accelerator.device
        examples = [self.examples[k] for k in batch_ids]
        batch = collate_chunks([e.chunk for e in examples], self.tokenizer.pad_token_id, device)
        length = batch["input_ids"].shape[1]
        states = model.token_states(batch)
        losses: dict[str, torch.Tensor] = {}
        counts: dict[str, int] = {}
        bio = cfg.model.mention_head == "bio"
        gold = gold_tensors(examples, length, cfg.model.max_span_len, bio).to(device)
        ignore = ignore_tensors(examples, length, cfg.model.max_span_len, bio)
        if bio:
            logits = model.span_scorer(states)
            mask = batch["attention_mask"].bool() & (batch["segment"] >= 0)
            if ignore is not None:
                mask &= ~ignore.to(device)
            losses["mention"] = torch.nn.functional.cross_entropy(logits[mask], gold[mask])
            counts["mention"] = int(mask.sum())
        else:
            valid = span_validity(batch["attention_mask"], batch["word_start"], batch["word_end"],
                                  batch["segment"], batch["owned"], cfg.model.max_span_len)
            valid |= gold
            if ignore is not None:
                valid &= ~ignore.to(device)
            logits = model.span_scorer(states, valid)
            weights = None if cfg.missed_positive_weight == 1.0 else missed_positive_weights(
                logits, gold, cfg.missed_positive_below, cfg.missed_positive_weight)
            partial_rows = [k for k, ex in enumerate(examples) if ex.partial]
            if partial_rows:  # the type head's logits of every span of those chunks
                where = torch.tensor(partial_rows, device=device)
                partial = torch.zeros(len(examples), dtype=torch.bool, device=device)
                partial[where] = True
                annotated = torch.tensor([examples[k].annotated for k in partial_rows],
                                         dtype=torch.bool, device=device)
                type_logits = all_span_type_logits(states[where], model.type_head,
                                                   cfg.model.max_span_len)
                losses["mention"] = mention_loss(logits, valid, gold, partial, type_logits,
                                                 annotated, weights)
            else:  # every chunk's corpus annotates every type: plain BCE, as always
                losses["mention"] = mention_bce(logits, valid, gold, weights)
            counts["mention"] = int(gold.sum())
        b, i, j, t, cids = [], [], [], [], []
        for k, ex in enumerate(examples):
            for s in ex.spans:
                b.append(k)
                i.append(s.i)
                j.append(s.j)
                t.append(s.type_index)
                cids.append(s.concept_id)
        if not b:
            return losses, counts
        vecs = model.span_vectors(states, torch.tensor(b, device=device),
                                  torch.tensor(i, device=device), torch.tensor(j, device=device))
        losses["type"] = torch.nn.functional.cross_entropy(
            model.type_logits(vecs), torch.tensor(t, device=device))
        counts["type"] = len(b)
        link = [m for m, c in enumerate(cids) if c is not None and c in self.name_rows]
        if link:
            if self.frozen:  # cached vectors, no gradient into the entity tower
                cand = torch.from_numpy(np.asarray(index.vectors[rows], dtype=np.float32)).to(device)
            else:
                cand = model.embed_names([index.names[r] for r in rows])
            cand_cids = [index.concept_ids[r] for r in rows]
            positive = torch.tensor([[c == cids[m] for c in cand_cids] for m in link],
                                    device=device)
            losses["linking"] = linking_ce(vecs[link], cand, positive)
            counts["linking"] = len(link)
        return losses, counts

    def validate(self, index) -> tuple[dict, dict[str, dict] | None]:
        """Dev results per threshold (:func:`evaluate_dev`): of the one dev corpus, or, for a
        list of dev corpora, their mean with each one's own results beside it (keyed by
        corpus spec). Each corpus is scored on the types it annotates only."""
        cfg = self.cfg
        if len(self.dev_sets) == 1 and not isinstance(cfg.dev, list | dict):
            return evaluate_dev(self.model, index, self.names_dict, self.dev_sets[0][1],
                                cfg.thresholds), None
        per_corpus: dict[str, dict] = {}
        for entry, docs in self.dev_sets:
            name = entry.corpus
            if name in per_corpus:
                name = f"{name} [{', '.join(entry.types)}]"
            per_corpus[name] = evaluate_dev(self.model, index, self.names_dict, docs,
                                            cfg.thresholds,
                                            types=set(entry.types) if entry.partial else None,
                                            guideline=entry.guideline)
        return mean_over_corpora(per_corpus), per_corpus

    def _share_of_batch(self, losses: dict[str, torch.Tensor],
                        counts: dict[str, int]) -> tuple[dict[str, torch.Tensor], list[float]]:
        """Each local loss term rescaled from "mean over my part" to "my part of the mean over
        the whole batch", so the terms summed over processes are the one-process terms.
        Also returns the batch's total counts per term (a term is absent where it is 0)."""
        device = self.accelerator.device
        local = torch.tensor([float(counts.get(k, 0)) for k in LOSS_TERMS], device=device)
        total = sum_across(self.world, local.clone()).tolist()
        scaled = {k: v * (max(local[LOSS_TERMS.index(k)].item(), 1.0)
                          / max(total[LOSS_TERMS.index(k)], 1.0)) for k, v in losses.items()}
        return scaled, total

    def _sum_gradients(self, stats: list[float]) -> list[float]:
        """Sum every gradient (and ``stats``) over the processes in one collective."""
        device = self.accelerator.device
        params = [p for p in self.model.parameters() if p.requires_grad]
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                          for p in params] + [torch.tensor(stats, device=device,
                                                           dtype=params[0].dtype)])
        sum_across(self.world, flat)
        offset = 0
        for p in params:
            size = p.numel()
            p.grad = flat[offset:offset + size].view_as(p).clone()
            offset += size
        return flat[offset:].tolist()

    # ---- the loop ---------------------------------------------------------------------------
    def train(self) -> dict:
        """Run every epoch and return the summary (best dev epoch, history, config).

        The loop, per epoch ``e`` in ``0..epochs``:

        1. :meth:`refresh_index` — the training KB's index under the current entity tower;
        2. for ``e > 0``: validate on dev with that index over ``cfg.thresholds``
           (:meth:`validate`: strict F1, or its mean over several dev corpora, each scored
           on its own types) and save a checkpoint when it is the best so far,
           with the best threshold γ as the model's default; without dev, save every epoch;
        3. stop after validating epoch ``epochs`` (so the last epoch's weights are scored too);
        4. mine hard negatives once on the main process (:meth:`mine_hard_negatives`,
           broadcast) — the KB names nearest each gold mention that belong to another concept;
        5. one pass over the training chunks — each corpus's drawn by its weight
           (:func:`epoch_examples`; all of them once with the default weights), shuffled
           together — in batches of ``cfg.batch_size``: draw the batch's candidate names
           (:meth:`candidate_rows`), compute mention BCE (partial-label for the chunks of
           partially annotated corpora) + type CE + linking CE on this process's share
           (:meth:`batch_loss`), weight and sum them, sum gradients across processes, clip,
           and step AdamW (encoder and heads have their own learning rates) under linear
           warm-up then linear decay.

        Why validate before training each epoch rather than after: the index used for dev is
        the one the next epoch's hard negatives come from, so each KB encoding is used twice.

        The whole state is saved to ``output_dir/resume`` after every epoch and every
        ``cfg.checkpoint_minutes`` within one (:mod:`e2e_linker.training.checkpoint`); a run
        started with ``resume`` continues from it, drawing what the uninterrupted run would.
        """
        cfg = self.cfg
        self.prepare()
        model = self.model
        head_params = list(model.span_scorer.parameters()) + list(model.type_head.parameters())
        if getattr(model, "guideline_tags", None) is not None:
            head_params += list(model.guideline_tags.parameters())
        head_ids = {id(p) for p in head_params}
        enc_params = [p for p in model.parameters() if id(p) not in head_ids]
        optimizer = torch.optim.AdamW(
            [{"params": enc_params, "lr": cfg.lr}, {"params": head_params, "lr": cfg.head_lr}],
            weight_decay=cfg.weight_decay,
        )
        steps_per_epoch = math.ceil(epoch_size(self.corpus_sizes, self.corpus_weights)
                                    / cfg.batch_size)
        total = max(1, steps_per_epoch * cfg.epochs)
        warmup = int(total * cfg.warmup_ratio)

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / max(1, warmup)
            return max(0.0, (total - step) / max(1, total - warmup))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        world = self.world
        if world.distributed:  # not wrapped in DDP: gradients are summed by _sum_gradients
            import torch.distributed as dist

            model.to(self.accelerator.device)
            for tensor in [*model.parameters(), *model.buffers()]:
                dist.broadcast(tensor.data, src=0)  # one starting point for every process
            optimizer, scheduler = self.accelerator.prepare(optimizer, scheduler)
        else:
            self.model, optimizer, scheduler = self.accelerator.prepare(model, optimizer,
                                                                        scheduler)
            self.model = self.accelerator.unwrap_model(self.model)
        self.step_losses: list[float] = []
        self.step_components: list[dict[str, float]] = []
        config = self.cfg.to_dict()
        state = TrainingState(epoch=0)
        if self.resume and saved_state_exists(self.out):
            state = load_training_state(self.out, self.model, optimizer, scheduler, config)
            _log(f"resuming {self.out}: epoch {state.epoch + 1}, batch {state.next_batch}")
        elif world.is_main:
            discard_training_state(self.out)
        history, best = state.history, state.best

        def checkpoint(epoch: int, next_batch: int, order: list[int], hard) -> None:
            if world.is_main:
                save_training_state(self.out, self.model, optimizer, scheduler, TrainingState(
                    epoch, next_batch, order, hard, history, best), config)

        for epoch in range(state.epoch, cfg.epochs + 1):
            index = self.refresh_index()
            mid_epoch = epoch == state.epoch and state.next_batch > 0
            # a run resumed within an epoch was validated and mined before the interruption
            if epoch > 0 and not mid_epoch and self.dev_sets and world.is_main:
                results, per_corpus = self.validate(index)
                gamma, res = max(results.items(), key=lambda kv: kv[1]["strict_f1"])
                if per_corpus is not None:
                    res = {**res, "corpora": {name: {**r[gamma], "all_thresholds": {
                        str(k): v for k, v in r.items()}} for name, r in per_corpus.items()}}
                if cfg.model.mention_head == "bio":
                    res["tagging_f1"] = tagging_f1(self.model, self.dev_examples)
                _log(f"epoch {epoch} dev: best threshold {gamma} " + json.dumps(res))
                history.append({"epoch": epoch, "threshold": gamma, **res,
                                "all_thresholds": {str(k): v for k, v in results.items()}})
                if res["strict_f1"] > best["strict_f1"]:
                    best = {"epoch": epoch, "threshold": gamma, **res}
                    self.save(gamma)
                if cfg.keep_epochs:
                    self.save(gamma, self.out / f"epoch_{epoch}")
            elif epoch > 0 and not mid_epoch and world.is_main:
                self.save(self.cfg.model.threshold)
                if cfg.keep_epochs:
                    self.save(self.cfg.model.threshold, self.out / f"epoch_{epoch}")
            if epoch == cfg.epochs:
                break
            if mid_epoch:
                hard, order, first = state.hard, state.order, state.next_batch
            else:  # mined once, on the main process, and broadcast
                hard = world.on_main(lambda idx=index: self.mine_hard_negatives(idx)) \
                    if cfg.n_hard > 0 else {}
                order = epoch_examples(self.corpus_sizes, self.corpus_weights, cfg.seed,
                                       epoch)
                random.shuffle(order)
                first = 0
            self.model.train()
            starts = range(0, len(order), cfg.batch_size)
            bar = tqdm(total=len(starts), initial=first, desc=f"epoch {epoch + 1}",
                       unit="batch", disable=not world.is_main)
            seen_tokens = 0
            started = last_saved = time.time()
            for step in range(first, len(starts)):
                start = starts[step]
                ids = order[start:start + cfg.batch_size]
                local = ids[world.rank::world.size]
                rows = self.candidate_rows(ids, index, hard)  # the whole batch's candidates
                losses: dict[str, torch.Tensor] = {}
                counts: dict[str, int] = {}
                if local:
                    with self.accelerator.autocast():
                        losses, counts = self.batch_loss(local, index, hard, rows)
                if world.distributed:
                    losses, totals = self._share_of_batch(losses, counts)
                loss = (cfg.mention_weight * losses.get("mention", 0.0)
                        + cfg.type_weight * losses.get("type", 0.0)
                        + cfg.linking_weight * losses.get("linking", 0.0))
                if torch.is_tensor(loss):
                    self.accelerator.backward(loss)
                if world.distributed:
                    values = [float(loss)] + [float(losses[k]) if k in losses else 0.0
                                              for k in LOSS_TERMS]
                    values = self._sum_gradients(values)
                    self.step_losses.append(values[0])
                    self.step_components.append({k: v for k, v, n in zip(
                        LOSS_TERMS, values[1:], totals, strict=True) if n > 0 or k == "mention"})
                else:
                    self.step_losses.append(float(loss.detach()))
                    self.step_components.append({k: float(v.detach())
                                                 for k, v in losses.items()})
                self.accelerator.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                seen_tokens += sum(len(self.examples[k].chunk) for k in ids)
                bar.update(1)
                bar.set_postfix({k: f"{v:.3f}" for k, v in self.step_components[-1].items()}
                                | {"tok/s": f"{seen_tokens / (time.time() - started):.0f}"})
                if time.time() - last_saved >= cfg.checkpoint_minutes * 60 \
                        and step + 1 < len(starts):
                    checkpoint(epoch, step + 1, order, hard)
                    last_saved = time.time()
            bar.close()
            checkpoint(epoch + 1, 0, [], {})
        summary = {"best": best, "history": history, "config": self.cfg.to_dict()}
        if world.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "training_summary.json").write_text(json.dumps(summary, indent=2)
                                                            + "\n")
            discard_training_state(self.out)
        return world.broadcast(summary)

    def save(self, threshold: float, directory: Path | None = None) -> None:
        """Write the model directory (``directory``, default the run's own) with
        ``threshold`` as its γ (or the config's ``annotate_threshold``), its
        ``annotate_max_span_len``, the KB manifest and mined names, and the training config
        (the main process only)."""
        out = self.out if directory is None else directory
        out.mkdir(parents=True, exist_ok=True)
        chosen = self.cfg.annotate_threshold
        self.model.config.threshold = float(threshold if chosen is None else chosen)
        self.model.config.kb = self.cfg.kb
        manifest = save_model_kb(out, self.cfg.kb, self.extra, self.kb)
        trained_len = self.model.config.max_span_len
        # the saved config carries annotate's span length; training goes on with its own
        self.model.config.max_span_len = self.cfg.annotate_max_span_len or trained_len
        fold_tags(self.model)  # the saved encoder reads the tags as they are now
        try:
            self.model.save(out, kb_manifest=manifest, half=self.cfg.save_half)
        finally:
            self.model.config.max_span_len = trained_len
        (out / "train_config.json").write_text(json.dumps(asdict(self.cfg), indent=2) + "\n")
        _log(f"saved checkpoint to {out} (threshold {self.model.config.threshold})")


def train_collective(cfg: TrainConfig) -> dict:
    """``linker train CONFIG``: one :class:`CollectiveTrainer` run; returns its summary."""
    return CollectiveTrainer(cfg).train()
