"""How a run cuts the record sequence into shards and groups (corpus_run.shard_records), and
how it reports a machine that fails it (a full disk) apart from documents that do."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from data_tools.documents import Document
from data_tools.formats.atomic import OutputError
from data_tools.formats.source import Record
from e2e_linker.errors import UserError
from e2e_linker.jobs.corpus_run import (
    FILE_HINT,
    GroupTransform,
    is_directory_target,
    resource_error,
    run_to_directory,
    run_to_file,
    shard_records,
)


def _records(n: int) -> list[Record]:
    return [Record(i, Path("x"), None) for i in range(n)]  # type: ignore[arg-type]


@pytest.mark.parametrize("shard_size", [1, 2, 5, 64])
@pytest.mark.parametrize("group_size", [1, 3, 64])
def test_groups_cover_every_record_once_and_never_cross_a_shard(shard_size, group_size):
    for n in range(0, 40):
        out = [(k, [[r.number for r in g] for g in gs])
               for k, gs in shard_records(_records(n), shard_size, group_size)]
        assert [x for _, gs in out for g in gs for x in g] == list(range(n))
        assert [k for k, _ in out] == list(range(len(out)))
        for k, groups in out:
            assert groups and all(1 <= len(g) <= group_size for g in groups)
            assert all(x // shard_size == k for g in groups for x in g)
            assert all(len(g) == group_size for g in groups[:-1])  # cut from the shard start


def test_finishing_a_shard_never_reads_the_next_one():
    def records():
        yield from _records(10)
        raise AssertionError("read into shard 1")

    shards = shard_records(records(), 10, 4)
    shard, groups = next(shards)
    assert shard == 0 and [len(g) for g in groups] == [4, 4, 2]
    with pytest.raises(AssertionError, match="read into shard 1"):
        next(shards)


@pytest.mark.parametrize("target,directory", [
    ("out.xml", False), ("out.json.gz", False), ("runs/out", True), ("runs/out.d/", True)])
def test_directory_targets(tmp_path, target, directory):
    assert is_directory_target(tmp_path / target if not target.endswith("/")
                               else f"{tmp_path}/{target}") is directory
    assert is_directory_target(tmp_path)


# ---- failures of the machine, not of a document --------------------------------------------

PUBTATOR = "".join(f"D{i}|t|Aspirin and headache number {i}.\n\n" for i in range(5))


def _fail_output_syncs(monkeypatch, err: int = errno.ENOSPC) -> None:
    """Every fsync of an output's temporary file fails with ``err``, as on a full disk."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to tell the writer's file descriptors")
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".part"):
            raise OSError(err, os.strerror(err))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_failed_write_is_one_line_naming_the_file_with_what_to_do(tmp_path, monkeypatch):
    (tmp_path / "in.txt").write_text(PUBTATOR)
    _fail_output_syncs(monkeypatch)
    with pytest.raises(UserError) as caught:
        run_to_file([tmp_path / "in.txt"], tmp_path / "out.xml", progress=False)
    assert str(caught.value) == (f"cannot write {tmp_path / 'out.xml'}: No space left on "
                                 f"device ({FILE_HINT})")
    with pytest.raises(UserError, match=r"cannot write .*/run/manifest.json: No space left on "
                                        r"device \(the finished shards are kept"):
        run_to_directory([tmp_path / "in.txt"], tmp_path / "run", progress=False)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in.txt", "run"]  # empty: reusable
    monkeypatch.undo()
    assert run_to_directory([tmp_path / "in.txt"], tmp_path / "run", progress=False) \
        .documents == 5


def test_a_disk_full_while_annotating_stops_the_run_instead_of_skipping_documents():
    def transform(docs):
        raise OSError(errno.ENOSPC, "No space left on device", "/cache/vectors.npy")

    records = [Record(i, Path("in.txt"), Document(id=f"d{i}", passages=[]))
               for i in range(3)]
    with pytest.raises(UserError, match=r"the run stopped: No space left on device "
                                        r"\(/cache/vectors.npy\); free some space"):
        GroupTransform(transform, "skip")(records)

    def broken(docs):
        raise ValueError("a bug met on one document")

    out = GroupTransform(broken, "skip")(records)
    assert [type(o).__name__ for o in out] == ["Skipped"] * 3  # a document's fault: skipped


def test_machine_errors_are_told_from_document_errors():
    assert resource_error(OSError(errno.EROFS, "Read-only file system")) is not None
    assert resource_error(OutputError(errno.ENOSPC, "No space left on device", "o.xml")) \
        .args == ("cannot write o.xml: No space left on device",)
    assert resource_error(OSError(errno.ENOENT, "No such file")) is None
    assert resource_error(ValueError("bad")) is None


def test_a_group_transform_settles_after_each_group_it_annotated():
    """``settle`` (the run's loaded_objects_frozen) is called once a group went through the
    transform, and not for a run without one (``linker convert``)."""
    records = [Record(i, Path("in.txt"), Document(id=f"d{i}", passages=[])) for i in range(2)]
    settled = []
    GroupTransform(lambda docs: docs, "raise", lambda: settled.append(True))(records)
    assert settled == [True]
    GroupTransform(None, "raise", lambda: settled.append(True))(records)
    assert settled == [True]
