"""The exact sieves in front of dense search: a normalised-name match and a compact-key match.

Both are as in Xu & Bethard 2021's first sieve and DNorm/tmChem's dictionaries: a concept whose
KB (or training) name equals the mention's text after a fold wins before any vector is compared.

* :class:`NameDictionary` (``linker annotate``) folds case, punctuation and spacing
  (:func:`normalize_name`); when a name is ambiguous, the dense ranking decides among its
  concepts (:func:`choose_concept`).
* :class:`CompactKeyIndex` (``linker normalize``'s lexical sieve and annotate's sieve stack,
  through :class:`CompactKeySieve`) keeps letters and digits only and folds British spellings
  (:func:`compact_key`; the three folds compared: :mod:`e2e_linker.lexical.text_forms`). Why: code names and formulas differ
  between a text and the KB only in spaces, hyphens and commas ("SR 48,968" vs "SR 48968",
  "Ro15-1788" vs "Ro 15-1788", "BAY k-8644" vs "Bay K 8644"); a dense encoder places such
  strings near other code names with similar digits ("SR 4895"), so it misses a match that the
  characters make certain. A mention whose key names exactly one KB concept of its type takes
  that concept — unless the key occurs among the training mentions (D): then the corpus has its
  own usage for that string and the vector search, which sees D, decides (measured on BC5CDR dev,
  ``eval.normalization_tables``' ablation row "no lexical sieve", at 94e8e08: docs/history.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

from e2e_linker.kb_search.label_index import LabeledTexts, merged_label_types
from e2e_linker.lexical.key_table import KeyTable, StringTable

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalize_name(text: str) -> str:
    """Lower-case, punctuation and spacing folded: 'H2-Receptor  antagonists' → 'h2 receptor
    antagonists'; only ASCII letters and digits survive (one of three folds:
    :mod:`e2e_linker.lexical.text_forms`, "Three folds, three jobs")."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


class KeyedLabels:
    """Keys → rows of labels, each label with its type string: the storage the exact-name
    dictionary and the compact-key index share, held in arrays so that the compiled KB stores
    it and later starts map it instead of rebuilding it."""

    keys: KeyTable
    labels: StringTable
    label_types: StringTable

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays the compiled KB stores, each named ``<prefix>.<part>``."""
        return {**self.keys.arrays(f"{prefix}.keys"), **self.labels.arrays(f"{prefix}.labels"),
                **self.label_types.arrays(f"{prefix}.types")}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str):
        """The table :meth:`arrays` stored (read, not rebuilt), as an instance of ``cls``."""
        table = cls.__new__(cls)
        table.keys = KeyTable.from_arrays(arrays, f"{prefix}.keys")
        table.labels = StringTable.from_arrays(arrays, f"{prefix}.labels")
        table.label_types = StringTable.from_arrays(arrays, f"{prefix}.types")
        return table


class NameDictionary(KeyedLabels):
    """Normalised name → concept IDs (insertion order: the KB's order, corpus names first).

    Held in arrays (:class:`~e2e_linker.lexical.key_table.KeyTable` over the folded names, the
    concept IDs and their types as :class:`~e2e_linker.lexical.key_table.StringTable`), so the
    compiled KB stores it and later starts map it instead of folding every name again."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = (), types: dict[str, str] | None = None):
        runs: dict[str, list[int]] = {}
        label_rows: dict[str, int] = {}
        for name, cid in pairs:
            key = normalize_name(name)
            if not key:
                continue
            row = label_rows.setdefault(cid, len(label_rows))
            run = runs.setdefault(key, [])
            if row not in run:
                run.append(row)
        types = types or {}
        self.keys = KeyTable.from_runs(runs)
        self.labels = StringTable.from_strings(label_rows)
        self.label_types = StringTable.from_strings(types.get(c) or "" for c in label_rows)

    @classmethod
    def from_kb(cls, kb) -> NameDictionary:
        return cls(kb.names(), {cid: c.type for cid, c in kb.concepts.items()})

    def lookup(self, text: str, type_: str | None = None, only_type: bool = False) -> list[str]:
        """Concepts named exactly ``text``; restricted to ``type_`` when any of them has it
        (with ``only_type``, also when none has it: then nothing is found)."""
        rows = self.keys.get(normalize_name(text))
        found = [self.labels[r] for r in rows]
        if type_ and found:
            typed = [self.labels[r] for r in rows if type_ in self.label_types[r].split("|")]
            if typed or only_type:
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
    folded (:data:`BRITISH_TO_AMERICAN`; one of three folds:
    :mod:`e2e_linker.lexical.text_forms`, "Three folds, three jobs")."""
    key = "".join(ch for ch in text.lower() if ch.isalnum())
    for british, american in BRITISH_TO_AMERICAN:
        key = key.replace(british, american)
    return key


class CompactKeyIndex(KeyedLabels):
    """Compact key → labels over one or more pools of texts (with the pools' label types).

    Held in arrays like :class:`NameDictionary` (a label's types ``|``-joined), so the compiled
    KB stores the ontology's index and later starts map it."""

    def __init__(self, pools: Iterable[LabeledTexts]):
        pools = list(pools)
        runs: dict[str, set[int]] = {}
        label_rows: dict[str, int] = {}
        for pool in pools:
            for text, labels in zip(pool.texts, pool.labels, strict=True):
                key = compact_key(text)
                if key:
                    runs.setdefault(key, set()).update(
                        label_rows.setdefault(label, len(label_rows)) for label in labels)
        merged = merged_label_types(pools)
        self.keys = KeyTable.from_runs({key: sorted(rows) for key, rows in runs.items()})
        self.labels = StringTable.from_strings(label_rows)
        self.label_types = StringTable.from_strings(
            "|".join(sorted(merged.get(label, ()))) for label in label_rows)

    def __contains__(self, text: str) -> bool:
        return compact_key(text) in self.keys

    def matches(self, text: str, type_: str | None = None) -> list[str]:
        """The labels whose texts share ``text``'s key (among labels of ``type_``, or
        untyped ones, when a type is given), in index order."""
        return [self.labels[r] for r in self.keys.get(compact_key(text))
                if self._allowed(r, type_)]

    def unique(self, text: str, type_: str | None = None) -> str | None:
        """The one label of :meth:`matches`; None when there are none or several."""
        found = self.matches(text, type_)
        return found[0] if len(found) == 1 else None

    def _allowed(self, row: int, type_: str | None) -> bool:
        """:func:`type_allowed` for the label of ``row``."""
        if not type_:
            return True
        types = self.label_types[row]
        return not types or type_ in types.split("|")


class CompactKeySieve:
    """The compact-key rule, in one place for ``linker normalize`` (its lexical sieve,
    :meth:`Normalizer.lexical_match <e2e_linker.normalizer.normalizer.Normalizer.lexical_match>`)
    and ``linker annotate`` (the ``compact_key`` step of
    :class:`~e2e_linker.lexical.sieve_stack.SieveStack`): a text whose key names exactly one
    concept of its type in ``ontology`` takes that concept, unless ``training`` (the training
    mentions' keys) holds the key — then the corpus has its own usage for the string and the
    vector search decides. Each caller builds its own pools (folded texts, salt-free forms);
    the rule is this class's."""

    def __init__(self, ontology: CompactKeyIndex, training: CompactKeyIndex):
        self.ontology = ontology
        self.training = training

    def match(self, text: str, type_: str | None = None) -> str | None:
        """The one concept of ``type_`` whose KB texts share ``text``'s compact key; None when
        there are none or several, or when a training mention holds the key."""
        if text in self.training:
            return None
        return self.ontology.unique(text, type_)
