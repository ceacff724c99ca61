"""int8 inference: SmoothQuant scaling is exact in fp32, helps int8 where activations have
outlier channels, and the statistics travel with the model directory."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from data_tools.formats.detect import write_documents
from e2e_linker.cli import main
from e2e_linker.collective.calibration import activation_absmax
from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.collective.model_dir import STATS_FILE, load_stats
from e2e_linker.encoder.quantization import (
    SmoothedLinear,
    linear_layers,
    quantize_int8,
    smooth,
)
from e2e_linker.errors import UserError
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny import tiny_encoder_dir


def _outlier_inputs(n: int = 512, dim: int = 64) -> torch.Tensor:
    """Activations like BERT's: most channels O(1), two channels 60x larger."""
    x = torch.randn(n, dim, generator=torch.Generator().manual_seed(0))
    x[:, [3, 40]] *= 60
    return x


def test_smoothed_linear_computes_the_same_product_in_fp32():
    torch.manual_seed(0)
    layer = nn.Linear(64, 48)
    x = _outlier_inputs()
    scale = torch.rand(64) * 10 + 0.1
    torch.testing.assert_close(SmoothedLinear(layer, scale)(x), layer(x), rtol=1e-4, atol=1e-4)


def test_smoothing_makes_int8_more_accurate_with_outlier_channels():
    torch.manual_seed(0)
    x = _outlier_inputs()
    plain = nn.Sequential(nn.Linear(64, 48))
    want = plain(x).detach()
    smoothed = nn.Sequential(nn.Linear(64, 48))
    smoothed.load_state_dict(plain.state_dict())
    assert smooth(smoothed, {"0": x.abs().amax(0)}) == 1
    assert isinstance(smoothed[0], SmoothedLinear)

    def error(module):
        return ((quantize_int8(module)(x) - want).norm() / want.norm()).item()

    plain_error, smooth_error = error(plain), error(smoothed)
    assert smooth_error < 0.5 * plain_error, (smooth_error, plain_error)


def test_statistics_of_the_wrong_shape_are_refused():
    with pytest.raises(ValueError, match="shape"):
        smooth(nn.Sequential(nn.Linear(8, 4)), {"0": torch.ones(5)})


@pytest.fixture
def model_dir(tmp_path):
    encoder = tiny_encoder_dir(tmp_path / "bert")
    model = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(encoder), max_length=64))
    model.save(tmp_path / "model")
    return tmp_path / "model"


def test_calibrate_command_writes_statistics_that_quantize_uses(model_dir, tmp_path):
    write_documents(synthetic_docs(6), tmp_path / "docs.txt", "pubtator")
    model = CollectiveLinker.load(model_dir)
    assert model.activation_stats is None
    with pytest.raises(UserError, match="linker calibrate"):
        model.quantize_mention_encoder()

    result = CliRunner().invoke(main, ["calibrate", str(model_dir), str(tmp_path / "docs.txt")])
    assert result.exit_code == 0, result.output
    stats = load_stats(model_dir)
    layers = linear_layers(model.encoder.model)
    # the pooler is never run (the encoders pool token states themselves), so it has no statistics
    assert set(stats) == set(layers) - {"pooler.dense"}
    for name in stats:
        layer = layers[name]
        assert stats[name].shape == (layer.in_features,) and (stats[name] > 0).all()
    torch.testing.assert_close(stats, activation_absmax(model, synthetic_docs(6)))

    reloaded = CollectiveLinker.load(model_dir)
    batch = {"input_ids": torch.randint(5, 90, (2, 24)), "attention_mask": torch.ones(2, 24,
                                                                                        dtype=torch.long)}
    with torch.inference_mode():
        full = reloaded.token_states(batch)
        reloaded.quantize_mention_encoder()
        int8 = reloaded.token_states(batch)
    assert reloaded.quantized and not torch.equal(full, int8)
    cos = torch.nn.functional.cosine_similarity(full.flatten(0, 1), int8.flatten(0, 1))
    assert cos.min().item() > 0.98


def test_the_default_model_ships_statistics_for_every_encoder_layer():
    from e2e_linker.collective.model_dir import default_linker_dir

    model = CollectiveLinker.load(default_linker_dir())
    assert (default_linker_dir() / STATS_FILE).is_file()
    layers = linear_layers(model.encoder.model)
    assert len(layers) == 37  # 6 x 6 + pooler
    # the pooler is never run for token states (encoder/bert.py keeps it for the state dict
    # only), so a calibration through that path records no statistics for it
    run = {name for name in layers if not name.startswith("pooler.")}
    assert run <= set(model.activation_stats) <= set(layers)
    for name in model.activation_stats:
        assert model.activation_stats[name].shape == (layers[name].in_features,)
