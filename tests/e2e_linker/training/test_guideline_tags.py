"""Guideline tags in training: each corpus's chunks read its tag, the tags' rows learn at the
heads' rate (their own parameter), and the saved encoder holds the learnt rows, so a loaded
model reads the tags as the trained one did, with no hook."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.training.collective import CollectiveTrainer
from e2e_linker.training.config import TrainConfig
from e2e_linker.training.guideline_tags import attach_tags, fold_tags, word_embeddings
from tests.e2e_linker.training.multi_corpus_data import corpora, corpus_options, model_config
from tests.helpers.synthetic import synthetic_kb
from tests.helpers.tiny import tiny_encoder_dir

GUIDELINES = ["chemdis", "genes"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "bert")


def _batch(model, tag: int) -> dict[str, torch.Tensor]:
    ids = torch.tensor([[model.tokenizer.cls_token_id, tag, 2000, 2001,
                         model.tokenizer.sep_token_id]])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def test_the_tag_rows_stand_in_for_the_vocabulary_rows_and_fold_back(tiny_dir):
    model = CollectiveLinker.from_encoder(model_config(str(tiny_dir), guidelines=GUIDELINES,
                                                       default_guideline="chemdis")).eval()
    tag_ids = [model.tokenizer.convert_tokens_to_ids(t) for t in ("[unused1]", "[unused2]")]
    before = model.token_states(_batch(model, tag_ids[0])).detach()
    tags = attach_tags(model, tag_ids)
    assert torch.equal(model.token_states(_batch(model, tag_ids[0])), before)  # same start
    with torch.no_grad():
        tags.rows[0] += 1.0
    moved = model.token_states(_batch(model, tag_ids[0]))
    assert not torch.allclose(moved, before)  # the encoder reads the trainable row
    moved[0, 2:].pow(2).sum().backward()
    assert tags.rows.grad[0].abs().sum() > 0 and tags.rows.grad[1].abs().sum() == 0
    fold_tags(model)
    assert torch.equal(word_embeddings(model).weight[tag_ids[0]], tags.rows[0].detach())


def test_a_tagged_run_learns_the_rows_at_the_heads_rate_and_saves_them(tiny_dir, tmp_path):
    torch.manual_seed(0)
    model_cfg = model_config(str(tiny_dir), guidelines=GUIDELINES,
                             default_guideline="chemdis")
    options = corpus_options()
    for entry, name in zip(options["train"] + options["dev"], GUIDELINES * 2, strict=True):
        entry["guideline"] = name
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), epochs=1, batch_size=4, lr=1e-6,
                      head_lr=1e-2, n_random=4, n_hard=2, kb_corpus_names=[], model=model_cfg,
                      thresholds=[0.5], device="cpu", warmup_ratio=0.0, **options)
    train, dev = corpora()
    model = CollectiveLinker.from_encoder(model_cfg)
    start = word_embeddings(model).weight.detach().clone()
    trainer = CollectiveTrainer(cfg, train_docs=train, dev_docs=dev, kb=synthetic_kb(),
                                model=model)
    trainer.train()
    tag_ids = [model.tokenizer.convert_tokens_to_ids(t) for t in ("[unused1]", "[unused2]")]
    assert {e.chunk.input_ids[1] for e in trainer.examples if e.corpus == 0} == {tag_ids[0]}
    assert {e.chunk.input_ids[1] for e in trainer.examples if e.corpus == 1} == {tag_ids[1]}
    loaded = CollectiveLinker.load(tmp_path / "run")
    rows = word_embeddings(loaded).weight
    learnt = (rows[tag_ids] - start[tag_ids]).abs().max()
    others = (rows[2000] - start[2000]).abs().max()
    assert learnt > 100 * others  # the tags moved at 1e-2 a step, the encoder at 1e-6
    assert torch.allclose(rows[tag_ids], trainer.model.guideline_tags.rows.detach())
