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
from e2e_linker.abbreviation import Abbreviation, find_abbreviations

__all__ = ["Abbreviation", "abbreviation_expansions", "expand_mention", "find_abbreviations"]


def abbreviation_expansions(text: str) -> dict[str, str]:
    """Short form → long form for the definitions in ``text`` (the first definition wins).

    A long form that contains brackets is dropped: Schwartz–Hearst then reached back over an
    earlier definition ("carboplatin's advantages (CBDCA) over cisplatin (CDDP)" would make
    CDDP mean the whole phrase), which is worse than leaving the short form alone.
    """
    out: dict[str, str] = {}
    for abbr in find_abbreviations(text):
        if any(ch in abbr.long for ch in "()[]"):
            continue
        out.setdefault(abbr.short, abbr.long)
    return out


def document_expansions(doc: Document) -> dict[str, str]:
    """:func:`abbreviation_expansions` over the whole document text (title + abstract...)."""
    return abbreviation_expansions(doc.text)


def expand_mention(text: str, expansions: dict[str, str]) -> str:
    """``text`` with each whole-word short form replaced by its long form.

    Whole words only (the short form must not touch a letter or digit on either side), so
    "CM" does not fire inside "CMV". A mention that already contains the long form is left
    alone, so "temporal lobe epilepsy (TLE)" is not expanded twice.
    """
    if not expansions:
        return text
    out = text
    for short in sorted(expansions, key=len, reverse=True):
        long = expansions[short]
        if short not in out or long.lower() in out.lower():
            continue
        pattern = re.compile(rf"(?<![0-9A-Za-z]){re.escape(short)}(?![0-9A-Za-z])")
        out = pattern.sub(lambda _m, long=long: long, out)
    return out
