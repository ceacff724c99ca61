"""Rows of a KB matrix encoded on demand: the same vectors, each text encoded once, kept."""

from __future__ import annotations

import numpy as np

from e2e_linker.kb_search.partial_matrix import PartialKBMatrix

NAMES = ["aspirin", "ibuprofen", "renal failure", "headache", "nausea", "aspirin", "cisplatin"]


def _matrix(folder, encoder, unit: bool = False) -> PartialKBMatrix:
    return PartialKBMatrix(folder / "kb" / "list.npy", NAMES, encoder, folder, progress=False,
                           unit=unit)


def _counting(encoder, monkeypatch) -> list[str]:
    seen: list[str] = []
    encode = encoder.encode

    def counted(texts, *args, **kwargs):
        seen.extend(texts)
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(encoder, "encode", counted)
    return seen


def test_rows_are_the_encoders_vectors_and_only_missing_ones_are_encoded(tiny_encoder, tmp_path,
                                                                          monkeypatch):
    full = tiny_encoder.encode(NAMES, dtype=np.float16)
    seen = _counting(tiny_encoder, monkeypatch)
    matrix = _matrix(tmp_path, tiny_encoder)
    got = matrix.rows(np.array([3, 1, 3]))
    np.testing.assert_allclose(got.astype(np.float32), full[[3, 1, 3]].astype(np.float32),
                               atol=2e-3)
    assert sorted(seen) == ["headache", "ibuprofen"] and matrix.present == 2
    matrix.rows(np.array([1, 2]))
    assert sorted(seen) == ["headache", "ibuprofen", "renal failure"]


def test_a_text_at_two_rows_is_encoded_once_and_fills_both(tiny_encoder, tmp_path, monkeypatch):
    seen = _counting(tiny_encoder, monkeypatch)
    matrix = _matrix(tmp_path, tiny_encoder)
    got = matrix.rows(np.array([0, 5]))
    assert seen == ["aspirin"] and matrix.present == 2
    np.testing.assert_array_equal(got[0], got[1])


def test_encoded_rows_are_kept_for_the_next_run(tiny_encoder, tmp_path, monkeypatch):
    first = _matrix(tmp_path, tiny_encoder)
    kept = first.rows(np.array([2, 4]))
    seen = _counting(tiny_encoder, monkeypatch)
    second = _matrix(tmp_path, tiny_encoder)
    assert second.present == 2
    np.testing.assert_array_equal(second.rows(np.array([2, 4])), kept)
    assert seen == []


def test_a_complete_matrix_becomes_the_full_kb_matrix(tiny_encoder, tmp_path):
    matrix = _matrix(tmp_path, tiny_encoder)
    matrix.rows(np.arange(3))
    assert matrix.path.is_file() and not matrix.full_path.is_file()
    everything = matrix.rows(np.arange(len(NAMES)))
    assert matrix.full_path.is_file()
    assert not matrix.path.exists() and not matrix.have_path.exists()
    np.testing.assert_array_equal(np.load(matrix.full_path), everything)


def test_a_have_file_of_another_length_is_not_trusted(tiny_encoder, tmp_path):
    matrix = _matrix(tmp_path, tiny_encoder)
    matrix.rows(np.array([0]))
    np.save(matrix.have_path, np.ones(3, dtype=bool))
    again = _matrix(tmp_path, tiny_encoder)
    assert again.present == 0


def test_unit_rows_are_scaled_like_the_normalizers_cache(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.cache import encode_unit

    got = _matrix(tmp_path, tiny_encoder, unit=True).rows(np.array([1, 2]))
    expected = encode_unit(tiny_encoder, [NAMES[1], NAMES[2]]).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), atol=2e-3)
    np.testing.assert_allclose(np.linalg.norm(got.astype(np.float32), axis=1), 1, atol=2e-3)
