"""``-o`` checks made before the model loads (e2e_linker.jobs.output_checks): an input is never
the output, however it is spelled, and an output that cannot be written is refused with one
line naming the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e_linker.errors import UserError
from e2e_linker.jobs import output_checks
from e2e_linker.jobs.output_checks import check_not_an_input, check_output_target


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.xml").write_text("<collection/>")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("A text.")
    return tmp_path


@pytest.mark.parametrize("output", ["in.xml", "./in.xml", "docs/../in.xml", "{root}/in.xml",
                                    "link.xml", "hard.xml"])
def test_an_input_is_never_the_output_however_spelled(corpus, output):
    (corpus / "link.xml").symlink_to("in.xml")
    os.link(corpus / "in.xml", corpus / "hard.xml")
    with pytest.raises(UserError, match=r"is the input in\.xml: writing it would destroy"):
        check_output_target(["in.xml"], output.format(root=corpus))


def test_an_input_reached_through_a_symlink_is_refused_too(corpus):
    (corpus / "link.xml").symlink_to("in.xml")
    with pytest.raises(UserError, match="-o in.xml is the input link.xml"):
        check_not_an_input(["link.xml"], "in.xml")


def test_outputs_inside_an_input_directory_or_holding_an_input_are_refused(corpus):
    with pytest.raises(UserError, match="-o docs/out.xml is inside the input directory docs"):
        check_output_target(["docs"], "docs/out.xml")
    with pytest.raises(UserError, match="-o docs is inside the input directory docs"):
        check_output_target(["docs"], "docs")
    with pytest.raises(UserError, match="-o . contains the input docs/a.txt"):
        check_not_an_input(["docs/a.txt"], ".")


def test_good_targets_pass(corpus):
    check_output_target(["in.xml", "docs"], "out.xml")
    check_output_target(["in.xml"], "new/deeper/out.xml")  # created by the writer, as before
    check_output_target(["in.xml"], "run")  # a new shard directory
    (corpus / "done").mkdir()
    (corpus / "done" / "manifest.json").write_text("{}")
    check_output_target(["in.xml"], "done")  # a run to --resume
    check_output_target(["-"], "-")
    check_output_target(["in.xml"], "-")


def test_a_parent_that_is_a_file_is_named(corpus):
    (corpus / "afile").write_text("")
    with pytest.raises(UserError, match=f"cannot write -o afile/out.xml: {corpus}/afile is a "
                                        "file, not a directory"):
        check_output_target(["in.xml"], "afile/out.xml")
    with pytest.raises(UserError, match="-o afile is a file, and a name without a suffix is a "
                                        "shard directory"):
        check_output_target(["in.xml"], "afile")
    check_output_target(["in.xml"], "afile", directory=False)  # normalize: a file, replaced


def test_a_directory_is_no_output_file_and_a_full_one_no_shard_directory(corpus):
    (corpus / "other").mkdir()
    (corpus / "other" / "x").write_text("")
    with pytest.raises(UserError, match="-o other exists and is not an empty directory"):
        check_output_target(["in.xml"], "other")
    with pytest.raises(UserError, match="-o other is a directory; name the output file"):
        check_output_target(["in.xml"], "other", directory=False)


def test_a_directory_that_cannot_be_written_is_named(corpus, monkeypatch):
    (corpus / "ro").mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
        Path(path) != corpus / "ro" and real_access(path, mode, **kw)))
    with pytest.raises(UserError, match=f"cannot write -o ro/out.xml: the directory {corpus}/ro "
                                        r"is not writable \(permission denied\)"):
        check_output_target(["in.xml"], "ro/out.xml")
    with pytest.raises(UserError, match="the directory .*/ro is not writable"):
        check_output_target(["in.xml"], "ro/new/out.xml")  # its nearest existing folder


def test_too_little_free_space_is_refused_before_the_run(corpus, monkeypatch):
    with pytest.raises(UserError, match=r"cannot write -o out.xml: only .* MB free in .*, and a "
                                        r"run needs .* MB there"):
        check_output_target(["in.xml"], "out.xml", min_free_bytes=1 << 62)
    monkeypatch.setattr(output_checks, "MIN_FREE_BYTES", 0)
    check_output_target(["in.xml"], "out.xml")
    free = os.statvfs(corpus).f_bavail * os.statvfs(corpus).f_frsize
    # inputs larger than the free space: the output would not fit either (sparse: no space used)
    with open(corpus / "big.txt", "wb") as handle:
        handle.truncate(free + (1 << 30))
    with pytest.raises(UserError, match="the inputs' size"):
        check_output_target(["big.txt"], "out.xml")
