"""bf16 inference: resolved per device, fp32 out, close to fp32, and only in eval mode."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.encoder import precision as precision_mod
from e2e_linker.errors import UserError
from tests.helpers.tiny import tiny_encoder_dir


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "bert")
    return CollectiveLinker.from_encoder(LinkerConfig(encoder=str(directory),
                                                      max_length=64)).eval()


def _batch(n: int = 3, length: int = 20) -> dict[str, torch.Tensor]:
    ids = torch.randint(5, 90, (n, length), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[0, 12:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_auto_takes_bf16_only_where_it_pays(monkeypatch):
    assert not precision_mod.bf16_pays("cpu")  # measured slower than fp32 on CPUs
    assert precision_mod.resolve_precision("auto", "cpu") == "fp32"
    monkeypatch.setattr(precision_mod, "bf16_pays", lambda device: True)
    assert precision_mod.resolve_precision("auto", "cpu") == "bf16"
    assert precision_mod.resolve_precision("fp32", "cpu") == "fp32"
    with pytest.raises(ValueError, match="precision must be one of"):
        precision_mod.resolve_precision("fp8", "cpu")


def test_bf16_states_are_fp32_and_close_to_fp32(model):
    batch = _batch()
    with torch.inference_mode():
        model.set_precision("fp32")
        full = model.token_states(batch)
        model.set_precision("bf16")
        half = model.token_states(batch)
        model.set_precision("fp32")
    assert half.dtype == torch.float32
    assert not torch.equal(full, half)  # the forward really ran in bf16
    cos = torch.nn.functional.cosine_similarity(full.flatten(0, 1), half.flatten(0, 1))
    assert cos.min().item() > 0.99


def test_training_ignores_the_inference_precision(model):
    batch = _batch()
    states = {}
    try:
        model.train()
        for name in ("bf16", "fp32"):
            model.set_precision(name)
            torch.manual_seed(0)  # same dropout masks for both
            states[name] = model.token_states(batch)
    finally:
        model.set_precision("fp32")
        model.eval()
    assert states["bf16"].requires_grad
    torch.testing.assert_close(states["bf16"], states["fp32"], rtol=0, atol=0)


def test_bf16_and_int8_exclude_each_other(tmp_path):
    from e2e_linker.encoder.quantization import linear_layers

    directory = tiny_encoder_dir(tmp_path / "bert")
    quantized = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(directory),
                                                           max_length=64)).eval()
    quantized.activation_stats = {name: torch.ones(layer.in_features) for name, layer
                                  in linear_layers(quantized.encoder.model).items()}
    quantized.quantize_mention_encoder()
    assert quantized.set_precision("auto") == "fp32"
    with pytest.raises(UserError, match="exclude each other"):
        quantized.set_precision("bf16")
