"""One group ahead: the corpus engine scores the next group while it finishes this one.

Why (issue 46): on a CPU, what annotate does after the encoder — selection, linking, the rule
steps, the records, writing — is Python holding the GIL, and the encoder forward waits for it
group after group. A transform in two phases (:class:`PhasedTransform`: the annotator's
:meth:`~e2e_linker.collective.annotator.Annotator.begin` and ``finish``) lets the engine hand
the next group's scoring (the encoder forward and the span heads: torch, which releases the
GIL while it computes) to one background thread while the main thread finishes the group
before it. docs/scaling.md ("Overlap") has the picture and the switch
(:data:`OVERLAP_VARIABLE`).

What does not change: groups are cut as before, and every group is begun and finished in the
main thread in order, so the steps, the KB search and its cache see the same calls in the same
order and the output keeps its bytes. Only the work ``begin`` returns runs in the background,
and it touches nothing the steps touch. An error of that work is raised in the main thread
where the group is finished — the same exception object, so the run treats it as it treated
an error of the one-phase transform; a read error of the next group (:func:`read_ahead`) is
raised once the group before it has been handled, where a run without the overlap met it.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, TypeVar, runtime_checkable

from data_tools.documents import Document

#: the environment variable that switches the overlap on (``1``) or off (``0``); unset, the
#: transform decides (:func:`overlap_wanted`)
OVERLAP_VARIABLE = "E2E_LINKER_OVERLAP"

T = TypeVar("T")


@runtime_checkable
class PhasedTransform(Protocol):
    """A transform (documents in, the same documents out, in order) in two phases; calling
    it must be ``finish(docs, begin(docs)())``."""

    def __call__(self, docs: list[Document]) -> list[Document]: ...

    def begin(self, docs: list[Document]) -> Callable[[], object]:
        """Run in the main thread, groups in order; returns the work that may run in
        another thread while the main thread finishes earlier groups."""

    def finish(self, docs: list[Document], begun: object) -> list[Document]:
        """Run in the main thread, groups in order, on what ``begin``'s work returned."""


def overlap_wanted(default: bool = True) -> bool:
    """Whether runs overlap groups when their caller does not say: :data:`OVERLAP_VARIABLE`
    when set (``0``, ``false``, ``no``, ``off``: no; anything else: yes), else ``default``
    (the transform's: the annotator overlaps when its encoder runs on a GPU — on a CPU the
    host work takes the cores the encoder's threads use, measured slower in docs/scaling.md)."""
    value = os.environ.get(OVERLAP_VARIABLE)
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


class Lookahead:
    """The groups begun and not yet taken (the one being finished and the one after it),
    their background work run in order by one worker thread.

    Use it as a context manager: leaving the block waits for that work (or, when the block
    failed, only cancels what has not started) and ends the thread.
    """

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._pending: collections.deque[tuple[object, Future]] = collections.deque()

    def start(self, key: object, work: Callable[[], object]) -> None:
        """Run ``work`` in the worker thread for the group ``key`` (a later :meth:`take` with
        the same object gets its result)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="e2e-linker-ahead")
        self._pending.append((key, self._executor.submit(work)))

    def failed(self, key: object, error: Exception) -> None:
        """The group ``key`` could not be begun: :meth:`take` raises ``error`` for it."""
        future: Future = Future()
        future.set_exception(error)
        self._pending.append((key, future))

    def take(self, key: object) -> Future | None:
        """The begun work of group ``key`` (its result, or its exception, when it ends), or
        None when the first group begun and not taken is another (or none was): then every
        group begun is forgotten."""
        if self._pending and self._pending[0][0] is key:
            return self._pending.popleft()[1]
        self._pending.clear()
        return None

    def close(self, wait: bool = True) -> None:
        """End the worker thread (``wait``: after its work; else cancel what has not begun)."""
        self._pending.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Lookahead:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close(wait=exc_type is None)


def read_ahead(groups: Iterable[T], begin: Callable[[T], None], depth: int = 1) -> Iterator[T]:
    """``groups`` in order, ``begin`` called on each one before it is handed out and on the
    ``depth`` groups after it too (once read): the caller handles a group while the work of
    the next ones runs (``depth`` 1: the overlap; more: host workers,
    :mod:`e2e_linker.jobs.host_pool`).

    Why a read error waits: reading ahead must not change what the run does when a record is
    bad — the groups before it are handled first, then the same exception is raised, where a
    plain loop over ``groups`` met it.
    """
    groups = iter(groups)
    pending: collections.deque[T] = collections.deque()
    error: Exception | None = None
    exhausted = False

    def fill(size: int) -> None:
        nonlocal error, exhausted
        while not exhausted and error is None and len(pending) < size:
            try:
                following = next(groups, None)
            except Exception as exc:  # noqa: BLE001  (raised below, after the groups read)
                error = exc
                return
            if following is None:
                exhausted = True
                return
            begin(following)
            pending.append(following)

    fill(1)
    while pending:
        current = pending.popleft()
        fill(depth)
        yield current
    if error is not None:
        raise error
