"""Pad chunks into tensors, and group chunks of one padded length into batches.

Why a pad multiple: on the CPU a chunk's encoder forward padded to the longest chunk of its
batch is not the same bits as the same chunk padded less (the attention sums over a padded row
differ in their last bits), so ``linker annotate``'s scores used to depend on which chunks
shared a batch, and ``linker serve`` could not batch requests and still give the command's
bytes. Padding every chunk to a multiple of :data:`PAD_MULTIPLE` tokens and batching only
chunks of the same padded length makes each chunk's forward the same whatever shares its batch
(the check: docs/decisions/0034-padded-length-batches.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch

from e2e_linker.collective.chunking import Chunk

#: chunks are padded to a multiple of this many tokens at inference (``linker annotate``)
PAD_MULTIPLE = 16


def padded_length(length: int, pad_multiple: int = 1) -> int:
    """``length`` rounded up to a multiple of ``pad_multiple`` (1: unchanged)."""
    return -(-length // pad_multiple) * pad_multiple


def collate_chunks(chunks: Sequence[Chunk], pad_id: int = 0,
                   device: torch.device | str = "cpu",
                   pad_multiple: int = 1) -> dict[str, torch.Tensor]:
    """Tensors (B, T) for a list of chunks: ids, mask, word boundaries, passage and ownership.

    T is the longest chunk rounded up to ``pad_multiple`` (1, training's default: the longest).
    Each field is filled in one numpy step from all chunks' values (one tensor per chunk and
    field cost more than the encoder's own host work).
    """
    lengths = np.fromiter((len(c) for c in chunks), np.int64, len(chunks))
    length = padded_length(int(lengths.max()), pad_multiple)
    real = np.arange(length) < lengths[:, None]  # (B, T): a chunk's own positions, row by row

    def padded(values: Callable[[Chunk], list], fill, dtype) -> torch.Tensor:
        out = np.full(real.shape, fill, dtype)
        out[real] = np.fromiter(itertools.chain.from_iterable(values(c) for c in chunks),
                                dtype, int(lengths.sum()))
        return torch.from_numpy(out)

    batch = {
        "input_ids": padded(lambda c: c.input_ids, pad_id, np.int64),
        "attention_mask": torch.from_numpy(real.astype(np.int64)),
        "word_start": padded(lambda c: c.word_start, False, np.bool_),
        "word_end": padded(lambda c: c.word_end, False, np.bool_),
        "segment": padded(lambda c: c.segment, -1, np.int64),
        "owned": padded(lambda c: c.owned, False, np.bool_),
    }
    return {k: v.to(device) for k, v in batch.items()}


def length_batches(chunks: Sequence[Chunk], batch_size: int,
                   max_tokens: int | None = None,
                   pad_multiple: int = 1) -> Iterator[list[int]]:
    """Indices of chunks grouped by padded length (longest first), at most ``batch_size`` each.

    Chunks share a batch only when they pad to the same length (their length rounded up to
    ``pad_multiple``), so :func:`collate_chunks` with that multiple gives each chunk the same
    tensor row whatever else is in its batch. ``max_tokens`` additionally caps batch_size ×
    padded length, which bounds memory.
    """
    def key(i: int) -> int:
        return padded_length(len(chunks[i]), pad_multiple)

    order = sorted(range(len(chunks)), key=lambda i: -key(i))  # stable: document order within
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) >= batch_size or key(batch[0]) != key(i)
                      or (max_tokens and (len(batch) + 1) * key(i) > max_tokens)):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
