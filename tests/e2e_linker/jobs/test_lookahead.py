"""One group ahead (jobs/lookahead.py and the engine's use of it in jobs/corpus_run.py): the
next group's work runs in another thread while this one is finished, the output and every
error are those of a run without the overlap, and a shard never begins the next one."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest

from data_tools.documents import Document, Passage
from data_tools.formats import write_documents
from e2e_linker.errors import DocumentFailed, UserError
from e2e_linker.jobs.corpus_run import run_to_directory, run_to_file
from e2e_linker.jobs.lookahead import (
    OVERLAP_VARIABLE,
    Lookahead,
    PhasedTransform,
    overlap_wanted,
    read_ahead,
)


class Phased:
    """A two-phase transform that marks each document with the thread its work ran in and
    logs the order of its phases; ``fail`` (a document ID → an exception) raises in the
    phase ``where`` ("begin", "work" or "finish") of the group holding that document."""

    def __init__(self, fail: dict[str, BaseException] | None = None, where: str = "work"):
        self.fail = fail or {}
        self.where = where
        self.log: list[tuple[str, str]] = []
        self.threads: set[int] = set()

    def _check(self, phase: str, docs: list[Document]) -> None:
        if phase == self.where:
            for doc in docs:
                if doc.id in self.fail:
                    raise self.fail[doc.id]

    def begin(self, docs):
        self.log.append(("begin", docs[0].id))
        self._check("begin", docs)

        def work():
            self.threads.add(threading.get_ident())
            self._check("work", docs)
            return [d.id.upper() for d in docs]

        return work

    def finish(self, docs, begun):
        self.log.append(("finish", docs[0].id))
        self._check("finish", docs)
        for doc, mark in zip(docs, begun, strict=True):
            doc.passages[0].infons["mark"] = mark
        return docs

    def __call__(self, docs):
        return self.finish(docs, self.begin(docs)())


def _corpus(tmp_path: Path, n: int = 7) -> Path:
    path = tmp_path / "in.bioc.xml"
    write_documents([Document(id=f"d{i}", passages=[Passage(text=f"text {i}", offset=0)])
                     for i in range(n)], path)
    return path


def _run(tmp_path: Path, transform, overlap: bool, name: str, **kwargs) -> bytes:
    out = tmp_path / f"{name}.bioc.xml"
    run_to_file([_corpus(tmp_path)], out, transform, group_size=2, progress=False,
                overlap=overlap, **kwargs)
    return out.read_bytes()


def test_read_ahead_begins_the_next_group_before_handing_out_this_one():
    events = []
    for group in read_ahead(iter([1, 2, 3]), lambda g: events.append(("begin", g))):
        events.append(("handle", group))
    assert events == [("begin", 1), ("begin", 2), ("handle", 1), ("begin", 3), ("handle", 2),
                      ("handle", 3)]


def test_a_read_error_of_the_next_group_waits_for_this_one():
    def groups():
        yield 1
        raise ValueError("bad record 2")

    handled = []
    with pytest.raises(ValueError, match="bad record 2"):
        for group in read_ahead(groups(), lambda g: None):
            handled.append(group)
    assert handled == [1]


def test_a_lookahead_hands_back_only_the_group_it_began():
    with Lookahead() as ahead:
        key, other = object(), object()
        ahead.start(key, lambda: 42)
        ahead.start(other, lambda: 43)
        assert ahead.take(key).result() == 42  # in the order they were begun
        assert ahead.take(other).result() == 43
        ahead.start(key, lambda: 44)
        assert ahead.take(other) is None  # not the first begun: nothing, all forgotten
        assert ahead.take(key) is None
        ahead.failed(key, KeyError("k"))
        with pytest.raises(KeyError):
            ahead.take(key).result()


def test_the_environment_decides_the_overlap_else_the_transforms_default(monkeypatch):
    monkeypatch.delenv(OVERLAP_VARIABLE, raising=False)
    assert overlap_wanted() and overlap_wanted(True) and not overlap_wanted(False)
    monkeypatch.setenv(OVERLAP_VARIABLE, "0")
    assert not overlap_wanted() and not overlap_wanted(True)
    monkeypatch.setenv(OVERLAP_VARIABLE, "1")
    assert overlap_wanted(False)
    assert isinstance(Phased(), PhasedTransform)
    assert not isinstance(lambda docs: docs, PhasedTransform)


def test_an_overlapped_run_gives_the_bytes_of_one_without(tmp_path):
    overlapped = Phased()
    assert _run(tmp_path, overlapped, True, "on") == _run(tmp_path, Phased(), False, "off")
    assert b'"mark">D6<' in (tmp_path / "on.bioc.xml").read_bytes()
    # the work ran in a thread of its own, each group begun before the one before it finished
    assert threading.get_ident() not in overlapped.threads
    assert overlapped.log[:4] == [("begin", "d0"), ("begin", "d2"), ("finish", "d0"),
                                  ("begin", "d4")]
    assert [e for e in overlapped.log if e[0] == "finish"] == [
        ("finish", f"d{i}") for i in range(0, 7, 2)]


@pytest.mark.parametrize("where", ["begin", "work", "finish"])
@pytest.mark.parametrize("error", [RuntimeError("model exploded"),
                                   UserError("the model directory is gone"),
                                   OSError(errno.ENOSPC, "No space left on device", "/c")])
def test_an_error_in_either_phase_is_the_error_of_a_run_without_overlap(tmp_path, where,
                                                                          error):
    """The same exception class and message whichever thread met it (the CLI's exit code
    follows the class): a document's fault becomes DocumentFailed naming it, a UserError
    passes unchanged, a full disk stops the run."""
    met = []
    for overlap in (True, False):
        with pytest.raises(Exception) as caught:  # compared below
            _run(tmp_path, Phased({"d3": error}, where), overlap, f"{overlap}")
        met.append((type(caught.value), str(caught.value)))
    assert met[0] == met[1]
    expected = {RuntimeError: DocumentFailed, UserError: UserError, OSError: UserError}
    assert met[0][0] is expected[type(error)]
    if isinstance(error, RuntimeError):
        assert "document d3: annotating failed: RuntimeError: model exploded" in met[0][1]


def test_skipped_documents_are_the_same_with_the_overlap(tmp_path):
    reports = []
    for overlap in (True, False):
        out = tmp_path / f"{overlap}.bioc.xml"
        reports.append(run_to_file([_corpus(tmp_path)], out,
                                   Phased({"d3": RuntimeError("bad d3")}), group_size=2,
                                   on_error="skip", progress=False, overlap=overlap))
    assert [s.describe() for s in reports[0].skipped] == \
        [s.describe() for s in reports[1].skipped] != []
    assert reports[0].documents == reports[1].documents == 6


def test_a_shard_is_written_before_the_next_shard_is_begun(tmp_path):
    """Groups never begin across a shard: its records may fail, and must not abort the shard
    before it (corpus_run.shard_records says why)."""
    transform = Phased()
    seen = []
    original = transform.begin

    def begin(docs):
        seen.append((docs[0].id, sorted(p.name for p in (tmp_path / "run" / "shards").iterdir())))
        return original(docs)

    transform.begin = begin
    run_to_directory([_corpus(tmp_path)], tmp_path / "run", transform, shard_size=4,
                     group_size=2, progress=False, overlap=True)
    begun = dict(seen)
    assert "00000.json" not in begun["d2"]  # the second group of shard 0, begun ahead
    assert "00000.json" in begun["d4"]  # shard 1's first group: after shard 0 was written
