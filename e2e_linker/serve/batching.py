"""Dynamic batching: one worker thread owns the model; requests that arrive together are
annotated in one call.

Why one thread: the model, its KB search and its caches are not made for concurrent use, and
on a CPU two forwards at once only fight over the same cores. The event loop never runs the
model: a request becomes a :class:`Job` in a bounded queue and its handler awaits the job's
future, so a slow or vanished client costs its own coroutine, never the model's time.

The worker takes the first waiting job, waits up to ``max_wait_s`` from its arrival for
others to join (or until ``max_batch`` documents wait), and annotates all of them in one
``Annotator.annotate`` call per kind of request (with and without explanations, with and
without ``replace``); a call holds at most ``max_batch`` documents. A batch that fails is
re-run one request at a time, so one bad document fails its own request only. The queue
holds at most ``max_queue`` documents: past that, :meth:`Batcher.submit` refuses with 503 and
a ``Retry-After`` estimated from the recent rate, instead of growing without bound.

Outputs do not depend on the batching because the annotator's do not depend on which
documents share a call: its KB search, linking and selection are per document, and its encoder
batches only chunks of one padded length, whose forward is the same bits whatever else is in
the batch (:mod:`e2e_linker.collective.batches`; the check is eval/results/batch_identity).
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field, replace
from typing import Any

from e2e_linker.serve.errors import RequestError

ANNOTATE = "annotate"
NORMALIZE = "normalize"
#: the states of :attr:`Batcher.state`
LOADING, READY, FAILED, CLOSED = "loading", "ready", "failed", "closed"


@dataclass
class Job:
    """One request's work: documents to annotate, or ``(text, type)`` mentions to normalize;
    its result (or error) arrives on :attr:`future`."""

    kind: str
    items: list
    explain: bool = False
    replace: bool = False
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)

    @property
    def size(self) -> int:
        """What the job counts against the queue bound and the batch size."""
        return max(len(self.items), 1)


@dataclass
class BatchStats:
    """What the worker has done, for ``GET /info`` and the load test."""

    batches: int = 0
    documents: int = 0
    largest_batch: int = 0
    normalized: int = 0
    failed_jobs: int = 0
    #: documents a second over the recent batches (an exponential moving average)
    rate: float = 0.0

    def as_dict(self) -> dict:
        """The figures, with the mean batch size."""
        mean = self.documents / self.batches if self.batches else 0.0
        return {"batches": self.batches, "documents": self.documents,
                "mean_batch": round(mean, 2), "largest_batch": self.largest_batch,
                "normalized_mentions": self.normalized, "failed_requests": self.failed_jobs,
                "documents_per_s": round(self.rate, 2)}


def explaining(annotator: Any, explain: bool) -> Any:
    """``annotator`` with explanations on or off: the same model, linker and KB (a shallow
    copy with other settings), so the two kinds of request share one loaded model."""
    if annotator.settings.explain == explain:
        return annotator
    twin = copy.copy(annotator)
    twin.settings = replace(annotator.settings, explain=explain)
    return twin


class Batcher:
    """The model's worker thread and its bounded queue.

    ``load`` builds the :class:`~e2e_linker.api.Linker` in the worker thread (so a server can
    answer ``/health`` while the model loads); ``on_ready`` and ``on_failed`` are called from
    that thread when loading ends."""

    def __init__(self, load: Callable[[], Any], max_batch: int = 32, max_wait_s: float = 0.01,
                 max_queue: int = 1024, on_ready: Callable[[], None] | None = None,
                 on_failed: Callable[[BaseException], None] | None = None):
        self.load = load
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self.on_ready = on_ready
        self.on_failed = on_failed
        self.linker: Any = None
        self.state = LOADING
        #: why loading failed, one line
        self.error: str | None = None
        self.stats = BatchStats()
        self.started = time.monotonic()
        #: seconds from :meth:`start` to ready
        self.load_seconds: float | None = None
        self.annotators: dict[bool, Any] = {}
        self.jobs: deque[Job] = deque()
        self.pending = 0
        self.closing = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.run, name="linker-model", daemon=True)
        self.normalizer_lock = threading.Lock()
        self.normalizer_future: Future | None = None

    # -- the request side (event loop) ---------------------------------------------------
    def start(self) -> None:
        """Start the worker: it loads the model, then serves the queue."""
        self.started = time.monotonic()
        self.thread.start()

    def submit(self, job: Job) -> Future:
        """Queue ``job``; a :class:`RequestError` when the server cannot take it now (503:
        loading, shutting down or the queue is full; 413: larger than the whole queue)."""
        with self.cond:
            if self.closing:
                raise RequestError(503, "the server is shutting down")
            if self.state != READY:
                raise self.not_ready()
            if job.size > self.max_queue:
                raise RequestError(413, f"{job.size} documents in one request; the limit is "
                                        f"{self.max_queue} (linker serve --max-queue)")
            if self.pending + job.size > self.max_queue:
                raise RequestError(503, f"busy: {self.pending} documents are waiting for the "
                                        "model; retry later",
                                   {"Retry-After": str(self.retry_after())})
            self.jobs.append(job)
            self.pending += job.size
            self.cond.notify()
        return job.future

    def not_ready(self) -> RequestError:
        """The 503 answer while the model loads (or after it failed to)."""
        if self.state == FAILED:
            return RequestError(503, f"the model failed to load: {self.error}")
        if self.state == CLOSED:
            return RequestError(503, "the server is shutting down")
        return RequestError(503, "the model is still loading", {"Retry-After": "5"})

    def retry_after(self) -> int:
        """Seconds until the waiting documents should be done, at the recent rate (1..60)."""
        if self.stats.rate <= 0:
            return 1
        return max(1, min(60, math.ceil(self.pending / self.stats.rate)))

    def close(self, timeout: float | None = None) -> None:
        """Take no more jobs, finish the queued ones, stop the worker (at most ``timeout``
        seconds)."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        if self.thread.is_alive():
            self.thread.join(timeout)
        self.state = CLOSED

    def normalizer_ready(self) -> Future:
        """A future done when the normalizer is loaded: loaded on first use, in a thread of
        its own so the annotate queue keeps moving meanwhile."""
        with self.normalizer_lock:
            if self.normalizer_future is None:
                self.normalizer_future = Future()
                threading.Thread(target=self.load_normalizer, name="linker-normalizer",
                                 daemon=True).start()
            return self.normalizer_future

    def load_normalizer(self) -> None:
        """Load the normalizer (:attr:`Linker.normalizer`) and settle the future."""
        future = self.normalizer_future
        try:
            future.set_result(self.linker.normalizer is not None)
        except Exception as exc:  # noqa: BLE001 - reported to every normalize request
            with self.normalizer_lock:
                self.normalizer_future = None  # the next request tries again
            future.set_exception(exc)

    # -- the worker thread ----------------------------------------------------------------
    def run(self) -> None:
        """Load the model, then annotate batches until closed. Nothing a request does ends
        this thread: every error goes to the requests it belongs to."""
        try:
            self.linker = self.load()
        except Exception as exc:  # noqa: BLE001 - reported once, and the server stops
            self.error = (str(exc).splitlines() or [type(exc).__name__])[0]
            self.state = FAILED
            if self.on_failed is not None:
                self.on_failed(exc)
            return
        self.annotators = {flag: explaining(self.linker.annotator, flag)
                           for flag in (False, True)}
        self.load_seconds = time.monotonic() - self.started
        self.state = READY
        if self.on_ready is not None:
            self.on_ready()
        while True:
            jobs = self.next_batch()
            if jobs is None:
                return
            self.process(jobs)

    def next_batch(self) -> list[Job] | None:
        """The next jobs to run together (None: closed and drained)."""
        with self.cond:
            while not self.jobs:
                if self.closing:
                    return None
                self.cond.wait()
            deadline = self.jobs[0].enqueued + self.max_wait_s
            while self.pending < self.max_batch and not self.closing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.cond.wait(remaining)
            taken: list[Job] = []
            size = 0
            while self.jobs and (not taken or size + self.jobs[0].size <= self.max_batch):
                job = self.jobs.popleft()
                taken.append(job)
                size += job.size
            self.pending -= size
            return taken

    def process(self, jobs: Sequence[Job]) -> None:
        """Run one batch: annotate jobs grouped by (explain, replace), one call per group
        (at most ``max_batch`` documents a call), then normalize jobs one by one."""
        began = time.monotonic()
        groups: dict[tuple[bool, bool], list[Job]] = {}
        for job in jobs:
            if job.kind == ANNOTATE:
                groups.setdefault((job.explain, job.replace), []).append(job)
        documents = 0
        for (explain, replace_old), group in groups.items():
            documents += self.annotate(group, explain, replace_old)
        for job in jobs:
            if job.kind == NORMALIZE:
                self.normalize(job)
        if documents:
            stats = self.stats
            stats.batches += 1
            stats.documents += documents
            stats.largest_batch = max(stats.largest_batch, documents)
            rate = documents / max(time.monotonic() - began, 1e-6)
            stats.rate = rate if stats.rate == 0 else 0.8 * stats.rate + 0.2 * rate

    def annotate(self, jobs: list[Job], explain: bool, replace_old: bool) -> int:
        """Annotate the documents of ``jobs`` in one call (or slices of ``max_batch``) and
        hand each job its own; a failed call is re-run a job at a time. Returns the count."""
        annotator = self.annotators[explain]
        docs = [doc for job in jobs for doc in job.items]
        try:
            out = []
            for first in range(0, len(docs), self.max_batch):
                out += annotator.annotate(docs[first:first + self.max_batch],
                                          replace=replace_old)
        except Exception as exc:  # noqa: BLE001 - isolated, then given to its request
            if len(jobs) == 1:
                self.settle(jobs[0], error=exc)
                return 0
            return sum(self.annotate([job], explain, replace_old) for job in jobs)
        first = 0
        for job in jobs:
            self.settle(job, out[first:first + len(job.items)])
            first += len(job.items)
        return len(docs)

    def normalize(self, job: Job) -> None:
        """Link one request's given mentions (:meth:`Linker.normalize`)."""
        try:
            result = self.linker.normalize(job.items)
        except Exception as exc:  # noqa: BLE001 - given to its request
            self.settle(job, error=exc)
            return
        self.stats.normalized += len(job.items)
        self.settle(job, result)

    def settle(self, job: Job, result: Any = None, error: BaseException | None = None) -> None:
        """Give ``job`` its result or error (a request whose client went away is skipped)."""
        if error is not None:
            self.stats.failed_jobs += 1
        try:
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(result)
        except InvalidStateError:  # cancelled: nobody waits for it any more
            pass
