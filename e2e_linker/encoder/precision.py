"""Inference precision of the mention encoder: fp32, or bf16 autocast where the hardware has it.

Why: the encoder forward is the pipeline's limit (``eval.bench``), and on CUDA GPUs a bf16
autocast forward runs on tensor cores while the span scores and vectors move by far less than
the decisions they feed (docs/decisions/0033-encoder-precision.md has the F1 change).
Only the transformer runs in bf16; the states are returned as fp32, so span scoring, pooling
and KB search stay fp32, and KB name vectors (cached, entity tower) are never computed in bf16.

``auto`` takes bf16 on CUDA GPUs that support it and fp32 on CPUs: on this project's
AVX512-BF16 CPU (no AMX tiles) the bf16 forward of the default model was *slower* than fp32,
with autocast and with bf16 weights alike, as oneDNN's fp32 kernels already run near the
cores' peak there (docs/decisions/0033-encoder-precision.md). On CPUs, ``--quantize`` (int8) is the faster
path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

PRECISIONS = ("auto", "fp32", "bf16")


def bf16_pays(device: torch.device | str) -> bool:
    """Whether a bf16 forward is expected to be faster than fp32 on ``device``: CUDA GPUs with
    bf16 support (not CPUs; see the module docstring for the measurement)."""
    device = torch.device(device)
    return device.type == "cuda" and torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """``fp32`` or ``bf16`` for ``precision`` on ``device`` (``auto``: bf16 where it pays)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if precision == "auto":
        return "bf16" if bf16_pays(device) else "fp32"
    return precision


@contextlib.contextmanager
def autocast(precision: str, device: torch.device | str) -> Iterator[None]:
    """A bf16 autocast region for ``precision == "bf16"``, a no-op for ``fp32``."""
    if precision == "bf16":
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
            yield
    else:
        yield
