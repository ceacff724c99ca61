"""The exact sieves in front of dense search: a normalised-name match and a compact-key match.

Both are as in Xu & Bethard 2021's first sieve and DNorm/tmChem's dictionaries: a concept whose
KB (or training) name equals the mention's text after a fold wins before any vector is compared.

* :class:`NameDictionary` (``linker annotate``) folds case, punctuation and spacing
  (:func:`normalize_name`); when a name is ambiguous, the dense ranking decides among its
  concepts (:func:`choose_concept`).
* :class:`CompactKeyIndex` (``linker normalize``'s lexical sieve) keeps letters and digits only
  and folds British spellings (:func:`compact_key`). Why: code names and formulas differ
  between a text and the KB only in spaces, hyphens and commas ("SR 48,968" vs "SR 48968",
  "Ro15-1788" vs "Ro 15-1788", "BAY k-8644" vs "Bay K 8644"); a dense encoder places such
  strings near other code names with similar digits ("SR 4895"), so it misses a match that the
  characters make certain. A mention whose key names exactly one KB concept of its type takes
  that concept — unless the key occurs among the training mentions (D): then the corpus has its
  own usage for that string and the vector search, which sees D, decides (measured on BC5CDR dev,
  ``eval.normalization_tables`` ablation row "no lexical sieve").
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from e2e_linker.kb_search.label_index import LabeledTexts, merged_label_types, type_allowed

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


#: British spellings folded to American ones on both sides ("oestrogen" = "estrogen",
#: "sulphate" = "sulfate", "haem" = "hem"), as MeSH spells American
BRITISH_TO_AMERICAN = (("sulph", "sulf"), ("oe", "e"), ("ae", "e"))


def compact_key(text: str) -> str:
    """Lowercased letters and digits of ``text``, everything else dropped, British spellings
    folded (:data:`BRITISH_TO_AMERICAN`)."""
    key = "".join(ch for ch in text.lower() if ch.isalnum())
    for british, american in BRITISH_TO_AMERICAN:
        key = key.replace(british, american)
    return key


class CompactKeyIndex:
    """Compact key → labels over one or more pools of texts (with the pools' label types)."""

    def __init__(self, pools: Iterable[LabeledTexts]):
        pools = list(pools)
        self._labels: dict[str, set[str]] = {}
        for pool in pools:
            for text, labels in zip(pool.texts, pool.labels, strict=True):
                key = compact_key(text)
                if key:
                    self._labels.setdefault(key, set()).update(labels)
        self.label_types = merged_label_types(pools)

    def __contains__(self, text: str) -> bool:
        return compact_key(text) in self._labels

    def unique(self, text: str, type_: str | None = None) -> str | None:
        """The one label whose texts share ``text``'s key (among labels of ``type_``, or
        untyped ones, when a type is given); None when there are none or several."""
        labels = [la for la in self._labels.get(compact_key(text), ())
                  if type_allowed(self.label_types, la, type_)]
        return labels[0] if len(labels) == 1 else None
