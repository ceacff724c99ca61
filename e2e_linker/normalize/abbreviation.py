"""In-document abbreviation resolution for the normalizer (Schwartz & Hearst 2003, pure Python).

Why: an abstract defines "3,4-methylenedioxymethamphetamine (MDMA)" once and then says "MDMA";
the short form alone is ambiguous or absent from the KB, the long form is not. Before a mention
is encoded, every whole-word occurrence of a short form defined in the same document is
replaced by its long form ("MDMA-induced" → "3,4-methylenedioxymethamphetamine-induced").

Detection itself is the project's Schwartz–Hearst implementation
(:mod:`e2e_linker.abbreviation`, shared with ``linker annotate``); this module adds what the
normalizer needs: a short→long map per document and mention-text expansion.
"""

from __future__ import annotations

import re

from data_tools.documents import Document
from e2e_linker.abbreviation import Abbreviation, best_long_form, find_abbreviations

__all__ = ["Abbreviation", "abbreviation_expansions", "expand_mention", "document_expansions",
           "find_abbreviations", "letter_expansions", "mention_expansions"]

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
    """Short forms used but never defined, resolved from the document's other mentions.

    Why: an abstract may say "phenobarbital" in one sentence and "PB" in the next without the
    parenthesised definition, or define it only in a part of the paper we do not have. When a
    short-form-looking mention ("PB", two capitals or more) is not defined and exactly one longer
    mention of the same type in the document matches it the Schwartz–Hearst way (its letters in
    order, the first one starting the first word), that mention is its long form. Ambiguous
    cases (two different matching mentions, or one short form used with two types) are left
    alone.
    """
    by_type: dict[str, list[str]] = {}
    for ann in doc.annotations:
        by_type.setdefault(ann.type, []).append(ann.text.strip())
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
    """Short form → long form for one document: :func:`abbreviation_expansions` over its whole
    text (title + abstract...; or ``defined`` when the caller has it), then, for forms not
    defined that way, one-letter definitions (``letters``) and the document's own mentions
    (``mentions``)."""
    out = dict(abbreviation_expansions(doc.text) if defined is None else defined)
    if letters:
        for short, long in letter_expansions(doc.text).items():
            out.setdefault(short, long)
    if mentions:
        for short, long in mention_expansions(doc, out).items():
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
