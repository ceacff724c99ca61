"""Chunk batching: padding into tensors, and length-grouped batches under a size and a token cap."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.batches import collate_chunks, length_batches
from e2e_linker.collective.chunking import Chunk


def _chunk(n: int, first_id: int = 100) -> Chunk:
    return Chunk(doc_index=0, token_start=0, own_start=0, own_end=n,
                 input_ids=list(range(first_id, first_id + n)), starts=[-1] * n, ends=[-1] * n,
                 word_start=[i % 2 == 1 for i in range(n)], word_end=[i % 2 == 0 for i in range(n)],
                 segment=[0] * n, owned=[True] * n)


def test_collate_pads_every_field():
    batch = collate_chunks([_chunk(3), _chunk(5, first_id=200)], pad_id=7)
    assert batch["input_ids"].tolist() == [[100, 101, 102, 7, 7], [200, 201, 202, 203, 204]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert batch["segment"].tolist() == [[0, 0, 0, -1, -1], [0] * 5]
    assert batch["owned"].tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    assert batch["word_start"].tolist()[0] == [False, True, False, False, False]
    assert batch["word_end"].tolist()[0] == [True, False, True, False, False]
    assert batch["word_start"].dtype == torch.bool and batch["input_ids"].dtype == torch.long


@pytest.mark.parametrize("lengths,size,max_tokens,expected", [
    ([3, 9, 5, 7], 2, None, [[1, 3], [2, 0]]),  # longest first, two a batch
    ([3, 9, 5, 7], 10, None, [[1, 3, 2, 0]]),
    ([3, 9, 5, 7], 10, 20, [[1, 3], [2, 0]]),  # 3 × 9 > 20 tokens
    ([4, 4, 4], 10, 8, [[0, 1], [2]]),
    ([12], 4, 8, [[0]]),  # one chunk over the cap still gets its own batch
    ([], 4, None, []),
])
def test_length_batches(lengths, size, max_tokens, expected):
    chunks = [_chunk(n) for n in lengths]
    batches = list(length_batches(chunks, size, max_tokens))
    assert batches == expected
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
