"""In-document abbreviations (Schwartz & Hearst 2003), pure Python: one module for both linkers.

Biomedical abstracts define abbreviations once — "temporal lobe epilepsy (TLE)" — and then use
the short form alone, which a linker cannot resolve from "TLE" by itself. We find
``long form (SHORT)`` pairs with Schwartz & Hearst's algorithm: the short form is a
parenthesised token of 2–10 characters with a letter, starting with a letter or digit; the long
form is the shortest run of preceding words (at most min(|SF| + 5, 2·|SF|)) in which the short
form's characters occur in order, right to left, the first one at the start of a word.

``linker annotate`` gives a detected short form the concept of its long form
(:func:`abbreviation_map`). ``linker normalize`` rewrites the mention text before encoding it
(:func:`document_expansions`, :func:`expand_mention`): "MDMA-induced" becomes
"3,4-methylenedioxymethamphetamine-induced", and it also infers one-letter definitions
("testosterone (T)") and short forms that are never defined but match another mention of the
document ("PB" … "phenobarbital").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from data_tools.documents import Document

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


#: "testosterone (T)": a one-letter short form right after a word that starts with it
_LETTER = re.compile(r"(?<![\w-])([A-Za-z][\w-]*[A-Za-z0-9])\s*\(([A-Za-z])\)")
#: a mention that looks like a short form: one token, 2-10 characters, two capitals or more
_SHORT_MENTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{1,9}")


def _separate_parenthetical(long: str) -> bool:
    """True when ``long`` holds a bracket that opens after a space or never closes.

    Such a long form reached back over an earlier definition ("carboplatin's advantages
    (CBDCA) over cisplatin"); brackets inside a chemical name ("1-(2-chloroethyl)-3-...") are
    part of the name and fine.
    """
    depth = 0
    for i, ch in enumerate(long):
        if ch in "([":
            if i > 0 and long[i - 1].isspace():
                return True
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                return True
    return depth != 0


def abbreviation_expansions(text: str) -> dict[str, str]:
    """Short form → long form for the definitions in ``text`` (the first definition wins).

    A long form with a separate parenthetical is dropped: Schwartz–Hearst then reached back
    over an earlier definition ("carboplatin's advantages (CBDCA) over cisplatin (CDDP)" would
    make CDDP mean the whole phrase), which is worse than leaving the short form alone.
    Brackets inside a word ("1-(2-chloroethyl)-3-cyclohexyl-1-nitrosourea (CCNU)") are kept.
    """
    out: dict[str, str] = {}
    for abbr in find_abbreviations(text):
        if _separate_parenthetical(abbr.long):
            continue
        out.setdefault(abbr.short, abbr.long)
    return out


def letter_expansions(text: str) -> dict[str, str]:
    """One-letter short forms defined right after the word they stand for.

    Why: abstracts name treatment groups "testosterone (T)", "methylprednisolone (M)", and
    then annotate the bare letter as a chemical; Schwartz–Hearst requires two characters.
    Only the single preceding word is taken, and only when it starts with the letter.
    :func:`expand_mention` applies these to bare one-letter mentions only.
    """
    out: dict[str, str] = {}
    for match in _LETTER.finditer(text):
        word, letter = match.group(1), match.group(2)
        if word[0].lower() == letter.lower() and len(word) > 2:
            out.setdefault(letter, word)
    return out


def mention_expansions(doc: Document, defined: dict[str, str]) -> dict[str, str]:
    """Short forms used but never defined, resolved from the document's other mentions
    (:func:`mention_pair_expansions` over the document's annotations)."""
    return mention_pair_expansions([(ann.type, ann.text) for ann in doc.annotations], defined)


def mention_pair_expansions(mentions: Iterable[tuple[str, str]], defined: dict[str, str]
                            ) -> dict[str, str]:
    """Short forms used but never defined, resolved from the other ``(type, text)`` mentions
    of the same document.

    Why: an abstract may say "phenobarbital" in one sentence and "PB" in the next without the
    parenthesised definition, or define it only in a part of the paper we do not have. When a
    short-form-looking mention ("PB", two capitals or more) is not defined and exactly one longer
    mention of the same type in the document matches it the Schwartz–Hearst way (its letters in
    order, the first one starting the first word), that mention is its long form. Ambiguous
    cases (two different matching mentions, or one short form used with two types) are left
    alone.
    """
    by_type: dict[str, list[str]] = {}
    for type_, text in mentions:
        by_type.setdefault(type_, []).append(text.strip())
    found: dict[str, set[str]] = {}
    for texts in by_type.values():
        longs = sorted({t for t in texts if " " in t or len(t) > 10})
        for short in sorted(set(texts)):
            if short in defined or not _SHORT_MENTION.fullmatch(short) \
                    or sum(c.isupper() for c in short) < 2:
                continue
            matches = {long for long in longs if len(long) > len(short) + 2
                       and short.lower() not in long.lower()
                       and best_long_form(short, long) == 0}
            if matches:
                found.setdefault(short, set()).update(matches)
    return {short: next(iter(longs)) for short, longs in found.items() if len(longs) == 1}


def document_expansions(doc: Document, letters: bool = True, mentions: bool = True,
                        defined: dict[str, str] | None = None) -> dict[str, str]:
    """Short form → long form for one document: :func:`text_expansions` over its whole text
    (title + abstract...) and, with ``mentions``, its annotations."""
    return text_expansions(doc.text, [(a.type, a.text) for a in doc.annotations]
                           if mentions else None, letters, defined)


def text_expansions(text: str, mentions: Iterable[tuple[str, str]] | None = None,
                    letters: bool = True, defined: dict[str, str] | None = None
                    ) -> dict[str, str]:
    """Short form → long form: :func:`abbreviation_expansions` over ``text`` (or ``defined``
    when the caller has it), then, for forms not defined that way, one-letter definitions
    (``letters``) and the document's own ``(type, text)`` mentions (when given)."""
    out = dict(abbreviation_expansions(text) if defined is None else defined)
    if letters:
        for short, long in letter_expansions(text).items():
            out.setdefault(short, long)
    if mentions is not None:
        for short, long in mention_pair_expansions(mentions, out).items():
            out.setdefault(short, long)
    return out


def expand_mention(text: str, expansions: dict[str, str]) -> str:
    """``text`` with each whole-word short form replaced by its long form.

    Whole words only (the short form must not touch a letter or digit on either side), so
    "CM" does not fire inside "CMV". A mention that already contains the long form is left
    alone, so "temporal lobe epilepsy (TLE)" is not expanded twice.
    """
    if not expansions:
        return text
    bare = text.strip()
    if bare in expansions and len(bare) == 1:
        return expansions[bare]
    out = text
    for short in sorted(expansions, key=len, reverse=True):
        if len(short) == 1:  # one-letter forms replace bare mentions only ("vitamin C" stays)
            continue
        long = expansions[short]
        if short not in out or long.lower() in out.lower():
            continue
        pattern = re.compile(rf"(?<![0-9A-Za-z]){re.escape(short)}(?![0-9A-Za-z])")
        out = pattern.sub(lambda _m, long=long: long, out)
    return out
