"""Atomic output: the target appears complete on success, and is never touched on failure."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from data_tools.formats.atomic import (
    OutputError,
    atomic_output,
    is_temporary_of,
    remove_stale_temporaries,
)


def test_success_renames_into_place_with_the_usual_permissions(tmp_path):
    target = tmp_path / "deep" / "out.txt"
    with atomic_output(target) as handle:
        handle.write("a\nb\n")
        assert not target.exists()  # nothing visible before the block ends
        assert [p.name for p in target.parent.iterdir()][0].startswith(".out.txt.")
    assert target.read_bytes() == b"a\nb\n"
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_binary_mode(tmp_path):
    with atomic_output(tmp_path / "out.bin", "wb") as handle:
        handle.write(b"\x00\xff")
    assert (tmp_path / "out.bin").read_bytes() == b"\x00\xff"


@pytest.mark.parametrize("error", [ValueError("bad document"), KeyboardInterrupt()])
def test_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path, error):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(type(error)):
        with atomic_output(target) as handle:
            handle.write("half a new fi")
            raise error
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


# ---- no litter: stale temporary files, write failures ---------------------------------------

def _hold(path: Path):
    """A living writer's temporary file: open and exclusively locked, as atomic_output holds
    its own."""
    import fcntl

    handle = open(path, "a")  # noqa: SIM115 - closed by the caller
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def test_a_killed_writers_temporary_is_removed_by_the_next_write_a_living_ones_is_not(tmp_path):
    stale = tmp_path / ".out.txt.abcd1234.part"  # a dead run's: nobody holds it
    stale.write_text("half")
    live = tmp_path / ".out.txt.live_123.part"
    held = _hold(live)
    other = tmp_path / ".out.txt.gz.abcd1234.part"  # another target's, stale: not ours
    other.write_text("x")
    try:
        with atomic_output(tmp_path / "out.txt") as handle:
            handle.write("new\n")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [".out.txt.gz.abcd1234.part", ".out.txt.live_123.part", "out.txt"])
    finally:
        held.close()
    # once its writer is gone, a temporary is stale; a directory-wide clean-up takes others'
    assert remove_stale_temporaries(tmp_path, "out.txt") == [live]
    assert remove_stale_temporaries(tmp_path) == [other]
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_temporary_names_belong_to_one_target():
    assert is_temporary_of(".out.xml.k3_9zz0a.part", "out.xml")
    assert not is_temporary_of(".out.xml.gz.k3_9zz0a.part", "out.xml")
    assert not is_temporary_of(".out.xml.k3.part", "out.xml")
    assert is_temporary_of(".a[1]*.xml.abcdefgh.part", "a[1]*.xml")


def _fail_on_temporaries(real_fsync, err: int):
    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".part"):
            raise OSError(err, os.strerror(err))
        real_fsync(fd)
    return fsync


@pytest.mark.parametrize("err,kind", [(errno.ENOSPC, OutputError),
                                      (errno.EACCES, PermissionError)])
def test_a_failed_write_names_the_target_and_leaves_nothing(tmp_path, monkeypatch, err, kind):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to tell the writer's file descriptors")
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    monkeypatch.setattr(os, "fsync", _fail_on_temporaries(os.fsync, err))
    with pytest.raises(kind) as caught:
        with atomic_output(target) as handle:
            handle.write("new\n")
    assert isinstance(caught.value, OutputError) and caught.value.errno == err
    assert str(caught.value) == f"cannot write {target}: {os.strerror(err)}"
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_parent_that_is_a_file_is_named(tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(OutputError, match="afile is not a directory") as caught:
        with atomic_output(tmp_path / "afile" / "out.txt") as handle:
            handle.write("x")
    assert caught.value.filename == str(tmp_path / "afile" / "out.txt")


def test_the_blocks_own_error_wins_over_a_failing_flush(tmp_path):
    """A bad document met with buffered data that can no longer be written: the document's
    error is reported, not the disk's."""
    target = tmp_path / "out.bin"
    with pytest.raises(ValueError, match="bad document"):
        with atomic_output(target, "wb") as handle:
            handle.write(b"x" * 10)
            def full(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            handle.raw.write = full  # the flush at close now fails
            raise ValueError("bad document")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="a full disk is simulated with a 64 kB tmpfs, which only root may "
                           "mount")
def test_a_full_disk_is_an_output_error_and_leaves_no_temporary(tmp_path):
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("mounting a tmpfs failed (no CAP_SYS_ADMIN in this container)")
    try:
        with pytest.raises(OutputError, match=r"cannot write .*out\.bin: No space left"):
            with atomic_output(disk / "out.bin", "wb") as handle:
                for _ in range(100):
                    handle.write(b"x" * 4096)
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)
