"""Keep Python's cycle collector off what a corpus run has loaded (``gc.freeze``).

Why: a loaded linker holds a few very large containers — the KB's name and ID columns decoded
into lists, the model's modules — with hundreds of thousands of references each. The objects
annotate makes for every document trigger the collector's young collections and, every so
often, a full one that walks all of those references again: on BC5CDR test that was about a
third of annotate's host time, landing in whichever step happened to allocate at the time
(eval/results/bench/host_time.md). Objects alive once the first group is done — the model, the
KB and what it decodes on first use — live as long as the run; frozen, they are left out of
every later collection. They are still freed by reference counting when nothing refers to
them; a reference cycle among them that dies during the run waits for the run's end, when they
are handed back to the collector.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def loaded_objects_frozen() -> Iterator[Callable[[], None]]:
    """While the block runs, the callable it yields collects garbage once and then freezes
    every object alive (later calls do nothing); when the block ends they are unfrozen.

    Call it once what the run loads on first use is loaded (the engine: after its first group
    of documents). A process that froze objects of its own before (a server that forks
    workers) keeps its own policy: then nothing is frozen or unfrozen here.
    """
    ours = gc.get_freeze_count() == 0
    frozen = False

    def freeze() -> None:
        nonlocal frozen
        if ours and not frozen:
            gc.collect()
            gc.freeze()
            frozen = True

    try:
        yield freeze
    finally:
        if frozen:
            gc.unfreeze()
