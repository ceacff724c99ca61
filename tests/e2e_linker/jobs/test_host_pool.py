"""Host workers (jobs/host_pool.py and the engine's use of them in jobs/corpus_run.py): each
group's second phase runs in a forked process, the output and every error are those of a run
without workers, the counters a worker adds reach the main process."""

from __future__ import annotations

import errno
import os

import pytest

from e2e_linker.errors import DocumentFailed, UserError
from e2e_linker.jobs.corpus_run import run_to_directory, run_to_file
from e2e_linker.jobs.host_pool import WORKERS_VARIABLE, host_workers, workers_wanted
from e2e_linker.jobs.lookahead import read_ahead
from tests.e2e_linker.jobs.test_lookahead import Phased, _corpus

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="host workers need fork")


class Counted(Phased):
    """:class:`Phased` that also marks each document with the process that finished it and
    counts the documents it finished."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stats = {"documents": 0}

    def finish(self, docs, begun):
        out = super().finish(docs, begun)
        for doc in out:
            doc.passages[0].infons["pid"] = str(os.getpid())
        self.stats["documents"] += len(out)
        return out


def _run(tmp_path, transform, workers: int, name: str, **kwargs):
    out = tmp_path / f"{name}.bioc.xml"
    report = run_to_file([_corpus(tmp_path)], out, transform, group_size=2, progress=False,
                         workers=workers, **kwargs)
    return out.read_text(), report


def _without_pids(text: str) -> str:
    import re

    return re.sub(r'<infon key="pid">\d+</infon>', "", text)


def test_the_environment_sets_the_number_of_workers(monkeypatch):
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    assert workers_wanted() == 0 and workers_wanted(3) == 3
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    assert workers_wanted() == 2
    assert host_workers(Phased(), None) == 2 and host_workers(Phased(), 0) == 0
    assert host_workers(lambda docs: docs, 4) == 0  # one phase: nothing to hand out
    for bad in ("two", "-1"):
        monkeypatch.setenv(WORKERS_VARIABLE, bad)
        with pytest.raises(UserError, match=WORKERS_VARIABLE):
            workers_wanted()


class OnAGpu(Phased):
    """A two-phase transform whose second phase would need the GPU its model is on."""

    fork_unsafe_because = "the search encodes names as it goes"


def test_workers_are_refused_where_the_second_phase_needs_the_gpu():
    """A process forked after CUDA was initialised cannot use the GPU: such a run is one
    error naming why and the fix, before any worker is forked."""
    with pytest.raises(UserError, match=f"encodes names as it goes.*{WORKERS_VARIABLE}=0"):
        host_workers(OnAGpu(), 2)
    assert host_workers(OnAGpu(), 0) == 0  # without workers it runs as ever


def test_read_ahead_begins_as_many_groups_ahead_as_asked():
    events = []
    for group in read_ahead(iter([1, 2, 3, 4]), lambda g: events.append(("begin", g)), 2):
        events.append(("handle", group))
    assert events == [("begin", 1), ("begin", 2), ("begin", 3), ("handle", 1), ("begin", 4),
                      ("handle", 2), ("handle", 3), ("handle", 4)]

    def groups():
        yield from (1, 2)
        raise ValueError("bad record 3")

    handled = []
    with pytest.raises(ValueError, match="bad record 3"):
        for group in read_ahead(groups(), lambda g: None, 3):
            handled.append(group)
    assert handled == [1, 2]  # the groups read before the bad one are handled first


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_give_the_bytes_of_a_run_without_them(tmp_path, workers):
    plain = Counted()
    expected, _ = _run(tmp_path, plain, 0, "plain", overlap=False)
    pooled = Counted()
    got, report = _run(tmp_path, pooled, workers, f"w{workers}")
    assert _without_pids(got) == _without_pids(expected) and report.documents == 7
    pids = {line.split(">")[1].split("<")[0] for line in got.splitlines()
            if 'key="pid"' in line}
    assert os.getpid() not in {int(p) for p in pids}  # every group finished in a worker
    assert 1 <= len(pids) <= workers
    assert pooled.stats == {"documents": 7} == plain.stats  # the workers' counts came back


@pytest.mark.parametrize("error", [RuntimeError("model exploded"),
                                   UserError("the model directory is gone"),
                                   OSError(errno.ENOSPC, "No space left on device", "/c")])
def test_an_error_in_a_worker_is_the_error_of_a_run_without_workers(tmp_path, error):
    met = []
    for workers in (2, 0):
        with pytest.raises(Exception) as caught:  # compared below
            _run(tmp_path, Counted({"d3": error}, "finish"), workers, f"e{workers}")
        met.append((type(caught.value), str(caught.value)))
    assert met[0] == met[1]
    expected = {RuntimeError: DocumentFailed, UserError: UserError, OSError: UserError}
    assert met[0][0] is expected[type(error)]


def test_skipped_documents_and_shard_directories_are_the_same_with_workers(tmp_path):
    reports = []
    for workers in (2, 0):
        out = tmp_path / f"s{workers}.bioc.xml"
        reports.append(run_to_file([_corpus(tmp_path)], out,
                                   Counted({"d3": RuntimeError("bad d3")}, "finish"),
                                   group_size=2, on_error="skip", progress=False,
                                   workers=workers))
    assert [s.describe() for s in reports[0].skipped] == \
        [s.describe() for s in reports[1].skipped] != []
    assert reports[0].documents == reports[1].documents == 6
    texts = []
    for workers in (2, 0):
        run_to_directory([_corpus(tmp_path)], tmp_path / f"run{workers}", Counted(),
                         shard_size=4, group_size=2, progress=False, workers=workers)
        texts.append([_without_pids(p.read_text()) for p in
                      sorted((tmp_path / f"run{workers}" / "shards").glob("*.xml"))])
    assert texts[0] == texts[1] and len(texts[0]) == 2
