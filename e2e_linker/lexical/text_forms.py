"""Text preprocessing for the mention normalizer: case/punctuation folding and composites.

Why: a vector-space normalizer compares a mention with KB names, and surface noise that carries
no meaning ("Non-Hodgkin's Lymphoma" vs "non hodgkin lymphoma") costs accuracy that no training
recovers cheaply. Both sides (KB names, training mentions, queries) go through the same
:class:`TextNormalizer`, whose settings are saved with a trained model.

Composite mentions ("breast and ovarian cancer") name several concepts at once; we split them
into one query per part ("breast cancer", "ovarian cancer") with a small heuristic that shares
the head noun of the last part (or the "X of the" prefix of the first part) among the parts.

Three folds, three jobs
-----------------------
Three functions fold a text before a lookup; each keeps what its lookup needs, and merging them
would change what matches (so they stay three):

* :func:`normalize_text` (through :class:`TextNormalizer`, ``linker normalize``'s and the
  training's fold; its settings are saved with a model): lower-cases, turns ASCII and Unicode
  punctuation into spaces and collapses whitespace, each switchable; keeps every letter
  (Greek, accented), digit and symbol ("TNF-α" → "tnf α"). Used for every text the normalizer
  encodes (KB names, training mentions, queries; :mod:`e2e_linker.normalizer.pools`), the
  training triplets, and the sieve stack's ``training`` step (a span's text against the
  training mentions).
* :func:`~e2e_linker.lexical.sieves.normalize_name` (annotate's exact-name fold):
  lower-cases and keeps ASCII letters and digits only, each other run becoming one space
  ("TNF-α" → "tnf"). Used by :class:`~e2e_linker.lexical.sieves.NameDictionary` (the
  exact-name sieve, its keys and lookups, also in the compiled KB) and by the gene ranking's
  name and document-word comparisons (:mod:`e2e_linker.collective.gene_ranking`).
* :func:`~e2e_linker.lexical.sieves.compact_key` (the compact-key fold): lower-cases, keeps
  letters and digits (any script) and drops everything else, spaces included, then folds
  British spellings ("Oestrogen β-Sulphate" → "estrogenβsulfate"). Used by
  :class:`~e2e_linker.lexical.sieves.CompactKeyIndex`: the compact-key rule of both CLIs
  (:class:`~e2e_linker.lexical.sieves.CompactKeySieve`), the sieve stack's written-form step
  and the gene ranking's written forms.
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass

from e2e_linker.lexical.lexicon import words

_SPACES = re.compile(r"\s+")
_ASCII_PUNCT = set(string.punctuation)

#: Separators between the parts of a composite mention, longest alternatives first.
_COMPOSITE_SEP = re.compile(
    r"\s*,\s*(?:and/or|and|or)\s+"  # "brain, breast, and prostate"
    r"|\s+(?:and/or|and|or)\s+"  # "breast and ovarian"
    r"|\s*/\s*"  # "breast/ovarian"
    r"|\s*,\s+",  # "brain, breast" (a comma followed by a space: "3,4-" is not split)
    re.IGNORECASE,
)


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize_text(text: str, lowercase: bool = True, punctuation: bool = True) -> str:
    """Fold case and turn punctuation into spaces, then collapse whitespace (one of three
    folds: module docstring, "Three folds, three jobs").

    Punctuation becomes a space (not nothing) so that "non-small-cell" and "non small cell"
    agree while "3,4-MDMA" does not glue its numbers together.
    """
    if lowercase:
        text = text.lower()
    if punctuation:
        text = "".join(" " if _is_punct(ch) else ch for ch in text)
    return _SPACES.sub(" ", text).strip()


@dataclass(frozen=True)
class TextNormalizer:
    """The case/punctuation settings applied to every text the normalizer encodes."""

    lowercase: bool = True
    punctuation: bool = True

    def __call__(self, text: str) -> str:
        out = normalize_text(text, self.lowercase, self.punctuation)
        return out or text.strip()  # a mention made only of punctuation stays as written

    def to_dict(self) -> dict[str, bool]:
        return {"lowercase": self.lowercase, "punctuation": self.punctuation}


def split_composite(text: str) -> list[str]:
    """The parts of a composite mention, each completed with the words the parts share.

    ``"breast and ovarian cancer"`` → ``["breast cancer", "ovarian cancer"]``;
    ``"Duchenne and Becker muscular dystrophy"`` → both full names;
    ``"cancers of the breast and ovary"`` → ``["cancers of the breast", "cancers of the ovary"]``.
    A text without a separator comes back as ``[text]``. The heuristic cannot know that
    "inherited breast/ovarian cancer" is one syndrome: callers decide whether to use the split
    (see :mod:`e2e_linker.normalizer.normalizer`, composite policy "auto").
    """
    text = text.strip()
    parts = [p.strip(" ,;") for p in _COMPOSITE_SEP.split(text)]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return [text]
    first_words = parts[0].split()
    last_words = parts[-1].split()
    out: list[str] = []
    for i, part in enumerate(parts):
        words = part.split()
        if i < len(parts) - 1 and len(words) < len(last_words):
            # shared head: "breast [cancer]", "type 1 [diabetes]"
            words = words + last_words[len(words):]
        elif i > 0 and " of " in f" {parts[0].lower()} " and len(words) < len(first_words):
            # shared prefix: "[cancers of the] ovary"
            words = first_words[: len(first_words) - len(words)] + words
        out.append(" ".join(words))
    return out


def composite_parts(text: str) -> list[str]:
    """The parts of a composite mention (:func:`split_composite`), or ``[]`` when ``text``
    is not one: the split both composite policies start from (the normalizer's
    ``Normalizer._decide``, annotate's ``SpanLinker.composite_ids``)."""
    parts = split_composite(text)
    return parts if len(parts) > 1 else []


def is_composite(text: str) -> bool:
    """Whether :func:`split_composite` would split ``text``."""
    return bool(composite_parts(text))


def end_before(text: str, at: int) -> int:
    """Where the text before ``at`` ends, trailing spaces left out (0: only spaces before it):
    the end of ``text[:at].rstrip()`` without copying the text, which a scan that asks it at
    every bracket of a long document cannot afford."""
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return at


def balanced_brackets(text: str, opening: str = "([{", closing: str = ")]}") -> bool:
    """Whether every bracket of ``opening``/``closing`` in ``text`` closes one opened before
    it and all are closed ("1,25-(OH)2D3": yes; "G6PD) deficiency": no)."""
    depth = 0
    for ch in text:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


#: elements whose ions are written with their charge ("Ca2+", "Mg2+", "Fe3+")
_ION_ELEMENTS = words("ion_elements")
_ION_WITHOUT_CHARGE = re.compile(r"(?P<element>[A-Z][a-z]?)\d")


def cuts_an_ion(text: str, following: str) -> bool:
    """Whether ``text`` followed by ``following`` is an ion cut before its charge: an
    element's symbol with the charge's number, and the "+" after it ("Ca2" of "Ca2+").

    Why: "Ca2" is also a gene's alias (carbonic anhydrase 2), and the gene model took the
    calcium of "Ca2+/calmodulin" for it; such a span is no mention of any type
    (docs/decisions/0017-never-a-mention.md)."""
    m = _ION_WITHOUT_CHARGE.fullmatch(text)
    return m is not None and m.group("element") in _ION_ELEMENTS and following.startswith("+")
