"""Pad chunks into tensors, and group chunks of similar length so padding stays small."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from e2e_linker.collective.chunking import Chunk


def collate_chunks(chunks: Sequence[Chunk], pad_id: int = 0,
                   device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Tensors (B, T) for a list of chunks: ids, mask, word boundaries, passage and ownership."""
    length = max(len(c) for c in chunks)
    n = len(chunks)
    input_ids = torch.full((n, length), pad_id, dtype=torch.long)
    attention = torch.zeros((n, length), dtype=torch.long)
    word_start = torch.zeros((n, length), dtype=torch.bool)
    word_end = torch.zeros((n, length), dtype=torch.bool)
    segment = torch.full((n, length), -1, dtype=torch.long)
    owned = torch.zeros((n, length), dtype=torch.bool)
    for row, chunk in enumerate(chunks):
        k = len(chunk)
        input_ids[row, :k] = torch.tensor(chunk.input_ids)
        attention[row, :k] = 1
        word_start[row, :k] = torch.tensor(chunk.word_start)
        word_end[row, :k] = torch.tensor(chunk.word_end)
        segment[row, :k] = torch.tensor(chunk.segment)
        owned[row, :k] = torch.tensor(chunk.owned)
    batch = {
        "input_ids": input_ids, "attention_mask": attention, "word_start": word_start,
        "word_end": word_end, "segment": segment, "owned": owned,
    }
    return {k: v.to(device) for k, v in batch.items()}


def length_batches(chunks: Sequence[Chunk], batch_size: int,
                   max_tokens: int | None = None) -> Iterator[list[int]]:
    """Indices of chunks grouped by similar length (longest first), at most ``batch_size`` each.

    ``max_tokens`` additionally caps batch_size × longest length, which bounds memory.
    """
    order = sorted(range(len(chunks)), key=lambda i: -len(chunks[i]))
    batch: list[int] = []
    for i in order:
        longest = len(chunks[batch[0]]) if batch else len(chunks[i])
        if batch and (len(batch) >= batch_size
                      or (max_tokens and (len(batch) + 1) * longest > max_tokens)):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
