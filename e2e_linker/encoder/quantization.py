"""int8 inference of the mention encoder on CPUs: SmoothQuant scaling + per-channel dynamic int8.

Why: on a CPU the mention encoder's fp32 forward is the pipeline's limit (``eval.bench``), its
matrix products already run near the cores' fp32 peak, and bf16/fp16 are no faster there
without AMX tiles; int8 matrix products (VNNI) are about twice as fast. Plain dynamic
quantization (per-tensor weights, per-tensor activations) is too coarse for BERT: a few
activation channels carry values far larger than the rest, so one scale per tensor leaves the
other channels a handful of levels, and about a fifth of the detected spans change.

What is done instead (Xiao et al. 2023, SmoothQuant): for every linear layer with input
channel absmax ``a_j`` (measured once on real documents, :func:`activation_absmax`) and weight
column absmax ``w_j``, the input is divided by ``s_j = a_j^α / w_j^(1-α)`` and the weight column
multiplied by it (the product is unchanged in exact arithmetic), which moves the outliers from
the activations into the weights, where per-output-channel int8 scales absorb them. The
statistics are a few kilobytes shipped in the model directory (:data:`STATS_FILE`, written by
``linker calibrate``), so every run quantizes identically and output stays deterministic.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

#: Migration strength; chosen on BC5CDR dev as the value that kept the span vectors closest to
#: fp32 and changed the fewest detected spans (the α sweep is described in docs/results.md,
#: "Which encoder forward pays on a CPU"; docs/decisions/0033-encoder-precision.md).
DEFAULT_ALPHA = 0.7


class SmoothedLinear(nn.Module):
    """``linear(x / s)`` with ``s`` folded into the weight columns: the same product in fp32."""

    def __init__(self, linear: nn.Linear, scale: torch.Tensor):
        super().__init__()
        self.register_buffer("inverse_scale", (1.0 / scale).to(linear.weight.dtype))
        self.linear = nn.Linear(linear.in_features, linear.out_features,
                                bias=linear.bias is not None)
        with torch.no_grad():
            self.linear.weight.copy_(linear.weight * scale[None, :])
            if linear.bias is not None:
                self.linear.bias.copy_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inverse_scale)


def linear_layers(module: nn.Module) -> dict[str, nn.Linear]:
    """The module's ``nn.Linear`` layers by qualified name."""
    return {name: sub for name, sub in module.named_modules() if isinstance(sub, nn.Linear)}


def smooth(module: nn.Module, stats: dict[str, torch.Tensor], alpha: float = DEFAULT_ALPHA,
           ) -> int:
    """Replace each linear layer that has statistics by its :class:`SmoothedLinear`, in place.
    Returns how many were replaced; statistics of a different shape are an error."""
    replaced = 0
    for name, layer in linear_layers(module).items():
        absmax = stats.get(name)
        if absmax is None:
            continue
        if absmax.shape != (layer.in_features,):
            raise ValueError(f"activation statistics for {name} have shape "
                             f"{tuple(absmax.shape)}, the layer takes {layer.in_features}")
        weight_max = layer.weight.detach().abs().amax(0).float().clamp(min=1e-5)
        scale = (absmax.float().clamp(min=1e-5) ** alpha / weight_max ** (1 - alpha))
        parent_name, _, leaf = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, leaf, SmoothedLinear(layer, scale.clamp(min=1e-5)))
        replaced += 1
    return replaced


def quantize_int8(module: nn.Module) -> nn.Module:
    """Per-output-channel int8 weights, activations quantized per batch (CPU)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notices
        return torch.ao.quantization.quantize_dynamic(
            module, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
