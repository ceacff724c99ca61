"""From span vectors to concepts: the dense index plus an exact-name sieve in front of it.

The sieve (as in Xu & Bethard 2021's first sieve, and DNorm/tmChem's dictionaries) takes a
concept whose KB or training name equals the mention text after light normalisation; when a
name is ambiguous the dense ranking decides among its concepts. Everything else is linked by
the dense ranking alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalize_name(text: str) -> str:
    """Lower-case, punctuation and spacing folded: 'H2-Receptor  antagonists' → 'h2 receptor antagonists'."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


class NameDictionary:
    """Normalised name → concept IDs (insertion order: the KB's order, corpus names first)."""

    def __init__(self, pairs: Sequence[tuple[str, str]], types: dict[str, str] | None = None):
        table: dict[str, list[str]] = defaultdict(list)
        for name, cid in pairs:
            key = normalize_name(name)
            if key and cid not in table[key]:
                table[key].append(cid)
        self.table = dict(table)
        self.types = types or {}

    @classmethod
    def from_kb(cls, kb) -> NameDictionary:
        return cls(kb.names(), {cid: c.type for cid, c in kb.concepts.items()})

    def lookup(self, text: str, type_: str | None = None) -> list[str]:
        """Concepts named exactly ``text``; restricted to ``type_`` when any of them has it."""
        found = self.table.get(normalize_name(text), [])
        if type_ and found:
            typed = [c for c in found if type_ in (self.types.get(c) or "").split("|")]
            if typed:
                return typed
        return found


def choose_concept(
    text: str,
    type_: str | None,
    dense: list[tuple[str, float]],
    names: NameDictionary | None,
) -> tuple[str | None, float | None, str]:
    """The concept for one mention: ``(concept_id, score, method)``.

    ``method`` is ``"exact"`` when the name sieve decided and ``"dense"`` otherwise.
    """
    if names is not None:
        exact = names.lookup(text, type_)
        if exact:
            if len(exact) == 1:
                score = next((s for c, s in dense if c == exact[0]), None)
                return exact[0], score, "exact"
            for cid, score in dense:
                if cid in exact:
                    return cid, score, "exact"
            return exact[0], None, "exact"
    if dense:
        return dense[0][0], dense[0][1], "dense"
    return None, None, "none"

