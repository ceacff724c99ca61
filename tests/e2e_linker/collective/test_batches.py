"""Chunk batching: padding into tensors (to the longest, or to a multiple), and batches of one
padded length under a size and a token cap."""

from __future__ import annotations

import pytest
import torch

from e2e_linker.collective.batches import collate_chunks, length_batches, padded_length
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


def test_collate_pads_to_a_multiple():
    batch = collate_chunks([_chunk(3), _chunk(17)], pad_id=7, pad_multiple=16)
    assert batch["input_ids"].shape == (2, 32)
    assert batch["attention_mask"].sum(1).tolist() == [3, 17]
    alone = collate_chunks([_chunk(3)], pad_id=7, pad_multiple=16)
    assert alone["input_ids"].shape == (1, 16)  # a chunk alone is padded as well
    assert collate_chunks([_chunk(16)], pad_multiple=16)["input_ids"].shape == (1, 16)


@pytest.mark.parametrize("length,multiple,expected", [
    (1, 16, 16), (16, 16, 16), (17, 16, 32), (512, 16, 512), (7, 1, 7)])
def test_padded_length(length, multiple, expected):
    assert padded_length(length, multiple) == expected


@pytest.mark.parametrize("lengths,size,max_tokens,expected", [
    ([3, 9, 5, 7], 2, None, [[1], [3], [2], [0]]),  # one exact length a batch
    ([3, 9, 5, 9, 9], 2, None, [[1, 3], [4], [2], [0]]),  # longest first, two a batch
    ([4, 4, 4], 10, 8, [[0, 1], [2]]),  # 3 × 4 > 8 tokens
    ([12], 4, 8, [[0]]),  # one chunk over the cap still gets its own batch
    ([], 4, None, []),
])
def test_length_batches(lengths, size, max_tokens, expected):
    chunks = [_chunk(n) for n in lengths]
    batches = list(length_batches(chunks, size, max_tokens))
    assert batches == expected
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))


@pytest.mark.parametrize("lengths,size,max_tokens,expected", [
    # 3, 9, 5, 7 all pad to 16: one batch, in their order
    ([3, 9, 5, 7], 10, None, [[0, 1, 2, 3]]),
    ([3, 20, 16, 17, 40], 10, None, [[4], [1, 3], [0, 2]]),  # 48, then 32, then 16
    ([3, 20, 16, 17], 1, None, [[1], [3], [0], [2]]),
    ([3, 9, 5], 10, 40, [[0, 1], [2]]),  # the cap counts padded tokens: 3 × 16 > 40
])
def test_length_batches_share_a_batch_only_within_a_padded_length(lengths, size, max_tokens,
                                                                   expected):
    chunks = [_chunk(n) for n in lengths]
    batches = list(length_batches(chunks, size, max_tokens, pad_multiple=16))
    assert batches == expected
    for b in batches:
        assert len({padded_length(lengths[i], 16) for i in b}) == 1
