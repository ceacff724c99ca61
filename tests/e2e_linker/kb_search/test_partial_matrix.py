"""Rows of a KB matrix encoded on demand: the same vectors, each text encoded once, kept."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from e2e_linker.errors import UserError
from e2e_linker.kb_search.integrity import npy_layout, record_path
from e2e_linker.kb_search.partial_matrix import PartialKBMatrix, check_partial
from tests.helpers.damage import poke
from tests.helpers.tiny import counted_encodes

NAMES = ["aspirin", "ibuprofen", "renal failure", "headache", "nausea", "aspirin", "cisplatin"]


def _matrix(folder, encoder, unit: bool = False) -> PartialKBMatrix:
    return PartialKBMatrix(folder / "kb" / "list.npy", NAMES, encoder, folder, progress=False,
                           unit=unit)




def test_rows_are_the_encoders_vectors_and_only_missing_ones_are_encoded(tiny_encoder, tmp_path,
                                                                          monkeypatch):
    full = tiny_encoder.encode(NAMES, dtype=np.float16)
    seen = counted_encodes(tiny_encoder, monkeypatch)
    matrix = _matrix(tmp_path, tiny_encoder)
    got = matrix.rows(np.array([3, 1, 3]))
    np.testing.assert_allclose(got.astype(np.float32), full[[3, 1, 3]].astype(np.float32),
                               atol=2e-3)
    assert sorted(seen) == ["headache", "ibuprofen"] and matrix.present == 2
    matrix.rows(np.array([1, 2]))
    assert sorted(seen) == ["headache", "ibuprofen", "renal failure"]


def test_a_text_at_two_rows_is_encoded_once_and_fills_both(tiny_encoder, tmp_path, monkeypatch):
    seen = counted_encodes(tiny_encoder, monkeypatch)
    matrix = _matrix(tmp_path, tiny_encoder)
    got = matrix.rows(np.array([0, 5]))
    assert seen == ["aspirin"] and matrix.present == 2
    np.testing.assert_array_equal(got[0], got[1])


def test_encoded_rows_are_kept_for_the_next_run(tiny_encoder, tmp_path, monkeypatch):
    first = _matrix(tmp_path, tiny_encoder)
    kept = first.rows(np.array([2, 4]))
    seen = counted_encodes(tiny_encoder, monkeypatch)
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
    from e2e_linker.kb_search.unit_vectors import encode_unit

    got = _matrix(tmp_path, tiny_encoder, unit=True).rows(np.array([1, 2]))
    expected = encode_unit(tiny_encoder, [NAMES[1], NAMES[2]]).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), atol=2e-3)
    np.testing.assert_allclose(np.linalg.norm(got.astype(np.float32), axis=1), 1, atol=2e-3)


# ---- integrity: damaged files are found, named, discarded and encoded again ------------------

def _stored(tmp_path, encoder) -> tuple[PartialKBMatrix, np.ndarray]:
    matrix = _matrix(tmp_path, encoder)
    return matrix, matrix.rows(np.array([0, 1, 2, 4]))


@pytest.mark.parametrize("damage,named", [
    ("have_half", "partial-have.npy"), ("have_empty", "partial-have.npy"),
    ("rows_short", "partial.npy"), ("have_wrong_length", "partial-have.npy")])
def test_a_damaged_partial_file_is_named_discarded_and_encoded_again(tiny_encoder, tmp_path,
                                                                     capsys, damage, named):
    matrix, kept = _stored(tmp_path, tiny_encoder)
    target = matrix.have_path if named == "partial-have.npy" else matrix.path
    size = target.stat().st_size
    if damage == "have_wrong_length":
        np.save(target, np.ones(3, dtype=bool))
    else:
        with open(target, "r+b") as handle:
            handle.truncate({"have_half": size // 2, "have_empty": 0, "rows_short": size - 1}
                            [damage])
    again = _matrix(tmp_path, tiny_encoder)
    err = capsys.readouterr().err
    assert f"KB cache: {target} is damaged (" in err and "discarded" in err
    assert again.present == 0 and not matrix.have_path.exists()
    np.testing.assert_array_equal(again.rows(np.array([0, 1, 2, 4])), kept)


def test_rows_overwritten_in_place_fail_their_sums_and_are_encoded_again(tiny_encoder, tmp_path,
                                                                         capsys):
    matrix, kept = _stored(tmp_path, tiny_encoder)
    offset = npy_layout(matrix.path).offset
    with open(matrix.path, "r+b") as handle:  # the stored vectors zeroed, same size
        handle.seek(offset)
        handle.write(bytes(matrix.path.stat().st_size - offset))
    again = _matrix(tmp_path, tiny_encoder)
    assert again.present == 4  # not known yet: rows are checked when first read
    np.testing.assert_array_equal(again.rows(np.array([0, 1, 2, 4])), kept)
    err = capsys.readouterr().err
    assert err.count("KB cache:") == 1
    assert (f"KB cache: {matrix.path} is damaged (4 of 4 stored rows do not match their "
            f"checksums in list.partial-sums.npy); those rows are encoded again") in err
    assert _matrix(tmp_path, tiny_encoder).rows(np.array([0, 1, 2, 4])).any(axis=1).all()
    assert check_partial(matrix.full_path)[0].state == "ok"


@pytest.mark.parametrize("damage", ["zeroed", "missing", "zeroed_unsealed", "poked"])
def test_a_missing_or_zeroed_sums_file_is_damage_not_none_recorded(tiny_encoder, tmp_path,
                                                                   capsys, damage):
    """Issue 47: 0 used to mean "no sum recorded", so a zeroed sums file switched the row
    checks off without a word; now the file is named, and its rows encoded again."""
    matrix, kept = _stored(tmp_path, tiny_encoder)
    sums = matrix.sums_path
    offset = npy_layout(sums).offset
    if damage == "missing":
        sums.unlink()
    elif damage == "poked":
        poke(sums, offset + 4, bytes(10))  # 10 bytes: the sums of rows 1 to 3, in place
    else:
        poke(sums, offset, bytes(sums.stat().st_size - offset))
        if damage == "zeroed_unsealed":  # as a cache written before sums had records
            record_path(sums).unlink()
    assert [v.state for v in check_partial(matrix.full_path)] == ["damaged"]
    rows = matrix.path
    with open(rows, "r+b") as handle:  # and a stored row changed: no longer found by sums
        handle.seek(npy_layout(rows).offset)
        handle.write(bytes(10))
    again = _matrix(tmp_path, tiny_encoder)
    err = capsys.readouterr().err
    assert err.count("KB cache:") == 1 and f"KB cache: {sums} is damaged (" in err, err
    assert again.present == 0
    np.testing.assert_array_equal(again.rows(np.array([0, 1, 2, 4])), kept)
    assert [v.state for v in check_partial(matrix.full_path)] == ["ok", "ok", "ok"]


def test_the_have_and_sums_files_are_sealed(tiny_encoder, tmp_path, capsys):
    matrix, _ = _stored(tmp_path, tiny_encoder)
    assert record_path(matrix.have_path).is_file() and record_path(matrix.sums_path).is_file()
    poke(matrix.have_path, npy_layout(matrix.have_path).offset + 3, b"\x01")  # row 3 "present"
    assert check_partial(matrix.full_path)[0].why == "1 of 1 blocks do not match their checksums"
    assert _matrix(tmp_path, tiny_encoder).present == 0
    assert f"KB cache: {matrix.have_path} is damaged" in capsys.readouterr().err


def test_rows_are_written_through_the_file_and_a_full_disk_leaves_nothing(tiny_encoder,
                                                                         tmp_path, monkeypatch):
    """ENOSPC from the write itself (the disk filled after the room check): an OSError for the
    caller, no rows file left when this write created it, no temporary file."""
    from e2e_linker.kb_search import partial_matrix

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(partial_matrix.os, "pwrite", full)
    matrix = _matrix(tmp_path, tiny_encoder)
    with pytest.raises(UserError, match="cannot write the KB cache in .*No space left"):
        matrix.rows(np.array([1, 2]))
    assert sorted(p.name for p in (tmp_path / "kb").iterdir()) == []
    monkeypatch.undo()
    matrix.rows(np.array([1]))  # a later write, then a failing one: the stored rows stay
    monkeypatch.setattr(partial_matrix.os, "pwrite", full)
    with pytest.raises(UserError):
        matrix.rows(np.array([2]))
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "kb").iterdir()
                  if not p.name.endswith((".sums.json", ".verified.json"))) == [
        "list.partial-have.npy", "list.partial-sums.npy", "list.partial.npy"]
    assert _matrix(tmp_path, tiny_encoder).present == 1


def test_no_room_is_said_before_anything_is_written(tiny_encoder, tmp_path, monkeypatch):
    from e2e_linker.kb_search import cache_folder

    monkeypatch.setattr(cache_folder, "ROOM_MARGIN", 1 << 60)
    with pytest.raises(UserError, match=r"cannot write the KB cache in .*: only .* MB free, "
                                        r"and encoding shortlisted KB names needs"):
        _matrix(tmp_path, tiny_encoder).rows(np.array([1]))
    assert not (tmp_path / "kb").exists() or list((tmp_path / "kb").iterdir()) == []


def test_a_complete_matrix_is_sealed_and_then_checked_as_a_file(tiny_encoder, tmp_path, capsys):
    matrix = _matrix(tmp_path, tiny_encoder)
    everything = matrix.rows(np.arange(len(NAMES)))
    assert record_path(matrix.full_path).is_file()
    with open(matrix.full_path, "r+b") as handle:
        handle.truncate(matrix.full_path.stat().st_size - 1)
    again = _matrix(tmp_path, tiny_encoder)
    assert again.present == 0 and "list.npy is damaged" in capsys.readouterr().err
    np.testing.assert_array_equal(again.rows(np.arange(len(NAMES))), everything)


class _Given:
    """A row source holding the vectors of some rows (a stand-in for another KB's list)."""

    def __init__(self, vectors: dict[int, np.ndarray]):
        self.vectors = vectors
        self.asked: list[list[int]] = []

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.asked.append(rows.tolist())
        found = np.array([r in self.vectors for r in rows.tolist()], dtype=bool)
        return found, np.stack([self.vectors[r] for r in rows[found].tolist()])


def test_rows_a_source_holds_are_taken_and_only_the_rest_encoded(tiny_encoder, tmp_path,
                                                                  monkeypatch):
    full = tiny_encoder.encode(NAMES, dtype=np.float16)
    given = _Given({1: np.full(full.shape[1], 0.5, np.float16), 4: full[4]})
    seen = counted_encodes(tiny_encoder, monkeypatch)
    matrix = PartialKBMatrix(tmp_path / "kb" / "list.npy", NAMES, tiny_encoder, tmp_path,
                             progress=False, source=given)
    got = matrix.rows(np.array([4, 1, 2]))
    assert given.asked == [[1, 2, 4]] and seen == ["renal failure"]
    assert matrix.encoded_here == 1 and matrix.present == 3
    np.testing.assert_array_equal(got[1], given.vectors[1])  # stored as taken
    again = _matrix(tmp_path, tiny_encoder)  # kept with sums of their own: read back, checked
    np.testing.assert_array_equal(again.rows(np.array([1, 4])), got[[1, 0]])
    assert seen == ["renal failure"] and check_partial(again.full_path)[0].state == "ok"
