"""A tiny random BERT trains a few steps on a synthetic corpus and its loss falls."""

from __future__ import annotations

import statistics

import pytest
import torch

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
    if head == "bio":  # seqeval's tagging F1 of each validated epoch
        assert all(0.0 <= h["tagging_f1"] <= 1.0 for h in summary["history"])
    else:
        assert "tagging_f1" not in summary["history"][0]
    loaded = CollectiveLinker.load(tmp_path / "run")
    assert loaded.config.mention_head == head
    assert (tmp_path / "run" / "encoder" / "model.safetensors").is_file()


def test_tagging_f1_is_seqeval_over_owned_tokens(tiny_dir):
    from e2e_linker.training.collective import gold_tensors, tagging_f1
    from e2e_linker.training.examples import build_examples

    model_cfg = LinkerConfig(encoder=str(tiny_dir), mention_head="bio", max_length=64,
                             kb="synthetic")
    model = CollectiveLinker.from_encoder(model_cfg)
    examples, _ = build_examples(synthetic_docs(6), model.tokenizer, model_cfg.types, None,
                                 64, model_cfg.max_span_len, model_cfg.chunk_overlap)
    assert sum(len(e.spans) for e in examples) > 0

    class Oracle(torch.nn.Module):
        """batch_size=1: call k scores examples[k] and returns its gold tags' one-hot logits."""

        calls = 0

        def forward(self, states, *args):
            example = examples[self.calls]
            self.calls += 1
            tags = gold_tensors([example], states.shape[1], model_cfg.max_span_len, True)
            return torch.nn.functional.one_hot(tags, 3).float() * 10

    class AllOutside(torch.nn.Module):
        def forward(self, states, *args):
            return torch.zeros(*states.shape[:2], 3) + torch.tensor([5.0, 0.0, 0.0])

    model.span_scorer = Oracle()
    assert tagging_f1(model, examples, batch_size=1) == pytest.approx(1.0)
    model.span_scorer = AllOutside()
    assert tagging_f1(model, examples, batch_size=1) == 0.0


def test_type_map_renames_corpus_types_before_examples_are_built(tiny_dir, tmp_path):
    model_cfg = LinkerConfig(encoder=str(tiny_dir), max_length=64, kb="synthetic",
                             types=["Disease"])
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), kb_corpus_names=[], model=model_cfg,
                      device="cpu", type_map={"Chemical": "Disease"})
    docs, dev = synthetic_docs(4), synthetic_docs(2, 1)
    trainer = CollectiveTrainer(cfg, train_docs=docs, dev_docs=dev, kb=synthetic_kb(),
                                model=CollectiveLinker.from_encoder(model_cfg))
    trainer.prepare()
    assert {a.type for d in trainer.train_docs + trainer.dev_docs for a in d.annotations} \
        == {"Disease"}
    gold = sum(len(d.annotations) for d in docs)
    assert sum(len(e.spans) for e in trainer.examples) == gold  # none dropped as unknown type


def test_annotate_threshold_overrides_the_validation_choice_in_the_saved_model(tiny_dir, tmp_path):
    model_cfg = LinkerConfig(encoder=str(tiny_dir), max_length=64, kb="synthetic")
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), epochs=1, batch_size=4, n_random=4,
                      n_hard=2, kb_corpus_names=[], model=model_cfg, thresholds=[0.5, 0.6],
                      device="cpu", annotate_threshold=0.35)
    trainer = CollectiveTrainer(cfg, train_docs=synthetic_docs(8), dev_docs=synthetic_docs(2, 1),
                                kb=synthetic_kb(), model=CollectiveLinker.from_encoder(model_cfg))
    summary = trainer.train()
    assert summary["best"]["threshold"] in (0.5, 0.6)
    assert CollectiveLinker.load(tmp_path / "run").config.threshold == 0.35
