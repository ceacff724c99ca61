"""Warm start: a saved model's encoders and heads as the starting point, type rows by name."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.errors import UserError
from e2e_linker.training.warm_start import (
    copy_type_rows,
    guideline_mismatch,
    interpolate,
    warm_start,
)
from tests.helpers.tiny import tiny_encoder_dir


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved two-type model (Chemical, Disease) with recognisable type-head values."""
    root = tmp_path_factory.mktemp("warm")
    tiny = tiny_encoder_dir(root / "bert")
    model = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(tiny), max_length=64,
                                                       kb="synthetic"))
    with torch.no_grad():
        model.type_head.weight.copy_(torch.stack([torch.full((32,), 1.0),
                                                  torch.full((32,), 2.0)]))
        model.type_head.bias.copy_(torch.tensor([10.0, 20.0]))
        model.span_scorer.proj.weight.fill_(0.5)
        model.encoder.model.embeddings.word_embeddings.weight[5].fill_(3.0)
    model.save(root / "model")
    return tiny, root / "model"


def test_rows_of_known_types_are_copied_by_name_and_new_types_start_fresh(saved):
    tiny, directory = saved
    torch.manual_seed(1)
    model = warm_start(LinkerConfig(encoder=str(tiny), max_length=64, kb="synthetic",
                                    types=["Gene", "Disease", "Chemical"]), directory)
    weight, bias = model.type_head.weight.detach(), model.type_head.bias.detach()
    assert weight.shape == (3, 32)
    assert torch.equal(weight[1], torch.full((32,), 2.0)) and float(bias[1]) == 20.0
    assert torch.equal(weight[2], torch.full((32,), 1.0)) and float(bias[2]) == 10.0
    assert weight[0].abs().max() < 1.0 and float(bias[0]) not in (10.0, 20.0)  # fresh
    assert torch.equal(model.span_scorer.proj.weight, torch.full((3, 32), 0.5))
    assert torch.equal(model.encoder.model.embeddings.word_embeddings.weight[5],
                       torch.full((32,), 3.0))
    assert model.training and model.config.types == ["Gene", "Disease", "Chemical"]
    assert all(p.requires_grad for p in model.parameters())


def test_copy_type_rows_returns_what_it_copied():
    source, target = torch.nn.Linear(4, 2), torch.nn.Linear(4, 3)
    assert copy_type_rows(source, ["A", "B"], target, ["B", "C", "A"]) == ["B", "A"]
    assert torch.equal(target.weight[0], source.weight[1])
    assert torch.equal(target.weight[2], source.weight[0])


def test_an_architecture_change_is_refused(saved):
    tiny, directory = saved
    with pytest.raises(UserError, match="model settings mention_head, entity_pooling differ"):
        warm_start(LinkerConfig(encoder=str(tiny), mention_head="bio", entity_pooling="mean",
                                types=["Chemical"]), directory)
    with pytest.raises(UserError, match="not a linker model directory"):
        warm_start(LinkerConfig(encoder=str(tiny)), directory.parent)


def test_interpolation_mixes_every_weight_and_the_rows_of_shared_types(saved):
    tiny, directory = saved
    start = CollectiveLinker.load(directory)
    torch.manual_seed(2)
    tuned = warm_start(LinkerConfig(encoder=str(tiny), max_length=64, kb="synthetic",
                                    types=["Gene", "Disease", "Chemical"]), directory)
    with torch.no_grad():
        tuned.type_head.weight.fill_(0.0)
        tuned.type_head.bias.fill_(0.0)
        tuned.span_scorer.proj.weight.fill_(1.5)
        tuned.encoder.model.embeddings.word_embeddings.weight[5].fill_(1.0)
    assert interpolate(tuned, start, 0.25) == ["Disease", "Chemical"]
    weight, bias = tuned.type_head.weight.detach(), tuned.type_head.bias.detach()
    assert torch.equal(weight[0], torch.zeros(32)) and float(bias[0]) == 0.0  # Gene: its own
    assert torch.allclose(weight[1], torch.full((32,), 1.5)) and float(bias[1]) == 15.0
    assert torch.allclose(weight[2], torch.full((32,), 0.75)) and float(bias[2]) == 7.5
    assert torch.allclose(tuned.span_scorer.proj.weight, torch.full((3, 32), 0.75))
    assert torch.allclose(tuned.encoder.model.embeddings.word_embeddings.weight[5],
                          torch.full((32,), 2.5))
    with pytest.raises(UserError, match="between 0 and 1"):
        interpolate(tuned, start, 1.5)
    start.config.mention_head = "bio"  # another architecture: refused, nothing mixed
    with pytest.raises(UserError, match="settings mention_head differ"):
        interpolate(tuned, start, 0.5)


def test_a_mix_of_a_tagged_and_an_untagged_model_is_named():
    tagged = LinkerConfig(guidelines=["biored", "ncbi_disease"], default_guideline="biored")
    plain = LinkerConfig()
    assert guideline_mismatch(tagged, LinkerConfig(guidelines=["biored", "ncbi_disease"],
                                                   default_guideline="ncbi_disease")) is None
    assert guideline_mismatch(plain, plain) is None
    assert "eval.noise_floor" in guideline_mismatch(tagged, plain)
    assert "reads no tag" in guideline_mismatch(plain, tagged)
    assert "by position" in guideline_mismatch(tagged, LinkerConfig(guidelines=["bc5cdr"],
                                                                    default_guideline="bc5cdr"))
