"""Dynamic batching: one worker thread owns the model; requests that arrive together are
annotated in one call, and a large request is cut into pieces that take turns with the others.

Why one thread: the model, its KB search and its caches are not made for concurrent use, and
on a CPU two forwards at once only fight over the same cores. The event loop never runs the
model: a request becomes a :class:`Job` in a bounded queue and its handler awaits the job's
future, so a slow or vanished client costs its own coroutine, never the model's time.

A job is cut into :class:`Piece` s of half a call: at most half of ``max_batch`` documents
and of ``max_batch_chars`` characters (a longer document is a piece of its own), so one piece
of a large request leaves room beside it. The worker takes the first waiting job, waits up
to ``max_wait_s`` from its arrival for others to join (or until ``max_batch`` documents
wait), then fills a call round-robin: one piece of each waiting job in turn, a job with
pieces left going to the back of the line, round after round up to ``max_batch`` documents
and ``max_batch_chars`` characters. So a one-word request that arrives while a 10 MB request
is being annotated waits for the call in progress and shares the next one with one piece of
it, not for the whole request. A call is one ``Annotator.annotate`` per kind of request
(with and without explanations, with and without ``replace``); a call that fails is re-run
a piece at a time, so one bad document fails its own request only. The queue holds at most
``max_queue`` documents: past that, :meth:`Batcher.submit` refuses with 503 and a
``Retry-After`` estimated from the recent rate; a request of more than ``max_chars``
characters is refused (413).

Cancelling a job's future (its client went away, or its time ran out) drops its queued
pieces at once. The worker also looks in before every torch module's forward pass (a global
forward pre-hook, :meth:`Batcher.checkpoint`): a call whose every request has been cancelled
is abandoned there (the mention encoder's passes, and the KB name encoder's for names met the
first time), and at the top of a mention encoder pass in a call that has run longer than
``preempt_after_s`` (one long document) the waiting pieces run first, as a call of their own,
before the long call goes on where it was: nothing is computed twice, and the nested call
starts from the torch state a call of the worker's own starts from (no autocast, no inference
mode), so its answers are the same bits.

Outputs do not depend on the batching because the annotator's do not depend on which
documents share a call: its KB search, linking and selection are per document, and its encoder
batches only chunks of one padded length, whose forward is the same bits whatever else is in
the batch (:mod:`e2e_linker.collective.batches`; the check is docs/decisions/0034-padded-length-batches.md).
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, InvalidStateError
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from e2e_linker.serve.errors import RequestError

ANNOTATE = "annotate"
NORMALIZE = "normalize"
#: the states of :attr:`Batcher.state`
LOADING, READY, FAILED, CLOSED = "loading", "ready", "failed", "closed"
#: seconds a call runs before waiting pieces may run inside it (at its next forward pass)
PREEMPT_AFTER_S = 0.2


def item_chars(item: Any) -> int:
    """The characters of text one item of a job holds: a document's passages, or the text
    of a ``(text, type)`` mention to normalize."""
    passages = getattr(item, "passages", None)
    if passages is not None:
        return sum(len(passage.text or "") for passage in passages)
    return len(item[0]) if isinstance(item, tuple) else len(str(item))


@dataclass
class Job:
    """One request's work: documents to annotate, or ``(text, type)`` mentions to normalize;
    its result (or error) arrives on :attr:`future`. Cancelling the future drops the work
    not yet done."""

    kind: str
    items: list
    explain: bool = False
    replace: bool = False
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)
    #: the pieces not yet taken by the worker
    pieces: deque = field(default_factory=deque)
    #: each item's result (an annotated document, a linked mention), filled piece by piece
    results: list = field(default_factory=list)
    #: pieces taken or waiting whose results have not arrived
    unsettled: int = 0

    @property
    def size(self) -> int:
        """What the job counts against the queue bound and the batch size."""
        return max(len(self.items), 1)

    @property
    def chars(self) -> int:
        """The characters of text the job holds (the request's text budget)."""
        return sum(item_chars(item) for item in self.items)

    def cut(self, max_items: int, max_chars: int) -> None:
        """Cut the job into pieces of at most ``max_items`` items and ``max_chars``
        characters (an item longer than that is a piece of its own); a normalize job is
        one piece (one :meth:`Linker.normalize` call)."""
        self.results = [None] * len(self.items)
        if self.kind != ANNOTATE or not self.items:
            self.pieces = deque([Piece(self, 0, len(self.items), self.chars)])
        else:
            self.pieces = deque()
            start, chars = 0, 0
            for end, item in enumerate(self.items):
                size = item_chars(item)
                if end > start and (end - start >= max_items or chars + size > max_chars):
                    self.pieces.append(Piece(self, start, end, chars))
                    start, chars = end, 0
                chars += size
            self.pieces.append(Piece(self, start, len(self.items), chars))
        self.unsettled = len(self.pieces)


@dataclass(eq=False)
class Piece:
    """Items ``start:end`` of a job, annotated in one call (with other jobs' pieces)."""

    job: Job
    start: int
    end: int
    chars: int

    @property
    def size(self) -> int:
        """What the piece counts against the queue bound and the batch size."""
        return max(self.end - self.start, 1)

    @property
    def items(self) -> list:
        """The piece's items."""
        return self.job.items[self.start:self.end]


class Abandoned(BaseException):
    """Raised at a forward pass of a call whose every request has been cancelled.

    A ``BaseException``, as ``KeyboardInterrupt`` is: it must unwind the annotator (whose
    caches clean up after any exception), never be taken for a document's own error."""


@dataclass
class BatchStats:
    """What the worker has done, for ``GET /info`` and the load test."""

    batches: int = 0
    documents: int = 0
    largest_batch: int = 0
    normalized: int = 0
    failed_jobs: int = 0
    #: requests cancelled (client gone, time budget spent) before their answer
    cancelled_jobs: int = 0
    #: calls abandoned midway because every request in them was cancelled
    abandoned_calls: int = 0
    #: calls that ran inside a long call, at one of its forward passes
    nested_calls: int = 0
    #: documents a second over the recent batches (an exponential moving average)
    rate: float = 0.0

    def as_dict(self) -> dict:
        """The figures, with the mean batch size."""
        mean = self.documents / self.batches if self.batches else 0.0
        return {"batches": self.batches, "documents": self.documents,
                "mean_batch": round(mean, 2), "largest_batch": self.largest_batch,
                "normalized_mentions": self.normalized, "failed_requests": self.failed_jobs,
                "cancelled_requests": self.cancelled_jobs,
                "abandoned_calls": self.abandoned_calls, "nested_calls": self.nested_calls,
                "documents_per_s": round(self.rate, 2)}


def explaining(annotator: Any, explain: bool) -> Any:
    """``annotator`` with explanations on or off: the same model, linker and KB (a shallow
    copy with other settings), so the two kinds of request share one loaded model."""
    if annotator.settings.explain == explain:
        return annotator
    twin = copy.copy(annotator)
    twin.settings = replace(annotator.settings, explain=explain)
    return twin


def install_checkpoint(annotator: Any, checkpoint: Callable[[bool], None]) -> Any:
    """Call ``checkpoint(at_encoder)`` before every torch module's forward in this process
    (a global forward pre-hook), ``at_encoder`` true at the top of ``annotator``'s mention
    encoder network; returns the hook's handle (``.remove()`` it when done).

    Why a hook: a single long document is one ``annotate`` call of many forward passes (the
    mention encoder's, then the KB name encoder's for names seen the first time); the hook
    is the only place in it where the worker can notice that nobody waits for the call any
    more, or let a short request through, without changing the annotator."""
    from torch.nn.modules.module import register_module_forward_pre_hook

    encoder = getattr(getattr(annotator, "model", None), "encoder", None)
    network = getattr(encoder, "model", None)
    return register_module_forward_pre_hook(
        lambda module, _inputs: checkpoint(network is not None and module is network))


@contextmanager
def top_level() -> Iterator[None]:
    """The torch state of a call the worker makes itself (no autocast, no inference mode),
    for a call nested inside another call's forward pass: its answers are then the same
    bits as if it had run on its own."""
    import torch

    with torch.autocast("cpu", enabled=False), torch.inference_mode(False):
        if torch.cuda.is_available():
            with torch.autocast("cuda", enabled=False):
                yield
        else:
            yield


class Batcher:
    """The model's worker thread and its bounded queue.

    ``load`` builds the :class:`~e2e_linker.api.Linker` in the worker thread (so a server can
    answer ``/health`` while the model loads); ``on_ready`` and ``on_failed`` are called from
    that thread when loading ends."""

    def __init__(self, load: Callable[[], Any], max_batch: int = 32, max_wait_s: float = 0.01,
                 max_queue: int = 1024, on_ready: Callable[[], None] | None = None,
                 on_failed: Callable[[BaseException], None] | None = None,
                 max_chars: int | None = None, max_batch_chars: int = 4_000,
                 preempt_after_s: float = PREEMPT_AFTER_S):
        self.load = load
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        #: characters of text one job may hold (None: no limit)
        self.max_chars = max_chars
        self.max_batch_chars = max_batch_chars
        self.preempt_after_s = preempt_after_s
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
        #: jobs with pieces not yet taken, in turn order
        self.jobs: deque[Job] = deque()
        self.pending = 0
        self.closing = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.run, name="linker-model", daemon=True)
        self.normalizer_lock = threading.Lock()
        self.normalizer_future: Future | None = None
        #: the jobs of the call running now, and when it began (worker thread only)
        self.running: list[Job] = []
        self.call_began = 0.0
        self.nesting = False

    # -- the request side (event loop) ---------------------------------------------------
    def start(self) -> None:
        """Start the worker: it loads the model, then serves the queue."""
        self.started = time.monotonic()
        self.thread.start()

    def submit(self, job: Job) -> Future:
        """Queue ``job``; a :class:`RequestError` when the server cannot take it now (503:
        loading, shutting down or the queue is full; 413: more documents than the whole
        queue, or more characters than the text budget)."""
        if self.max_chars is not None and job.chars > self.max_chars:
            raise RequestError(413, f"{job.chars} characters of text in one request; the "
                                    f"limit is {self.max_chars} (linker serve "
                                    "--max-request-chars)")
        # pieces of half a call: one piece of a large request leaves room beside it
        job.cut(max(1, self.max_batch // 2), max(1, self.max_batch_chars // 2))
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
        job.future.add_done_callback(self.forget)
        return job.future

    def forget(self, future: Future) -> None:
        """Drop the queued pieces of a job whose future is done (cancelled: its client went
        away or its time ran out; failed: a piece of it broke the annotator)."""
        if future.cancelled():
            self.stats.cancelled_jobs += 1
        with self.cond:
            for job in self.jobs:
                if job.future is future:
                    self.jobs.remove(job)
                    self.pending -= sum(piece.size for piece in job.pieces)
                    job.pieces.clear()
                    break

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
        hook = install_checkpoint(self.linker.annotator, self.checkpoint)
        self.load_seconds = time.monotonic() - self.started
        self.state = READY
        if self.on_ready is not None:
            self.on_ready()
        try:
            while True:
                pieces = self.next_batch()
                if pieces is None:
                    return
                self.process(pieces)
        finally:
            hook.remove()

    def next_batch(self) -> list[Piece] | None:
        """The next pieces to run together (None: closed and drained)."""
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
            return self.take(nested=False)

    def take(self, nested: bool) -> list[Piece]:
        """Pieces for one call, one of each waiting job in turn (a job with pieces left
        goes to the back), round after round, at most ``max_batch`` documents and
        ``max_batch_chars`` characters unless one piece alone is larger. ``nested``: only
        pieces within those bounds (a call inside a long call must itself be short). Called
        holding the lock."""
        taken: list[Piece] = []
        documents = chars = skipped = 0
        while self.jobs and skipped < len(self.jobs):
            job = self.jobs[0]
            piece = job.pieces[0]
            if taken and (documents + piece.size > self.max_batch
                          or chars + piece.chars > self.max_batch_chars):
                break
            self.jobs.rotate(-1)
            if nested and piece.chars > self.max_batch_chars:
                skipped += 1
                continue
            skipped = 0
            job.pieces.popleft()
            if not job.pieces:
                self.jobs.pop()
            taken.append(piece)
            documents += piece.size
            chars += piece.chars
            self.pending -= piece.size
        return taken

    def process(self, pieces: Sequence[Piece]) -> None:
        """Run one batch: annotate pieces grouped by (explain, replace), one call per group,
        then normalize pieces one by one."""
        began = time.monotonic()
        groups: dict[tuple[bool, bool], list[Piece]] = {}
        for piece in pieces:
            if piece.job.kind == ANNOTATE:
                groups.setdefault((piece.job.explain, piece.job.replace), []).append(piece)
        documents = 0
        for (explain, replace_old), group in groups.items():
            documents += self.annotate(group, explain, replace_old)
        for piece in pieces:
            if piece.job.kind == NORMALIZE:
                self.normalize(piece)
        if documents:
            stats = self.stats
            stats.batches += 1
            stats.documents += documents
            stats.largest_batch = max(stats.largest_batch, documents)
            if not self.nesting:
                rate = documents / max(time.monotonic() - began, 1e-6)
                stats.rate = rate if stats.rate == 0 else 0.8 * stats.rate + 0.2 * rate

    def annotate(self, pieces: list[Piece], explain: bool, replace_old: bool) -> int:
        """Annotate the documents of ``pieces`` in one call and hand each piece its own; a
        failed call is re-run a piece at a time. Returns the count."""
        pieces = [piece for piece in pieces if not piece.job.future.done()]
        if not pieces:
            return 0
        docs = [doc for piece in pieces for doc in piece.items]
        try:
            out = self.call(pieces, lambda: self.annotators[explain].annotate(
                docs, replace=replace_old))
        except Abandoned:
            self.stats.abandoned_calls += 1
            return 0
        except Exception as exc:  # noqa: BLE001 - isolated, then given to its request
            if len(pieces) == 1:
                self.settle(pieces[0], error=exc)
                return 0
            return sum(self.annotate([piece], explain, replace_old) for piece in pieces)
        first = 0
        for piece in pieces:
            self.settle(piece, out[first:first + piece.size])
            first += piece.size
        return len(docs)

    def normalize(self, piece: Piece) -> None:
        """Link one request's given mentions (:meth:`Linker.normalize`)."""
        if piece.job.future.done():
            return
        try:
            result = self.call([piece], lambda: self.linker.normalize(piece.items))
        except Abandoned:
            self.stats.abandoned_calls += 1
            return
        except Exception as exc:  # noqa: BLE001 - given to its request
            self.settle(piece, error=exc)
            return
        self.stats.normalized += piece.size
        self.settle(piece, result)

    def call(self, pieces: Sequence[Piece], run: Callable[[], Any]) -> Any:
        """``run()`` as the call :meth:`checkpoint` watches: the jobs of ``pieces``."""
        outer = self.running, self.call_began
        self.running = [piece.job for piece in pieces]
        self.call_began = time.monotonic()
        try:
            return run()
        finally:
            self.running, self.call_began = outer

    def checkpoint(self, at_encoder: bool) -> None:
        """Called before every module's forward: in the worker thread, abandon a call
        nobody waits for (:class:`Abandoned`); at the top of the mention encoder, in a call
        that has run longer than ``preempt_after_s``, run the waiting pieces first, as a
        call of their own (there the call's state is its own local variables: nothing a
        nested call touches is half-done)."""
        if not self.running or threading.current_thread() is not self.thread:
            return
        if all(job.future.done() for job in self.running):
            raise Abandoned()
        if not at_encoder or self.nesting or \
                time.monotonic() - self.call_began < self.preempt_after_s:
            return
        with self.cond:
            pieces = self.take(nested=True) if self.jobs else []
        if not pieces:
            return
        self.nesting = True
        try:
            with top_level():
                self.process(pieces)
        finally:
            self.nesting = False
            self.stats.nested_calls += 1

    def settle(self, piece: Piece, result: Any = None, error: BaseException | None = None
               ) -> None:
        """Give ``piece``'s job its results, and once all its pieces are in, its answer (or
        at once its error); a request whose client went away is skipped."""
        job = piece.job
        if error is None:
            job.results[piece.start:piece.end] = result
            job.unsettled -= 1
            if job.unsettled:
                return
            result = job.results
        else:
            self.stats.failed_jobs += 1
        try:
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(result)
        except InvalidStateError:  # cancelled: nobody waits for it any more
            pass
