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


# ---- one corpus trains as it always did ----------------------------------------------------

#: step losses of this run recorded with the trainer before several corpora were supported
#: (commit 84d53b1): the single-corpus path (bc5cdr.yaml's) must compute exactly these
PINNED_LOSSES = {
    "exhaustive": [10.84879207611084, 8.110062599182129, 7.551490783691406,
                   6.554070949554443, 6.327519416809082, 6.285491943359375],
    "bio": [4.704052448272705, 4.193210124969482, 4.2046990394592285,
            3.5339505672454834, 3.392752170562744, 3.521602153778076],
}


@pytest.mark.parametrize("head,form", [("exhaustive", "string"), ("exhaustive", "mapping"),
                                       ("bio", "string")])
def test_a_corpus_annotating_every_type_trains_exactly_as_before(tiny_dir, tmp_path, head,
                                                                 form):
    torch.manual_seed(0)
    model_cfg = LinkerConfig(encoder=str(tiny_dir), mention_head=head, max_length=64,
                             kb="synthetic")
    train, dev = synthetic_docs(12), synthetic_docs(2, 1)
    options = {}
    if form == "mapping":  # the same corpus as a mapping entry listing every type
        options = {"train": [{"corpus": "synthetic", "types": ["Disease", "Chemical"]}]}
        train = {"synthetic": train}
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), epochs=2, batch_size=4, lr=1e-3,
                      head_lr=1e-2, n_random=4, n_hard=2, kb_corpus_names=[], model=model_cfg,
                      thresholds=[0.3, 0.5], device="cpu", warmup_ratio=0.0,
                      type_map={"Chemical": "Chemical"}, **options)
    trainer = CollectiveTrainer(cfg, train_docs=train, dev_docs=dev, kb=synthetic_kb(),
                                model=CollectiveLinker.from_encoder(model_cfg), resume=False)
    trainer.train()
    assert trainer.step_losses == pytest.approx(PINNED_LOSSES[head], rel=1e-4)


# ---- several corpora ------------------------------------------------------------------------

def _multi_trainer(tiny_dir, out, **overrides) -> CollectiveTrainer:
    from tests.e2e_linker.training.multi_corpus_data import corpora, corpus_options, model_config

    torch.manual_seed(0)
    model_cfg = model_config(str(tiny_dir))
    train, dev = corpora()
    options = {"output_dir": str(out), "epochs": 2, "batch_size": 4, "lr": 1e-3,
               "head_lr": 1e-2, "n_random": 4, "n_hard": 2, "kb_corpus_names": [],
               "model": model_cfg, "thresholds": [0.3, 0.5], "device": "cpu",
               "warmup_ratio": 0.0, **corpus_options()}
    cfg = TrainConfig(**(options | overrides))
    model = None if cfg.init_from else CollectiveLinker.from_encoder(model_cfg)
    return CollectiveTrainer(cfg, train_docs=train, dev_docs=dev, kb=synthetic_kb(),
                             model=model)


def test_two_corpora_with_different_types_train_validate_and_save(tiny_dir, tmp_path):
    import json
    import math

    # the starting point: a saved two-type model, extended with Gene by the warm start
    start = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(tiny_dir), max_length=64,
                                                       kb="synthetic"))
    start.save(tmp_path / "start")
    trainer = _multi_trainer(tiny_dir, tmp_path / "run", init_from=str(tmp_path / "start"))
    summary = trainer.train()
    chemdis = [e for e in trainer.examples if e.corpus == 0]
    genes = [e for e in trainer.examples if e.corpus == 1]
    assert chemdis and genes and trainer.corpus_sizes == [len(chemdis), len(genes)]
    assert all(e.annotated == (True, True, False) for e in chemdis)
    assert all(e.annotated == (False, False, True) and e.ignore for e in genes)
    assert {trainer.cfg.model.types[s.type_index] for e in genes for s in e.spans} == {"Gene"}
    # the gene corpus at weight 0.5: half its chunks an epoch
    per_epoch = math.ceil((len(chemdis) + round(len(genes) / 2)) / 4)
    assert len(trainer.step_losses) == 2 * per_epoch
    assert all(math.isfinite(x) for x in trainer.step_losses)
    assert len(summary["history"]) == 2
    for entry in summary["history"]:
        corpora = entry["corpora"]
        assert set(corpora) == {"chemdis_dev", "genes_dev"}
        assert entry["strict_f1"] == pytest.approx(
            (corpora["chemdis_dev"]["strict_f1"] + corpora["genes_dev"]["strict_f1"]) / 2)
    # dev gold: the gene corpus is scored on genes only (FamilyName spans left out)
    genes_dev = dict((e.corpus, d) for e, d in trainer.dev_sets)["genes_dev"]
    assert {a.type for d in genes_dev for a in d.annotations} == {"Gene"}
    loaded = CollectiveLinker.load(tmp_path / "run")
    assert loaded.config.types == ["Chemical", "Disease", "Gene"]
    saved = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert saved["init_from"] == str(tmp_path / "start")
    assert saved["train"][1]["types"] == ["Gene"]


def test_ignore_spans_contribute_nothing_to_the_mention_loss(tiny_dir, tmp_path):
    trainer = _multi_trainer(tiny_dir, tmp_path / "run")
    trainer.prepare()
    index = trainer.refresh_index()
    k, example = next((k, e) for k, e in enumerate(trainer.examples) if e.ignore)
    i, j = example.ignore[0]
    scorer = trainer.model.span_scorer

    class Shifted(torch.nn.Module):
        """The real scorer, with the ignore span's logit moved by ``shift``."""

        shift = 0.0

        def forward(self, states, valid):
            logits = scorer(states, valid).clone()
            logits[0, i, j - i] += self.shift
            return logits

    shifted = trainer.model.span_scorer = Shifted()

    def mention(shift: float) -> float:
        shifted.shift = shift
        with torch.no_grad():
            losses, _ = trainer.batch_loss([k], index, {})
        return float(losses["mention"])

    assert mention(8.0) == mention(-8.0)
    # the same span as an ordinary unannotated span of this gene corpus does count: it costs
    # −log(1 − p·q_Gene), which grows with p
    example.ignore = []
    assert mention(8.0) > mention(-8.0) + 0.1


def test_ignore_tensors_leave_gold_spans_and_tokens_in():
    from e2e_linker.training.collective import ignore_tensors
    from e2e_linker.training.examples import ChunkExample, GoldSpan

    example = ChunkExample(chunk=None, spans=[GoldSpan(2, 3, 0, None, "x")],
                           ignore=[(2, 3), (1, 4), (6, 6)])
    spans = ignore_tensors([example], 8, 4, bio=False)
    assert spans[0].nonzero().tolist() == [[1, 3], [6, 0]]  # (2, 3) is gold
    tokens = ignore_tensors([example], 8, 4, bio=True)
    assert tokens[0].nonzero().flatten().tolist() == [1, 4, 6]
    assert ignore_tensors([ChunkExample(chunk=None)], 8, 4, bio=False) is None


def test_documents_given_by_corpus_must_cover_the_config(tiny_dir, tmp_path):
    from e2e_linker.errors import UserError

    trainer = _multi_trainer(tiny_dir, tmp_path / "run")
    trainer._given["train_docs"] = {"chemdis": synthetic_docs(2)}
    with pytest.raises(UserError, match="no train documents given for genes"):
        trainer.prepare()
