"""A tiny random BERT trains a few steps on a synthetic corpus and its loss falls."""

from __future__ import annotations

import statistics

import pytest

from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.training.collective import CollectiveTrainer
from e2e_linker.training.config import TrainConfig
from tests.helpers.synthetic import synthetic_docs, synthetic_kb
from tests.helpers.tiny import tiny_encoder_dir


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.mark.parametrize("head", ["exhaustive", "bio"])
def test_loss_falls_and_checkpoint_loads(tiny_dir, tmp_path, head):
    model_cfg = LinkerConfig(encoder=str(tiny_dir), mention_head=head, max_length=64,
                             kb="synthetic")
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), epochs=3, batch_size=4, lr=1e-3,
                      head_lr=1e-2, n_random=4, n_hard=2, kb_corpus_names=[], model=model_cfg,
                      thresholds=[0.3, 0.5], device="cpu", warmup_ratio=0.0)
    trainer = CollectiveTrainer(cfg, train_docs=synthetic_docs(24), dev_docs=synthetic_docs(4, 1),
                                kb=synthetic_kb(), model=CollectiveLinker.from_encoder(model_cfg))
    summary = trainer.train()
    losses = trainer.step_losses
    assert len(losses) == 18
    assert statistics.mean(losses[-4:]) < 0.9 * statistics.mean(losses[:4])
    mention = [c["mention"] for c in trainer.step_components]
    assert statistics.mean(mention[-4:]) < 0.7 * statistics.mean(mention[:4])
    assert len(summary["history"]) == 3
    loaded = CollectiveLinker.load(tmp_path / "run")
    assert loaded.config.mention_head == head
    assert (tmp_path / "run" / "encoder" / "model.safetensors").is_file()
