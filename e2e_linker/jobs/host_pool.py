"""Host workers: the steps after the encoder, one group per worker process, in parallel.

Why (issue 46): on a GPU the encoder forward of a group of abstracts takes a few milliseconds
and what follows it on the host — selection, linking, the rule steps, the records — tens of
milliseconds a document, single-threaded Python. The corpus engine's overlap
(:mod:`e2e_linker.jobs.lookahead`) hides one group's steps behind the next group's scoring;
a pool of worker processes runs several groups' steps at once, each in a process of its own
(no GIL shared with the encoder's thread), while the main process keeps reading, chunking and
scoring groups ahead. docs/scaling.md ("Host workers") has the picture, the switch
(:data:`WORKERS_VARIABLE`) and what was measured.

What does not change: every group is begun (chunked) in the main process and scored in its one
scoring thread in order, and its results are taken in order, so the output keeps its bytes for
every number of workers (the steps and their KB caches give the same result cold and warm, the
property the overlap rests on too). The workers are forked from the main process after the
model and the KB are loaded, so they share its memory pages and load nothing; each runs torch
on one thread. The annotator's counters (:attr:`~e2e_linker.collective.annotator.Annotator.stats`)
counted in a worker are added to the main process's when the group is taken.

Fork only: a platform without ``fork`` (Windows, macOS's default) runs without workers and
says so once. On a GPU the workers are forked after CUDA is initialised and cannot use it, so a
run whose second phase needs an encoder there (names encoded as the KB search goes, the
per-mention mode, ``--linking text``) is refused with host workers, naming why and, for the
KB search, the fix (``--index exact``); ``GroupAnnotation.fork_unsafe_because`` says which.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor

from data_tools.documents import Document
from e2e_linker.errors import UserError

#: the environment variable that sets the number of host workers (``0``: none, the default)
WORKERS_VARIABLE = "E2E_LINKER_HOST_WORKERS"

#: the transform a forked worker finishes groups with (set in the main process before the
#: workers are forked; each worker reads its own copy)
_TRANSFORM: object | None = None


def workers_wanted(default: int = 0) -> int:
    """How many host workers a run uses when its caller does not say: :data:`WORKERS_VARIABLE`
    when set (a count, 0 for none), else ``default``."""
    value = os.environ.get(WORKERS_VARIABLE, "").strip()
    if not value:
        return default
    try:
        count = int(value)
    except ValueError:
        raise UserError(f"{WORKERS_VARIABLE}={value!r}: give a number of host workers "
                        "(0: none)") from None
    if count < 0:
        raise UserError(f"{WORKERS_VARIABLE}={value!r}: give 0 or more host workers")
    return count


def fork_available() -> bool:
    """Whether this platform can fork worker processes."""
    return "fork" in multiprocessing.get_all_start_methods()


def _start_worker() -> None:
    import torch

    # the main process's encoder and search threads are its own; a worker's steps run on one
    # core, and an OpenMP pool inherited through fork is never entered with more than one
    # thread (GNU OpenMP's threads do not survive a fork)
    torch.set_num_threads(1)
    try:
        import faiss
    except ImportError:  # the exact search backends need no OpenMP
        return
    faiss.omp_set_num_threads(1)


def _ready() -> bool:
    return True


def _finish(docs: list[Document], begun: object) -> tuple[list[Document], dict[str, int]]:
    """A worker's job: the transform's ``finish`` on one group, with the counters it added."""
    transform = _TRANSFORM
    stats = getattr(transform, "stats", None)
    before = dict(stats) if stats is not None else {}
    out = list(transform.finish(docs, begun))
    added = {k: v - before.get(k, 0) for k, v in stats.items()} if stats is not None else {}
    return out, added


class HostPool:
    """``workers`` forked processes that run a two-phase transform's ``finish``
    (:class:`~e2e_linker.jobs.lookahead.PhasedTransform`) on groups handed to :meth:`submit`.

    Use it as a context manager: leaving the block ends the workers (after their work, or at
    once when the block failed)."""

    def __init__(self, transform: object, workers: int):
        self.transform = transform
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Fork the workers now, from the calling thread (the main thread, before the run's
        scoring thread exists: a fork copies only the thread that forks, and a lock another
        thread held would stay held in the worker)."""
        global _TRANSFORM
        if self._executor is not None:
            return
        _TRANSFORM = self.transform  # the workers fork with it
        self._executor = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
            initializer=_start_worker)
        self._executor.submit(_ready).result()  # a fork pool forks all its workers at once

    def submit(self, docs: list[Document], begun: object) -> Future:
        """Finish the group ``docs`` (``begun``: what its begun work returned) in a worker;
        the future's result is ``(documents, counters added)``."""
        if self._executor is None:
            raise RuntimeError("HostPool.start() was not called")
        return self._executor.submit(_finish, docs, begun)

    def take(self, future: Future) -> list[Document]:
        """The documents of a submitted group, its counters added to the transform's."""
        docs, added = future.result()
        stats = getattr(self.transform, "stats", None)
        if stats is not None:
            for key, value in added.items():
                stats[key] = stats.get(key, 0) + value
        return docs

    def close(self, wait: bool = True) -> None:
        """End the workers (``wait``: after their work; else cancel what has not begun)."""
        global _TRANSFORM
        if self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)
            self._executor = None
        _TRANSFORM = None

    def __enter__(self) -> HostPool:
        self.start()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close(wait=exc_type is None)


def host_workers(transform: object, workers: int | None,
                 say: Callable[[str], None] | None = None) -> int:
    """How many host workers a run of ``transform`` uses: ``workers`` (None: from
    :data:`WORKERS_VARIABLE`), 0 for a transform without two phases, and 0 where this platform
    cannot fork (said once through ``say``, default standard error)."""
    from e2e_linker.jobs.lookahead import PhasedTransform

    count = workers_wanted() if workers is None else workers
    if count < 0:
        raise UserError("give 0 or more host workers")
    if count == 0 or not isinstance(transform, PhasedTransform):
        return 0
    unsafe = getattr(transform, "fork_unsafe_because", None)
    if unsafe:
        raise UserError(f"host workers are forked processes, which cannot use the GPU the "
                        f"model is on, and here {unsafe}; or run without host workers "
                        f"({WORKERS_VARIABLE}=0)")
    if not fork_available():
        (say or (lambda line: print(line, file=sys.stderr)))(
            "host workers need fork, which this platform lacks: the steps run in the main "
            "process")
        return 0
    return count
