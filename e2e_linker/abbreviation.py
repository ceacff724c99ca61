"""In-document abbreviation detection (Schwartz & Hearst 2003), pure Python.

Biomedical abstracts define abbreviations once — "temporal lobe epilepsy (TLE)" — and then use
the short form alone, which a linker cannot resolve from "TLE" by itself. We find
``long form (SHORT)`` pairs with Schwartz & Hearst's algorithm: the short form is a
parenthesised token of 2–10 characters with a letter, starting with a letter or digit; the long
form is the shortest run of preceding words (at most min(|SF| + 5, 2·|SF|)) in which the short
form's characters occur in order, right to left, the first one at the start of a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PAREN = re.compile(r"\(([^()]{1,10})\)")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Abbreviation:
    short: str
    short_start: int
    short_end: int
    long: str
    long_start: int
    long_end: int


def _valid_short(short: str) -> bool:
    if not (2 <= len(short) <= 10) or len(short.split()) > 2:
        return False
    if not short[0].isalnum() or not any(c.isalpha() for c in short):
        return False
    return True


def best_long_form(short: str, long: str) -> int | None:
    """Start index in ``long`` of the best long form for ``short`` (Schwartz–Hearst), or None."""
    s = len(short) - 1
    l_index = len(long) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while l_index >= 0 and (long[l_index].lower() != c or (
                s == 0 and l_index > 0 and long[l_index - 1].isalnum())):
            l_index -= 1
        if l_index < 0:
            return None
        l_index -= 1
        s -= 1
    start = long.rfind(" ", 0, l_index + 1) + 1
    return start


def find_abbreviations(text: str) -> list[Abbreviation]:
    """``long form (SF)`` definitions in ``text``, with character offsets into ``text``."""
    found: list[Abbreviation] = []
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _valid_short(short):
            continue
        short_start = match.start(1) + match.group(1).index(short)
        before = text[: match.start()].rstrip()
        words = list(_WORD.finditer(before))
        max_words = min(len(short) + 5, 2 * len(short))
        window = words[-max_words:]
        if not window:
            continue
        base = window[0].start()
        candidate = before[base:]
        # stop at a clause boundary inside the window
        cut = max(candidate.rfind(";"), candidate.rfind(". "))
        if cut >= 0:
            base += cut + 1
            candidate = before[base:]
        start = best_long_form(short, candidate)
        if start is None:
            continue
        long_start = base + start
        while long_start < len(before) and not text[long_start].isalnum():
            long_start += 1
        long = text[long_start: len(before)]
        if not long or len(long) <= len(short) or short.lower() in long.lower().split():
            continue
        found.append(Abbreviation(short, short_start, short_start + len(short), long,
                                  long_start, len(before)))
    return found


def abbreviation_map(text: str) -> dict[str, Abbreviation]:
    """Short form → its first definition in the text."""
    out: dict[str, Abbreviation] = {}
    for abbr in find_abbreviations(text):
        out.setdefault(abbr.short, abbr)
    return out
