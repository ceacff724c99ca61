"""An interrupted run resumed from its saved state ends where the uninterrupted run ends."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.errors import UserError
from e2e_linker.training.checkpoint import resume_dir, saved_state_exists
from e2e_linker.training.collective import CollectiveTrainer
from e2e_linker.training.config import TrainConfig
from tests.helpers.synthetic import synthetic_docs, synthetic_kb
from tests.helpers.tiny import tiny_encoder_dir


class Interrupted(Exception):
    """Stands in for a killed process."""


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "bert")


def _trainer(tiny_dir, out, **overrides) -> CollectiveTrainer:
    torch.manual_seed(0)
    model_cfg = LinkerConfig(encoder=str(tiny_dir), max_length=64, kb="synthetic")
    options = {"output_dir": str(out), "epochs": 2, "batch_size": 4, "lr": 1e-3,
               "head_lr": 1e-2, "n_random": 4, "n_hard": 2, "kb_corpus_names": [],
               "model": model_cfg, "thresholds": [0.3, 0.5], "device": "cpu",
               "warmup_ratio": 0.2, "checkpoint_minutes": 0.0}
    cfg = TrainConfig(**(options | overrides))
    return CollectiveTrainer(cfg, train_docs=synthetic_docs(16), dev_docs=synthetic_docs(4, 1),
                             kb=synthetic_kb(), model=CollectiveLinker.from_encoder(model_cfg))


def _interrupt_at(trainer: CollectiveTrainer, calls: int) -> None:
    """Make the trainer's ``calls``-th batch raise, as if the process were killed there."""
    original = trainer.batch_loss
    seen = {"n": 0}

    def batch_loss(*args, **kwargs):
        seen["n"] += 1
        if seen["n"] == calls:
            raise Interrupted
        return original(*args, **kwargs)

    trainer.batch_loss = batch_loss


@pytest.mark.parametrize("interrupt_at", [3, 4, 6])  # mid-epoch 1, epoch start, mid-epoch 2
def test_resumed_run_matches_uninterrupted(tiny_dir, tmp_path, interrupt_at):
    whole = _trainer(tiny_dir, tmp_path / "whole")
    whole_summary = whole.train()
    assert not saved_state_exists(tmp_path / "whole")  # a finished run leaves no state

    broken = _trainer(tiny_dir, tmp_path / "run")
    _interrupt_at(broken, interrupt_at)
    with pytest.raises(Interrupted):
        broken.train()
    assert saved_state_exists(tmp_path / "run")
    resumed = _trainer(tiny_dir, tmp_path / "run")
    summary = resumed.train()
    # 4 batches per epoch: the resumed run trains only the batches the broken one had not
    assert len(resumed.step_losses) == 8 - (interrupt_at - 1)
    assert resumed.step_losses == pytest.approx(whole.step_losses[interrupt_at - 1:], rel=1e-5)
    assert [h["strict_f1"] for h in summary["history"]] == pytest.approx(
        [h["strict_f1"] for h in whole_summary["history"]])
    for (name, a), (_, b) in zip(whole.model.state_dict().items(),
                                 resumed.model.state_dict().items(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), name


def test_changed_config_is_refused_and_restart_starts_over(tiny_dir, tmp_path):
    broken = _trainer(tiny_dir, tmp_path / "run")
    _interrupt_at(broken, 2)
    with pytest.raises(Interrupted):
        broken.train()
    with pytest.raises(UserError, match="lr changed"):
        _trainer(tiny_dir, tmp_path / "run", lr=2e-3).train()
    restarted = _trainer(tiny_dir, tmp_path / "run", lr=2e-3)
    restarted.resume = False
    restarted.train()
    assert len(restarted.step_losses) == 8
    assert not resume_dir(tmp_path / "run").exists()


def test_config_differences_ignore_where_and_how_fast_and_the_annotate_time_gate():
    from e2e_linker.training.checkpoint import config_differences

    saved = TrainConfig().to_dict()
    current = TrainConfig(output_dir="elsewhere", num_threads=1, checkpoint_minutes=1).to_dict()
    current["model"] |= {"lexical_gate": 0.98, "short_forms": True,
                         "propagation_threshold": 0.2, "dictionary_threshold": 0.1,
                         "threshold": 0.3}
    assert config_differences(saved, current) == []
    current["model"]["max_span_len"] = 8
    current["lr"] = 1.0
    assert config_differences(saved, current) == ["lr", "model.max_span_len"]


def test_a_resumed_multi_corpus_run_matches_the_uninterrupted_one(tiny_dir, tmp_path):
    """Two corpora of different types, one drawn at weight 0.5: the epoch's draw and the
    partial-label loss resume like the single-corpus run."""
    from tests.e2e_linker.training.multi_corpus_data import corpora, corpus_options, model_config

    def trainer(out) -> CollectiveTrainer:
        torch.manual_seed(0)
        model_cfg = model_config(str(tiny_dir))
        train, dev = corpora()
        cfg = TrainConfig(output_dir=str(out), epochs=2, batch_size=4, lr=1e-3, head_lr=1e-2,
                          n_random=4, n_hard=2, kb_corpus_names=[], model=model_cfg,
                          thresholds=[0.5], device="cpu", checkpoint_minutes=0.0,
                          **corpus_options())
        return CollectiveTrainer(cfg, train_docs=train, dev_docs=dev, kb=synthetic_kb(),
                                 model=CollectiveLinker.from_encoder(model_cfg))

    whole = trainer(tmp_path / "whole")
    whole.train()
    broken = trainer(tmp_path / "run")
    _interrupt_at(broken, 2)
    with pytest.raises(Interrupted):
        broken.train()
    resumed = trainer(tmp_path / "run")
    resumed.train()
    assert resumed.step_losses == pytest.approx(whole.step_losses[1:], rel=1e-5)
