"""The word lists the lexical rules read, kept as data: one UTF-8 text file a list in
``e2e_linker/lexical/lexicons/`` (one entry a line; ``#`` starts a comment line, and the first
comment line says where the entries came from and which rule reads them).

Why files, not Python literals: the same class of words (protein head words, Greek letters,
bases) was written out in several modules and the copies drifted; in one folder each class is
written once, can be reviewed as a list, and a rule's vocabulary changes without touching its
logic. Each file is read once per process (:func:`ordered` is cached), when the module that
needs it is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from importlib.abc import Traversable

#: the file name ending of a lexicon; its name is the file name without it
SUFFIX = ".txt"
#: the folder, inside this package, that holds the lexicon files
FOLDER = "lexicons"


def _folder() -> Traversable:
    return resources.files(__package__) / FOLDER


def names() -> list[str]:
    """The names of all lexicons in the folder, sorted: what a test walks to check every file.

    Why: a file nobody loads would still be a list nobody checks; listing the folder lets the
    tests hold every file to the format."""
    return sorted(entry.name[:-len(SUFFIX)] for entry in _folder().iterdir()
                  if entry.name.endswith(SUFFIX))


def lines(name: str) -> list[str]:
    """The raw lines of lexicon ``name`` (comments included, line ends stripped).

    Why public: the format test reads the first comment line, which :func:`ordered` skips."""
    text = (_folder() / f"{name}{SUFFIX}").read_text(encoding="utf-8")
    return text.splitlines()


@cache
def ordered(name: str) -> tuple[str, ...]:
    """The entries of lexicon ``name`` in file order, blank and ``#`` lines left out, each
    stripped of surrounding spaces.

    Why ordered: some rules depend on the order (a regex alternation tried left to right, a
    list of forms generated in order); the order written in the file is the one they get.
    Raises ValueError on an entry written twice, so a merge that leaves a repeat fails at
    import rather than hiding in a set."""
    entries = tuple(stripped for line in lines(name)
                    if (stripped := line.strip()) and not stripped.startswith("#"))
    repeated = sorted({entry for entry in entries if entries.count(entry) > 1})
    if repeated:
        raise ValueError(f"lexicon {name!r} repeats {', '.join(repeated)}")
    return entries


@cache
def words(name: str) -> frozenset[str]:
    """The entries of lexicon ``name`` as a set: for rules that test membership only."""
    return frozenset(ordered(name))


def alternation(entries: Iterable[str]) -> str:
    """A regex alternation (``a|b|c``, no group around it) of ``entries``, each escaped with
    :func:`re.escape`, in the given order.

    Why: a rule's vocabulary lives in a file, its regex syntax in code; escaping keeps a
    hyphen or dot of an entry literal, and keeping the order keeps which alternative wins
    where a regex's match depends on it. Callers put the group and flags around it."""
    return "|".join(re.escape(entry) for entry in entries)


def character_class(entries: Iterable[str]) -> str:
    """A regex character class (``[ACGTU]``) of single-character ``entries``, in order.

    Why: a set of letters (bases, Greek stand-ins) read as one character in a regex; one
    file lists them for every regex that needs them. Raises ValueError on a longer entry."""
    entries = list(entries)
    if any(len(entry) != 1 for entry in entries):
        raise ValueError(f"a character class takes single characters, not {entries!r}")
    return "[" + "".join(re.escape(entry) for entry in entries) + "]"
