"""eval.name_identity: the padded baseline it compares against does depend on a name's batch,
the encoder's own encoding does not."""

from __future__ import annotations

import numpy as np

from eval.name_identity import compare, padded_encode, unpadded_encode

#: names of distinct token lengths, and others of other lengths to mix in
NAMES = ["aspirin", "heart failure", "5,7-dichlorokynurenic acid", "tumor",
         "angiotensin-converting enzyme inhibitor", "cardiac asystole"]
OTHERS = ["N-[2-(4-chlorophenyl)ethyl]-3-(trifluoromethyl)benzamide hydrochloride",
          "a very long name of a compound, written out with many words and commas"]


def test_unpadded_vectors_do_not_move_and_padded_ones_do(tiny_encoder):
    # fp32: the tiny encoder's vectors are small enough that fp16 rounds most moves away
    now = compare(unpadded_encode, tiny_encoder, NAMES, OTHERS, len(NAMES), np.float32)
    before = compare(padded_encode, tiny_encoder, NAMES, OTHERS, len(NAMES), np.float32)
    assert now["differ_mixed"] == 0 and now["differ_alone"] == 0
    assert before["differ_mixed"] > 0 and before["differ_alone"] > 0
    assert now["names"] == before["names"] == len(NAMES) and now["seconds"] >= 0
