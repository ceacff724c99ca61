"""A few triplet-training steps on a tiny synthetic KB: the loss falls, a model dir is written."""

from __future__ import annotations

import json

import torch

from data_tools.kb import KB, Concept
from e2e_linker.normalizer.normalizer_dir import load_model
from e2e_linker.training.triplet import TripletConfig, train_triplet, training_examples
from e2e_linker.training.triplet_loss import batch_hard_soft_margin_loss

NAMES = {
    "C1": ["aspirin", "acetylsalicylic acid", "asa"],
    "C2": ["ibuprofen", "advil", "motrin"],
    "C3": ["headache", "cephalalgia", "head pain"],
    "C4": ["renal failure", "kidney failure", "renal insufficiency"],
    "C5": ["nausea", "queasiness"],
    "C6": ["delirium"],
}


def _kb() -> KB:
    return KB(Concept(cid, names[0], names[1:], "Disease") for cid, names in NAMES.items())


def _full_loss(encoder, texts, labels) -> float:
    with torch.no_grad():
        encoder.eval()
        vectors = encoder.embed_texts(texts)
        return float(batch_hard_soft_margin_loss(vectors, torch.tensor(labels)))


def test_training_lowers_the_loss(tiny_dir, tmp_path):
    cfg = TripletConfig(output_dir=str(tmp_path / "run"), encoder=str(tiny_dir), kb="unused",
                        epochs=8, concepts_per_batch=4, names_per_concept=3, lr=2e-3,
                        warmup_ratio=0.0, seed=0, max_length=16)
    kb = _kb()
    texts, labels, stats = training_examples(cfg, kb, [])
    assert stats["mention_texts"] == 0 and stats["concepts"] == 6
    before, _ = load_model(tiny_dir)
    loss_before = _full_loss(before, texts, labels)
    summary = train_triplet(cfg, kb=kb, train_docs=[], progress=False)
    after, settings = load_model(tmp_path / "run")
    loss_after = _full_loss(after, texts, labels)
    assert summary["steps"] >= 8
    assert not (tmp_path / "run" / "mentions.tsv").exists()  # Train:O: no mentions
    assert loss_after < loss_before * 0.8, (loss_before, loss_after)
    assert settings.kb == "unused" and settings.kb_hash == kb.content_hash()
    history = json.loads((tmp_path / "run" / "train_history.json").read_text())
    assert len(history["history"]) == summary["steps"]


def test_mentions_are_repeated_to_a_third_of_the_ontology(tiny_dir):
    from tests.helpers.synthetic import synthetic_docs

    docs = synthetic_docs(2)
    kb = KB(Concept(f"K{i}", f"name {i}", [f"syn {i}"], "Disease") for i in range(60))
    cfg = TripletConfig(encoder=str(tiny_dir), train=["given"], mention_types=["Disease"])
    _, _, stats = training_examples(cfg, kb, docs)
    assert stats["ontology_texts"] == 120
    assert stats["mention_texts"] == 6
    assert stats["mention_repeat"] == round(120 / 3 / 6)


def test_train_od_saves_its_mentions(tiny_dir, tmp_path):
    from e2e_linker.normalizer.normalizer_dir import read_mentions
    from tests.helpers.synthetic import synthetic_docs, synthetic_kb

    cfg = TripletConfig(output_dir=str(tmp_path / "od"), encoder=str(tiny_dir), kb="unused",
                        train=["given"], max_steps=1, max_length=16)
    summary = train_triplet(cfg, kb=synthetic_kb(), train_docs=synthetic_docs(2), progress=False)
    assert summary["steps"] == 1 and summary["mention_texts"] > 0
    mentions = read_mentions(tmp_path / "od" / "mentions.tsv")
    kb = synthetic_kb()
    assert mentions and all(label in kb.concepts and kb.concepts[label].type == type_
                            for _, label, type_ in mentions)
    _, settings = load_model(tmp_path / "od")
    assert settings.extra["training_data"] == "OD" and settings.extra["mentions"] == "mentions.tsv"


def test_lora_training_writes_a_small_adapter_that_reloads(tiny_dir, tmp_path):
    cfg = TripletConfig(output_dir=str(tmp_path / "run"), encoder=str(tiny_dir), kb="unused",
                        epochs=16, concepts_per_batch=4, names_per_concept=3, lr=3e-2,
                        warmup_ratio=0.0, seed=0, max_length=16, lora_rank=4, lora_alpha=8)
    kb = _kb()
    texts, labels, _ = training_examples(cfg, kb, [])
    before, _ = load_model(tiny_dir)
    loss_before = _full_loss(before, texts, labels)
    train_triplet(cfg, kb=kb, train_docs=[], progress=False)
    run = tmp_path / "run"
    assert (run / "adapter" / "adapter_model.safetensors").is_file()
    assert not (run / "encoder").exists()
    after, _ = load_model(run)
    assert _full_loss(after, texts, labels) < loss_before * 0.9
