"""The lexical sieve: an exact match on a compact key in front of the vector search.

Why: code names and formulas differ between a text and the KB only in spaces, hyphens and
commas ("SR 48,968" vs "SR 48968", "Ro15-1788" vs "Ro 15-1788", "BAY k-8644" vs "Bay K 8644").
A dense encoder places such strings near other code names with similar digits ("SR 4895"), so
it misses a match that the characters make certain. The compact key keeps letters and digits
only, lowercased; a mention whose key names exactly one KB concept of its type takes that
concept.

Training mentions come first: when the key occurs among the training mentions (D), the corpus
has its own usage for that string (its annotators may file it under another concept than the
KB name's owner), and the vector search, which sees D, decides. Measured on BC5CDR dev
(``eval.normalization_tables`` ablation row "no lexical sieve").
"""

from __future__ import annotations

from collections.abc import Iterable

from e2e_linker.normalize.search import LabeledTexts, merged_label_types, type_allowed

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
