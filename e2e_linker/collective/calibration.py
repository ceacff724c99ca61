"""Activation statistics of the collective model's mention encoder, read the way ``linker
annotate`` reads documents: what ``linker calibrate`` writes and ``--quantize`` needs
(:mod:`e2e_linker.encoder.quantization`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from e2e_linker.collective.annotator import Annotator
from e2e_linker.encoder.quantization import linear_layers


@torch.inference_mode()
def activation_absmax(model, docs: Sequence) -> dict[str, torch.Tensor]:
    """Per-input-channel absmax of every linear layer of ``model``'s mention encoder while it
    reads ``docs`` exactly as ``linker annotate`` does (same chunks, batches and padding)."""
    found: dict[str, torch.Tensor] = {}
    hooks = []
    for name, layer in linear_layers(model.encoder.model).items():
        def record(_module, inputs, _output, name=name):
            x = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0).float().cpu()
            found[name] = torch.maximum(found[name], x) if name in found else x
        hooks.append(layer.register_forward_hook(record))
    try:
        Annotator.from_parts(model, None).detect(list(docs))
    finally:
        for hook in hooks:
            hook.remove()
    if not found:
        raise ValueError("no linear layer saw any input: are the calibration documents empty?")
    return found
