"""Unit rows: length 1 in fp32, zero rows kept, queries encoded the same way."""

from __future__ import annotations

import numpy as np

from e2e_linker.kb_search.unit_vectors import encode_unit, unit_rows


def test_rows_are_scaled_to_length_one_and_zero_rows_stay_zero():
    got = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], np.float16))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_encode_unit_of_nothing_has_the_encoders_width(tiny_encoder):
    assert encode_unit(tiny_encoder, []).shape == (0, tiny_encoder.hidden_size)
    got = encode_unit(tiny_encoder, ["aspirin", "headache"])
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=1e-5)
