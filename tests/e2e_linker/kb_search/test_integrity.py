"""Integrity records of the vector cache: written with the file, checked on load, adopted for
files that have none, and every kind of damage told apart from a file being replaced."""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest

from e2e_linker.errors import UserError
from e2e_linker.kb_search import integrity
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    UNVERIFIED,
    DamagedFile,
    adopt,
    atomic_write,
    check_file,
    discard_damaged,
    npy_layout,
    open_matrix,
    pending_path,
    record_path,
    save_array,
    save_lines,
)
from tests.helpers.damage import poke


def _matrix(rows: int = 3000, dim: int = 48, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float16)




def test_a_sealed_file_is_the_bytes_np_save_writes(tmp_path):
    values = _matrix()
    save_array(tmp_path / "a.npy", values)
    np.save(tmp_path / "b.npy", values)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    record = json.loads(record_path(tmp_path / "a.npy").read_text())
    assert record["bytes"] == (tmp_path / "a.npy").stat().st_size
    assert record["head_bytes"] == npy_layout(tmp_path / "a.npy").offset
    assert record["block_bytes"] % (48 * 2) == 0  # whole rows
    assert not pending_path(tmp_path / "a.npy").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "a.npy.sums.json",
                                                          "a.npy.verified.json", "b.npy"]


def test_size_header_and_every_block_are_checked(tmp_path):
    path = tmp_path / "m.npy"
    save_array(path, _matrix())
    assert check_file(path, full=True).state == OK
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 1)
    assert check_file(path).why == "288,127 bytes where its header needs 288,128 (cut short)"
    save_array(path, _matrix())
    poke(path, path.stat().st_size - 10, b"\x00\x01")
    verdict = check_file(path)
    assert verdict.state == DAMAGED and verdict.bad_blocks == (0,)
    assert verdict.why == "1 of 1 blocks do not match their checksums"
    (tmp_path / "e.npy").write_bytes(b"")
    assert check_file(tmp_path / "e.npy").why == "empty"


def test_a_large_file_is_checked_whole_once_per_version(tmp_path, monkeypatch):
    """Issue 47: a file over 16 MiB used to be sampled on load, so a 10-byte overwrite in a
    block not sampled changed links silently. Now every block is read the first time a version
    of the file is loaded, and only a version checked whole is trusted on its stamp."""
    monkeypatch.setattr(integrity, "BLOCK_BYTES", 4096)
    path = tmp_path / "big.npy"
    save_array(path, _matrix(4000, 32))  # 256,000 bytes of rows: 63 blocks of 4,096 bytes
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())  # as a later process
    first = check_file(path)
    assert first.state == OK and first.checked in (0, 63)  # 0: stamped when written
    layout = npy_layout(path)
    poke(path, layout.offset + 30 * 4096 + 7, bytes(10))  # 10 bytes in the middle
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    damaged = check_file(path)
    assert damaged.state == DAMAGED and damaged.bad_blocks == (30,) and damaged.checked == 63
    assert damaged.block_rows == 4096 // 64


def test_a_whole_check_is_remembered_on_disk_and_only_for_that_version(tmp_path, monkeypatch):
    path = tmp_path / "m.npy"
    save_array(path, _matrix())
    stamp = integrity.stamp_path(path)
    assert stamp.is_file()
    old = stamp.stat().st_mtime_ns - 5_000_000_000
    for item in (path, record_path(path)):  # written long before the stamp: not racy
        os.utime(item, ns=(old, old))
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    assert check_file(path).checked == 1  # new times, a new version: read whole, stamped
    later = path.stat().st_ctime_ns + 1_000_000_000
    os.utime(stamp, ns=(later, later))  # the stamp a tick after the file's last change
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    assert check_file(path).checked == 0  # the stamp stands for a whole check: a few stats
    assert check_file(path, full=True).checked == 1  # --verify reads every byte anyway
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    with open(path, "r+b") as handle:  # a change in place with the times put back: the
        handle.seek(npy_layout(path).offset)  # ctime still moves, so it is a new version
        handle.write(bytes(10))
    os.utime(path, ns=(old, old))
    assert check_file(path).state == DAMAGED
    integrity.discard(path)
    assert not stamp.exists()


def test_a_change_in_the_same_clock_tick_as_the_stamp_is_not_trusted(tmp_path, monkeypatch):
    path = tmp_path / "m.npy"
    save_array(path, _matrix())
    stamp = integrity.stamp_path(path)
    ctime = path.stat().st_ctime_ns
    os.utime(stamp, ns=(ctime, ctime))  # stamp written in the tick the file changed
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    key = integrity.file_version(path) + integrity.file_version(record_path(path))
    assert not integrity.remembered(key, stamp)
    os.utime(stamp, ns=(ctime + 1, ctime + 1))
    assert integrity.remembered(key, stamp)


def test_a_file_being_replaced_is_not_taken_for_damage(tmp_path):
    """A writer renames the file, then its record: in between, the pending record holds."""
    path = tmp_path / "m.npy"
    save_array(path, _matrix(seed=1))
    old_record = record_path(path).read_text()
    save_array(path, _matrix(seed=2))
    new_record = record_path(path).read_text()
    record_path(path).write_text(old_record)
    pending_path(path).write_text(new_record)  # killed between the two renames
    assert check_file(path, full=True).state == OK


def test_a_file_without_a_record_is_adopted_after_a_whole_check(tmp_path):
    path = tmp_path / "old.npy"
    np.save(path, _matrix())
    assert check_file(path).state == UNVERIFIED
    assert adopt(path).state == OK and record_path(path).is_file()
    assert check_file(path, full=True).state == OK
    zeroed = tmp_path / "zeroed.npy"
    values = _matrix()
    values[7] = 0
    np.save(zeroed, values)
    assert adopt(zeroed).why == "row 7 is all zeros, which no encoder writes"
    assert not record_path(zeroed).exists()


def test_an_unreadable_record_leaves_the_file_unverified(tmp_path):
    path = tmp_path / "m.npy"
    save_array(path, _matrix())
    record_path(path).write_text("{not json")
    assert check_file(path).state == UNVERIFIED


def test_text_files_are_sealed_too(tmp_path):
    path = tmp_path / "names.jsonl"
    save_lines(path, [json.dumps(f"name {i}") + "\n" for i in range(100)])
    assert check_file(path, npy=False, full=True).state == OK
    poke(path, 3, b"X")
    assert check_file(path, npy=False, full=True).state == DAMAGED


def test_open_matrix_discards_a_damaged_file_and_says_so(tmp_path, capsys):
    path = tmp_path / "kb" / "list.npy"
    path.parent.mkdir()
    save_array(path, _matrix(10, 8))
    assert open_matrix(path, (10, 8), tmp_path) is not None
    assert open_matrix(path, (11, 8), tmp_path) is None  # another list's shape: damaged
    assert not path.exists() and not record_path(path).exists()
    assert f"KB cache: {path} is damaged (holds an array of shape (10, 8), not (11, 8)); " \
           "discarded; its vectors are made again" in capsys.readouterr().err


def test_a_damaged_file_that_cannot_be_removed_is_one_line_naming_it(tmp_path, monkeypatch):
    path = tmp_path / "list.npy"
    path.write_bytes(b"")

    def refuse(self, missing_ok=False):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(type(path), "unlink", refuse)
    with pytest.raises(UserError) as raised:
        discard_damaged(path, "empty", "discarded")
    assert str(raised.value) == (
        f"the KB cache file {path} is damaged (empty) and cannot be removed here (Read-only "
        "file system); delete it (what it held is encoded again), or point E2E_LINKER_CACHE "
        "(or --cache-dir) at another folder")


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    def fail(handle):
        handle.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        atomic_write(tmp_path / "x.npy", fail)
    assert list(tmp_path.iterdir()) == []


def test_the_layout_names_what_is_wrong(tmp_path):
    path = tmp_path / "m.npy"
    np.save(path, np.zeros((4, 3), np.float32))
    with pytest.raises(DamagedFile, match="holds float32 values, not float16"):
        npy_layout(path, dtype=np.float16)
    (tmp_path / "junk.npy").write_bytes(b"not an array at all")
    with pytest.raises(DamagedFile, match="not a readable .npy file"):
        npy_layout(tmp_path / "junk.npy")
    with open(path, "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(DamagedFile, match="too long"):
        npy_layout(path)
