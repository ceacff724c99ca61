"""What the linker writes on stderr besides errors and warnings, and the one place that decides
whether it is written.

Why one place: the KB index lines and the progress bars were printed by each module on every
run, into logs and pipes as on a terminal, so a clean one-sentence run left lines that read
like a model/KB mismatch and bars before one-line errors (issue 44). Now there are two kinds:

- :func:`say` and :func:`progress_bar`: progress, and notes of work that takes a while (a KB
  encode, a long document), shown when a person watches stderr (a terminal or a notebook) or
  with ``linker -v``;
- :func:`detail`: routine facts a user rarely needs (which index serves the KB, how much of
  it the shipped index covers), shown only with ``linker -v``.

Errors, warnings (a damaged cache, a skipped document) and waits on another process are not
routed here: they are always written. The verbose switch is the environment variable
:data:`VERBOSE_ENV`, so that the processes a run starts (``--num-processes``) inherit it and a
Python caller can set it too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: set (to anything but ``""`` or ``0``) by ``linker -v``: every progress line and detail shown
VERBOSE_ENV = "E2E_LINKER_VERBOSE"


@contextmanager
def verbose_output() -> Iterator[None]:
    """Verbose output within the block (``linker -v``'s run), for this process and the ones
    it starts; afterwards as before (a test's in-process run leaves nothing behind)."""
    previous = os.environ.get(VERBOSE_ENV)
    os.environ[VERBOSE_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(VERBOSE_ENV, None)
        else:
            os.environ[VERBOSE_ENV] = previous


def verbose() -> bool:
    """Whether ``-v`` (or :data:`VERBOSE_ENV`) asked for every progress line and detail."""
    return os.environ.get(VERBOSE_ENV, "").strip() not in ("", "0")


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (progress lines are for a person, never for a log)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel, whose stderr is no terminal but is watched."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def progress_enabled() -> bool:
    """Whether progress bars and notes of long work are shown: someone watches stderr, or
    ``-v`` asked for them."""
    return verbose() or stderr_is_terminal() or in_notebook()


def say(message: str) -> None:
    """A line of progress or a note of long work, when :func:`progress_enabled`."""
    if progress_enabled():
        write(message)


def detail(message: str) -> None:
    """A routine fact (which KB index serves a search...), only with ``-v``."""
    if verbose():
        write(message)


def write(message: str) -> None:
    """``message`` on stderr as one line, above any progress bar that is showing."""
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


def progress_bar(iterable: Iterable | None = None, *, enabled: bool = True,
                 **options: Any) -> Any:
    """A tqdm bar on stderr, switched off unless ``enabled`` (the caller's own switch, e.g.
    other processes of a group) and :func:`progress_enabled`; ``options`` go to tqdm."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not (enabled and progress_enabled()), **options)
