"""Unit-length rows: how the normalizer's vectors (cached lists, on-demand rows, queries) are
scaled, in one place so every path rounds the same way (fp32 first, then fp16 where stored)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def encode_unit(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256,
                progress: bool | str = False) -> np.ndarray:
    """L2-normalised float32 vectors of ``texts`` (queries: small, never cached)."""
    if not texts:
        return np.zeros((0, encoder.hidden_size), np.float32)
    return unit_rows(encoder.encode(list(texts), batch_size=batch_size, progress=progress))
