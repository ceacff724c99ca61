"""Atomic output: the target appears complete on success, and is never touched on failure."""

from __future__ import annotations

import os
import stat

import pytest

from data_tools.formats.atomic import atomic_output


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
