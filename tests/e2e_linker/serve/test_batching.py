"""The model's worker thread (``e2e_linker.serve.batching``): jobs that wait together are
annotated in one call of at most ``max_batch`` documents; a failing document fails its own
request only; the queue is bounded (503 with Retry-After); closing finishes the queue."""

from __future__ import annotations

import threading
import time

import pytest

from e2e_linker.api import text_document
from e2e_linker.serve.batching import ANNOTATE, NORMALIZE, READY, Batcher, Job
from e2e_linker.serve.errors import RequestError
from tests.e2e_linker.serve.fakes import POISON, FakeLinker


def started(max_batch=32, max_wait_s=0.01, max_queue=100, linker=None):
    linker = linker or FakeLinker()
    return ready(Batcher(lambda: linker, max_batch, max_wait_s, max_queue), linker)


def ready(batcher, linker):
    """``batcher`` started and loaded (within 10 s), with its linker's annotator."""
    batcher.start()
    deadline = time.monotonic() + 10
    while batcher.state != READY:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return batcher, linker.annotator


def job(*texts, explain=False, prefix="d"):
    return Job(ANNOTATE, [text_document(t, f"{prefix}{n}") for n, t in enumerate(texts)],
               explain)


def test_jobs_waiting_together_are_annotated_in_one_call():
    batcher, annotator = started(max_batch=32, max_wait_s=0.01)
    annotator.gate = threading.Event()
    first = batcher.submit(job("a first", prefix="w"))
    assert annotator.entered.wait(5)  # the worker is busy with the first job...
    futures = [batcher.submit(job(f"t{n} x", prefix=f"j{n}-")) for n in range(5)]
    annotator.gate.set()  # ... while five more arrive: they are annotated together
    assert [d.id for d in first.result(5)] == ["w0"]
    results = [f.result(5) for f in futures]
    assert [[d.id for d in r] for r in results] == [[f"j{n}-0"] for n in range(5)]
    assert annotator.calls == [["w0"], [f"j{n}-0" for n in range(5)]]
    assert results[3][0].annotations[0].text == "t3"
    assert batcher.stats.batches == 2 and batcher.stats.largest_batch == 5
    batcher.close(5)


def test_a_call_holds_at_most_max_batch_documents():
    batcher, annotator = started(max_batch=3, max_wait_s=0.05)
    annotator.gate = threading.Event()
    blocker = batcher.submit(job("x"))
    assert annotator.entered.wait(5)
    big = batcher.submit(job(*[f"w{n}" for n in range(7)], prefix="big"))
    small = [batcher.submit(job("s", prefix=f"s{n}-")) for n in range(2)]
    annotator.gate.set()
    blocker.result(5)
    assert len(big.result(5)) == 7 and all(len(s.result(5)) == 1 for s in small)
    assert max(len(c) for c in annotator.calls) <= 3
    assert sorted(i for c in annotator.calls for i in c) == sorted(
        ["d0", *[f"big{n}" for n in range(7)], "s0-0", "s1-0"])
    batcher.close(5)


def test_a_failing_document_fails_its_own_request_only():
    batcher, annotator = started()
    annotator.gate = threading.Event()
    blocker = batcher.submit(job("x"))
    assert annotator.entered.wait(5)
    good = batcher.submit(job("fine text"))
    bad = batcher.submit(job(f"a {POISON} here"))
    annotator.gate.set()
    blocker.result(5)
    assert good.result(5)[0].annotations[0].text == "fine"
    with pytest.raises(RuntimeError, match="poisoned"):
        bad.result(5)
    assert batcher.thread.is_alive()  # and the worker goes on
    assert batcher.submit(job("later")).result(5)[0].annotations
    assert batcher.stats.failed_jobs == 1
    batcher.close(5)


def test_explained_and_plain_requests_share_the_model_but_not_a_call():
    batcher, annotator = started()
    annotator.gate = threading.Event()
    blocker = batcher.submit(job("x"))
    assert annotator.entered.wait(5)
    plain = batcher.submit(job("plain one", prefix="p"))
    explained = batcher.submit(job("why one", explain=True, prefix="e"))
    annotator.gate.set()
    blocker.result(5)
    assert "dense_candidates" not in plain.result(5)[0].annotations[0].infons
    assert explained.result(5)[0].annotations[0].infons["dense_candidates"]
    assert ["p0"] in annotator.calls and ["e0"] in annotator.calls
    assert annotator.settings.explain is False  # the loaded annotator is left as it was
    batcher.close(5)


def test_the_queue_is_bounded_with_503_and_retry_after():
    batcher, annotator = started(max_batch=1, max_queue=3)
    annotator.gate = threading.Event()
    blocker = batcher.submit(job("x"))
    assert annotator.entered.wait(5)
    waiting = batcher.submit(job("a", "b", "c"))  # three documents: the queue is full
    with pytest.raises(RequestError) as refused:
        batcher.submit(job("one too many"))
    assert refused.value.status == 503 and "busy" in refused.value.message
    assert int(refused.value.headers["Retry-After"]) >= 1
    with pytest.raises(RequestError) as huge:
        batcher.submit(job(*"abcd"))  # larger than the whole queue: never fits
    assert huge.value.status == 413
    annotator.gate.set()
    blocker.result(5)
    assert len(waiting.result(5)) == 3
    assert batcher.submit(job("room again")).result(5)
    batcher.close(5)


def test_close_finishes_the_queue_then_refuses():
    batcher, annotator = started(max_wait_s=0.5)
    futures = [batcher.submit(job(f"t{n}")) for n in range(3)]
    batcher.close(10)
    assert all(f.result(0) for f in futures)
    with pytest.raises(RequestError) as refused:
        batcher.submit(job("late"))
    assert refused.value.status == 503 and "shutting down" in refused.value.message
    assert not batcher.thread.is_alive()


def test_requests_before_the_model_is_loaded_get_503_and_a_failed_load_is_reported():
    gate = threading.Event()
    failures = []

    def load():
        assert gate.wait(10)
        raise OSError("model directory damaged")

    batcher = Batcher(load, on_failed=failures.append)
    batcher.start()
    with pytest.raises(RequestError) as early:
        batcher.submit(job("too early"))
    assert early.value.status == 503 and early.value.headers["Retry-After"]
    gate.set()
    batcher.thread.join(10)
    assert batcher.state == "failed" and batcher.error == "model directory damaged"
    assert [str(f) for f in failures] == ["model directory damaged"]
    with pytest.raises(RequestError, match="failed to load: model directory damaged"):
        batcher.submit(job("after"))


def test_normalize_jobs_run_on_the_worker():
    batcher, _ = started()
    assert batcher.normalizer_ready().result(5)
    found = batcher.submit(Job(NORMALIZE, [("aspirin", "Chemical"), ("nausea", None)]))
    assert [(m.text, m.type, m.concept_id) for m in found.result(5)] == [
        ("aspirin", "Chemical", "C1"), ("nausea", "", "C1")]
    assert batcher.stats.normalized == 2
    batcher.close(5)


def started_with(**options):
    linker = FakeLinker()
    return ready(Batcher(lambda: linker, **{"max_wait_s": 0.0, **options}), linker)


def test_a_request_over_the_text_budget_is_refused_with_413_naming_the_limit():
    batcher, annotator = started_with(max_chars=20)
    with pytest.raises(RequestError) as refused:
        batcher.submit(job("0123456789", "0123456789", "x"))  # 21 characters
    assert refused.value.status == 413
    assert refused.value.message == ("21 characters of text in one request; the limit is 20 "
                                     "(linker serve --max-request-chars)")
    with pytest.raises(RequestError):  # mentions to normalize count too
        batcher.submit(Job(NORMALIZE, [("x" * 21, None)]))
    assert batcher.submit(job("0123456789", "0123456789")).result(5)  # 20: within
    assert annotator.calls == [["d0", "d1"]]
    batcher.close(5)


def test_a_large_request_is_cut_into_pieces_that_take_turns_with_others():
    batcher, annotator = started_with(max_batch=8, max_batch_chars=40)
    annotator.gate = threading.Event()
    big = batcher.submit(job(*[f"big{n:02d} word" for n in range(12)], prefix="b"))
    assert annotator.entered.wait(5)  # its first piece is in the model ...
    small = batcher.submit(job("small one", prefix="s"))  # ... when a small one arrives
    annotator.gate.set()
    assert [d.id for d in small.result(5)] == ["s0"]
    answered = big.result(5)
    assert [d.id for d in answered] == [f"b{n}" for n in range(12)]  # in request order
    assert [d.annotations[0].text for d in answered] == [f"big{n:02d}" for n in range(12)]
    # pieces of 20 characters (half a call, two 10-character documents), two to a call
    assert annotator.calls[0] == ["b0", "b1", "b2", "b3"]
    assert max(len(c) for c in annotator.calls) <= 4
    second = annotator.calls[1]
    assert "s0" in second, annotator.calls  # the small one rides in the very next call
    batcher.close(5)


def test_a_cancelled_request_s_queued_pieces_are_never_run():
    batcher, annotator = started_with(max_batch=2, max_batch_chars=1000)
    annotator.gate = threading.Event()
    big = batcher.submit(job(*[f"w{n}" for n in range(20)], prefix="b"))
    assert annotator.entered.wait(5)
    assert batcher.pending == 18  # two pieces (of one document each) are in the model
    assert big.cancel()  # its client went away
    assert batcher.pending == 0 and not batcher.jobs
    annotator.gate.set()
    later = batcher.submit(job("later x", prefix="l"))
    assert later.result(5)
    assert annotator.calls == [["b0", "b1"], ["l0"]]
    assert batcher.stats.cancelled_jobs == 1
    batcher.close(5)


def test_a_call_nobody_waits_for_is_abandoned_at_its_next_forward_pass():
    batcher, annotator = started_with()
    annotator.delay = 0.05
    long = batcher.submit(job(" ".join(["word"] * 200)))  # 200 forward passes: 10 s
    deadline = time.monotonic() + 5
    while annotator.forwards < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    long.cancel()
    began = time.monotonic()
    after = batcher.submit(job("next"))
    assert after.result(10)
    assert time.monotonic() - began < 5  # not the 9 s the long call had left
    assert annotator.forwards < 100
    assert batcher.stats.abandoned_calls == 1
    batcher.close(5)


def test_a_long_call_lets_short_requests_through_at_its_forward_passes():
    batcher, annotator = started_with(preempt_after_s=0.1)
    annotator.delay = 0.05
    long = batcher.submit(job(" ".join(["long"] * 100), prefix="L"))  # one document: 5 s
    assert annotator.entered.wait(5)
    time.sleep(0.3)
    began = time.monotonic()
    short = batcher.submit(job("short", prefix="S"))
    assert [d.id for d in short.result(10)] == ["S0"]
    waited = time.monotonic() - began
    assert not long.done() and waited < 3  # answered inside the long call
    assert long.result(20)[0].annotations[0].text == "long"
    assert annotator.calls == [["L0"], ["S0"]]
    assert batcher.stats.nested_calls == 1
    batcher.close(5)
