"""TextEncoder.encode: a text's vector is the one it has alone, whatever texts are encoded with
it (none pads it, and a batch of few short texts runs as many token rows as a larger one)."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.encoder.text_encoder import TextEncoder, length_groups

#: texts of distinct token lengths (checked below), from none to past ``max_length``
NAMES = ["aspirin", "heart failure", "5,7-dichlorokynurenic acid", "tumor",
         "angiotensin-converting enzyme inhibitor",
         "N-[2-(4-chlorophenyl)ethyl]-3-(trifluoromethyl)benzamide hydrochloride",
         "a very long name of a compound, written out with many words and commas, to the end",
         "cardiac asystole", ""]
#: texts of one token length each group (5 and 3 word pieces with [CLS] and [SEP])
SAME_LENGTH = ["aspirin", "lidocaine", "Na", "ion", "x"]


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_a_vector_does_not_depend_on_its_batch(tiny_dir, pooling):
    encoder = TextEncoder.from_pretrained(str(tiny_dir), pooling=pooling, max_length=32)
    assert len({len(ids) for ids in encoder.token_ids(NAMES)}) == len(NAMES)
    together = encoder.encode(NAMES, batch_size=256)
    alone = np.stack([encoder.encode([name])[0] for name in NAMES])
    reversed_small = encoder.encode(NAMES[::-1], batch_size=2)[::-1]
    assert np.array_equal(together, alone)
    assert np.array_equal(together, reversed_small)
    assert together.shape == (len(NAMES), encoder.hidden_size)
    assert np.isfinite(together).all() and len({row.tobytes() for row in together}) == len(NAMES)


def test_a_short_texts_vector_does_not_depend_on_how_many_share_its_length(tiny_encoder):
    lengths = [len(ids) for ids in tiny_encoder.token_ids(SAME_LENGTH)]
    assert lengths == [5, 5, 3, 3, 3]
    together = tiny_encoder.encode(SAME_LENGTH)
    alone = np.stack([tiny_encoder.encode([text])[0] for text in SAME_LENGTH])
    pairs = tiny_encoder.encode(SAME_LENGTH, batch_size=2)
    assert np.array_equal(together, alone) and np.array_equal(together, pairs)


def test_encode_keeps_input_order_and_dtype(tiny_encoder):
    vectors = tiny_encoder.encode(NAMES, dtype=np.float16, normalize=True)
    assert vectors.dtype == np.float16
    assert np.allclose(np.linalg.norm(vectors.astype(np.float32), axis=1), 1.0, atol=1e-2)
    first = tiny_encoder.encode([NAMES[2]], dtype=np.float16, normalize=True)[0]
    assert np.array_equal(vectors[2], first)
    assert tiny_encoder.encode([]).shape == (0, tiny_encoder.hidden_size)


def test_length_groups_batches_rows_of_one_length():
    ids = [[1, 2, 3], [1, 2], [4, 5, 6], [7, 8], [9, 9, 9], [1, 2, 3, 4]]
    batches = length_groups(ids, batch_size=2)
    assert [rows for rows, _ in batches] == [[1, 3], [0, 2], [4], [5]]
    for rows, batch in batches:
        assert [ids[r] for r in rows] == batch and len({len(b) for b in batch}) == 1
