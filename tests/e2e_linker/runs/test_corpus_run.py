"""How a run cuts the record sequence into shards and groups (corpus_run.shard_records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_tools.formats.source import Record
from e2e_linker.runs.corpus_run import is_directory_target, shard_records


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
