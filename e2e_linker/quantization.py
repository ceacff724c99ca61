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

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

#: Activation statistics of a model directory's mention encoder (safetensors).
STATS_FILE = "activation_absmax.safetensors"

#: Migration strength; chosen on BC5CDR dev (0.6-0.8 tried; 0.7 kept the span vectors closest
#: to fp32, 0.7-0.75 changed the fewest detected spans).
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


@torch.inference_mode()
def activation_absmax(model, docs: Sequence) -> dict[str, torch.Tensor]:
    """Per-input-channel absmax of every linear layer of ``model``'s mention encoder while it
    reads ``docs`` exactly as ``linker annotate`` does (same chunks, batches and padding)."""
    from e2e_linker.annotate import Annotator

    found: dict[str, torch.Tensor] = {}
    hooks = []
    for name, layer in linear_layers(model.encoder.model).items():
        def record(_module, inputs, _output, name=name):
            x = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0).float().cpu()
            found[name] = torch.maximum(found[name], x) if name in found else x
        hooks.append(layer.register_forward_hook(record))
    try:
        Annotator(model, index=None).detect(list(docs))
    finally:
        for hook in hooks:
            hook.remove()
    if not found:
        raise ValueError("no linear layer saw any input: are the calibration documents empty?")
    return found


def save_stats(stats: dict[str, torch.Tensor], directory: str | os.PathLike) -> Path:
    from safetensors.torch import save_file

    path = Path(directory) / STATS_FILE
    save_file({k: v.contiguous() for k, v in stats.items()}, str(path))
    return path


def load_stats(directory: str | os.PathLike) -> dict[str, torch.Tensor] | None:
    """The model directory's activation statistics, or None if it has none."""
    from safetensors.torch import load_file

    path = Path(directory) / STATS_FILE
    return load_file(str(path)) if path.is_file() else None


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
