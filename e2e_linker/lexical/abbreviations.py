"""In-document abbreviations (Schwartz & Hearst 2003), pure Python: one module for both linkers.

Biomedical abstracts define abbreviations once — "temporal lobe epilepsy (TLE)" — and then use
the short form alone, which a linker cannot resolve from "TLE" by itself. We find
``long form (SHORT)`` pairs with Schwartz & Hearst's algorithm: the short form is a
parenthesised token of 2–10 characters with a letter, starting with a letter or digit; the long
form is the shortest run of preceding words (at most min(|SF| + 5, 2·|SF|)) in which the short
form's characters occur in order, right to left, the first one at the start of a word.

A document's text is scanned once per ``linker annotate`` / ``linker normalize`` call
(:meth:`DocumentAbbreviations.scan`), and every step reads that one result: annotate's lexical
gate and short-form tagging, its sieve stack and abbreviation linking, and the normalizer's
query rewriting (:func:`expand_mention`: "MDMA-induced" becomes
"3,4-methylenedioxymethamphetamine-induced"). Besides parenthesised definitions the scan keeps
one-letter definitions ("testosterone (T)"), and :meth:`DocumentAbbreviations.expansions`
adds short forms that are never defined but match another mention of the document ("PB" …
"phenobarbital").
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from data_tools.documents import Document
from e2e_linker.lexical.text_forms import balanced_brackets, end_before

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


def stands_for(short: str, text: str) -> bool:
    """Whether ``short`` can abbreviate the whole of ``text``: its letters and digits occur in
    ``text`` in order, the first one starting ``text``'s first word (Schwartz–Hearst's match,
    :func:`best_long_form`, anchored at the start).

    Why: a kept span inside a long form ("catatonia" in "duration of catatonia (DOC)",
    "left ventricular dysfunction" in "studies of left ventricular dysfunction (SOLVD)") is
    the short form's source only when the short form abbreviates that span; otherwise the
    short form names something larger (a measure, a study, a treatment) that the span is
    only part of, and it must not take the span's type and concept.
    """
    return best_long_form(short, text) == 0


def written_for(abbr: Abbreviation, start: int, end: int, mention: str) -> bool:
    """Whether the mention ``mention`` at ``start``..``end`` of its document is what the
    definition ``abbr``'s short form stands for: it ends where the long form ends, and it
    begins at or before the long form's start, or inside it with the short form abbreviating
    what it covers (:func:`stands_for`).

    Why a mention that begins before the long form counts: the detected long form is the
    shortest text the short form's letters match (:func:`best_long_form`), and a letter may
    match inside a word — "attenuated adenomatous polyposis coli (AAPC)" gives "adenomatous
    polyposis coli", "triphenyl tetrazolium chloride (TTC)" gives "tetrazolium chloride" — and
    a modifier before the letters may be part of what the author defines ("neonatal
    respiratory distress syndrome (RDS)"): the mention the model found, written right before
    the brackets, is the definition, and its concept the short form's. Requiring the mention
    to begin with the short form's first letter lost more than it saved on the dev table
    (docs/decisions/0039-short-forms-through-long-forms.md, part 4)."""
    if end != abbr.long_end or start >= abbr.long_end:
        return False
    return start <= abbr.long_start or stands_for(abbr.short, mention)


def initials_in_other_order(short: str, long: str) -> int | None:
    """Start index in ``long`` of its last words when their initials are the letters of
    ``short`` in another order ("myotonic dystrophy (DM)", from the Latin "dystrophia
    myotonica"), else None; for an all-letter short form of 2–6 letters, one word a letter.

    Why: Schwartz–Hearst needs the letters in the long form's order, and a short form
    kept from another language or an older word order is then never defined; every initial
    must be used once, so a chance match is rare."""
    letters = [c.lower() for c in short]
    if not (2 <= len(letters) <= 6) or not short.isalpha():
        return None
    words = list(_WORD.finditer(long))
    if len(words) < len(letters):
        return None
    last = words[-len(letters):]
    if sorted(w.group()[0].lower() for w in last) != sorted(letters):
        return None
    return last[0].start()


def find_abbreviations(text: str) -> list[Abbreviation]:
    """``long form (SF)`` definitions in ``text``, with character offsets into ``text``."""
    found: list[Abbreviation] = []
    # where each word of the text starts, found once: the text before a bracket is not copied
    # and split per bracket (a hostile text with thousands of brackets made that quadratic)
    starts = [word.start() for word in _WORD.finditer(text)]
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _valid_short(short):
            continue
        short_start = match.start(1) + match.group(1).index(short)
        end = end_before(text, match.start())
        max_words = min(len(short) + 5, 2 * len(short))
        # the words of text[:end] are those starting before ``end`` (the last one cut there)
        count = bisect.bisect_left(starts, end)
        if not count:
            continue
        base = starts[max(0, count - max_words)]
        candidate = text[base:end]
        # stop at a clause boundary inside the window
        cut = max(candidate.rfind(";"), candidate.rfind(". "))
        if cut >= 0:
            base += cut + 1
            candidate = text[base:end]
        start = best_long_form(short, candidate)
        if start is None:
            start = initials_in_other_order(short, candidate)
        if start is None:
            continue
        long_start = base + start
        while long_start < end and not text[long_start].isalnum():
            long_start += 1
        long = text[long_start:end]
        if not long or len(long) <= len(short) or short.lower() in long.lower().split():
            continue
        found.append(Abbreviation(short, short_start, short_start + len(short), long,
                                  long_start, end))
    return found


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
    opens_after_space = any(ch in "([" and i > 0 and long[i - 1].isspace()
                            for i, ch in enumerate(long))
    return opens_after_space or not balanced_brackets(long, "([", ")]")


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


@dataclass(frozen=True)
class DocumentAbbreviations:
    """One document's short forms, from one scan of its text.

    ``definitions``: short form → its first ``long form (SF)`` definition (Schwartz–Hearst),
    leaving out a long form with a separate parenthetical: there Schwartz–Hearst reached back
    over an earlier definition ("carboplatin's advantages (CBDCA) over cisplatin (CDDP)" would
    make CDDP mean the whole phrase), which is worse than leaving the short form alone;
    brackets inside a word ("1-(2-chloroethyl)-3-cyclohexyl-1-nitrosourea (CCNU)") are kept.
    ``letters``: one-letter definitions (:func:`letter_expansions`).

    Why one object: annotate's gate, short-form tagging and linking and the normalizer used to
    scan the same text with four functions and two filters, so they could disagree about one
    document's abbreviations; now every step reads this.
    """

    definitions: dict[str, Abbreviation]
    letters: dict[str, str]

    @classmethod
    def scan(cls, text: str) -> DocumentAbbreviations:
        """The short forms defined in ``text`` (the one scan of it)."""
        definitions: dict[str, Abbreviation] = {}
        for abbr in find_abbreviations(text):
            if not _separate_parenthetical(abbr.long):
                definitions.setdefault(abbr.short, abbr)
        return cls(definitions, letter_expansions(text))

    @property
    def defined(self) -> dict[str, str]:
        """Short form → long form for the parenthesised definitions."""
        return {short: abbr.long for short, abbr in self.definitions.items()}

    def expansions(self, mentions: Iterable[tuple[str, str]] | None = None,
                   letters: bool = True) -> dict[str, str]:
        """Short form → long form: the definitions, then, for forms not defined that way,
        one-letter definitions (``letters``) and short forms resolved from the document's own
        ``(type, text)`` mentions (when given; :func:`mention_pair_expansions`)."""
        out = self.defined
        if letters:
            for short, long in self.letters.items():
                out.setdefault(short, long)
        if mentions is not None:
            for short, long in mention_pair_expansions(mentions, out).items():
                out.setdefault(short, long)
        return out


def scan_documents(docs: Iterable[Document]) -> list[DocumentAbbreviations]:
    """:meth:`DocumentAbbreviations.scan` of each document's whole text, in order."""
    return [DocumentAbbreviations.scan(doc.text) for doc in docs]


def document_mentions(doc: Document) -> list[tuple[str, str]]:
    """A document's annotations as the ``(type, text)`` pairs
    :meth:`DocumentAbbreviations.expansions` resolves undefined short forms from."""
    return [(ann.type, ann.text) for ann in doc.annotations]


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
