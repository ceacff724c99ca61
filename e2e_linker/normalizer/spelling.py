"""How much of a mention's spelling the names of the concept it was linked to share: the
lexical evidence behind a normalizer link.

Why: the normalizer links by cosine, and a mention that names nothing still has a nearest
name. A shuffled word ("ctrlk") or a word that names no concept of the type ("patients"
typed Disease) reached cosines above the NIL threshold against some MeSH concept while sharing
hardly any letters with it. A right link almost always shares most of its spelling with one
of the concept's names or training mentions (abbreviations are expanded before the search, and
a training mention "MI" is itself a name of its concept). So the NIL rule asks, besides the
cosine, how much spelling the link rests on
(:meth:`~e2e_linker.normalizer.normalizer.Normalizer._decide`, rule 5; docs/results.md, "NIL:
the normalizer's no-match answer"), and the confidence reads it too
(:mod:`e2e_linker.normalizer.confidence`).

The measure is :func:`spelling_share`: the largest share of the mention's character trigrams
(each word padded with a space at either end, so "mi" has " mi" and "mi ") found in one name
of the concept. It is 1.0 for a mention written as a name, high for an inflection
("hypotensive" against "hypotension") and near 0 for a shuffled word.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from e2e_linker.kb_search.label_index import LabeledTexts
from e2e_linker.lexical.text_forms import TextNormalizer


def trigrams(text: str) -> set[str]:
    """The character trigrams of ``text``'s words, each word padded with a space at either
    end (a one-letter word still has one: " a ")."""
    out: set[str] = set()
    for word in text.split():
        padded = f" {word} "
        out.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return out


def spelling_share(text: str, names: Iterable[str]) -> float:
    """The largest share, in [0, 1], of ``text``'s :func:`trigrams` that one of ``names``
    holds (0.0 for no names, or a text without a word). Texts are compared as given: fold
    them alike first."""
    mine = trigrams(text)
    if not mine:
        return 0.0
    return max((len(mine & trigrams(name)) / len(mine) for name in names), default=0.0)


class ConceptSpellings:
    """The texts a normalizer link to a concept can rest on: the concept's KB names (folded
    by ``text``, as the ontology pool folds them) and the texts of ``pools`` (the training
    mentions and extra synonyms, already folded) labelled with it.

    Built once per normalizer; the pools' texts are indexed by label on the first call."""

    def __init__(self, kb: Any, text: TextNormalizer, pools: Sequence[LabeledTexts]):
        self.kb = kb
        self.text = text
        self.pools = pools
        self._pooled: dict[str, list[str]] | None = None

    def pooled(self, label: str) -> list[str]:
        """The pools' texts labelled ``label`` itself (a composite's whole text is no name
        of each part: the pools hold its parts under their own labels)."""
        if self._pooled is None:
            index: dict[str, list[str]] = {}
            for pool in self.pools:
                for text, labels in zip(pool.texts, pool.labels, strict=True):
                    for label_of_text in labels:
                        index.setdefault(label_of_text, []).append(text)
            self._pooled = index
        return self._pooled.get(label, [])

    def names(self, label: str) -> list[str]:
        """Every text a link to ``label`` (one concept ID, or several joined by ``|``: a
        training mention of a composite) rests on: the KB names of each ID and the pooled
        texts of the label and of each ID."""
        ids = [i for i in label.split("|") if i]
        out: list[str] = []
        for cid in dict.fromkeys((label, *ids)):
            concept = self.kb.get(cid) if cid in ids else None
            if concept is not None:
                out += [self.text(name) for name in concept.all_names()]
            out += self.pooled(cid)
        return out

    def share(self, text: str, label: str) -> float:
        """:func:`spelling_share` of the folded mention ``text`` against ``label``'s
        :meth:`names`."""
        return spelling_share(text, self.names(label))
