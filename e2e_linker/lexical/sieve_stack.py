"""The normalizer's lexical sieves, offered to ``linker annotate``'s detected spans.

``linker normalize`` links BC5CDR gold spans far better than dense search alone
(eval/results/normalize_cli) with a stack of lexical steps in front of dense search;
``linker annotate`` had only the exact-name sieve. This stack gives a
detected span, after annotate's own exact-name sieve found nothing, the same chances, in order:

1. ``abbreviations`` — the span's text with in-document short forms expanded
   (:meth:`~e2e_linker.lexical.abbreviations.DocumentAbbreviations.expansions`: Schwartz–Hearst definitions,
   one-letter definitions, and short forms matched to another detected span of the document),
   looked up with the exact-name sieve;
2. ``training`` — a training mention (the normalizer's D pool) with the same folded text: its
   majority concept;
3. ``compact_key`` — a unique letters-and-digits match to one KB concept of the span's type
   (:class:`~e2e_linker.lexical.sieves.CompactKeySieve`, the normalizer's rule), with ``salt_free`` forms
   ("tiapride" for "Tiapride Hydrochloride") when switched on — unless training mentions hold
   that key (then their usage, or dense search, decides);
4. ``written_forms`` — for a Disease span, its text in the singular, with another neoplasm
   head noun or without a neutral leading word
   (:func:`~e2e_linker.lexical.disease_forms.disease_forms`) when exactly one concept of the
   span's type bears that form as a KB name or as its compact key.

Each step is a switch of :class:`SieveSwitches`, so each can be measured (docs/decisions/0018-sieve-stack.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from data_tools.kb_loaders import DISEASE_TYPE
from e2e_linker.kb_search.label_index import LabeledTexts, type_allowed
from e2e_linker.lexical.disease_forms import disease_forms
from e2e_linker.lexical.salt_forms import salt_free_synonyms
from e2e_linker.lexical.sieves import CompactKeyIndex, CompactKeySieve, NameDictionary
from e2e_linker.lexical.text_forms import TextNormalizer


@dataclass(frozen=True)
class SieveSwitches:
    """Which steps of the stack run (all of them by default)."""

    abbreviations: bool = True
    training: bool = True
    compact_key: bool = True
    salt_free: bool = True
    written_forms: bool = True

    @classmethod
    def none(cls) -> SieveSwitches:
        """Every step off: annotate's exact-name sieve and dense search alone."""
        return cls(False, False, False, False, False)


class SieveStack:
    """The steps above over one KB and one pool of training mentions."""

    def __init__(self, kb, names: NameDictionary,
                 training: Iterable[tuple[str, str, str]] = (),
                 switches: SieveSwitches | None = None, fold: TextNormalizer | None = None,
                 ontology_keys: CompactKeyIndex | None = None):
        """``training``: ``(text, label, type)`` triples as a normalizer's ``mentions.tsv``
        holds them (raw text; ``|``-joined labels of composite mentions are left out). They
        also block the compact key when the ``training`` step itself is off.
        ``ontology_keys``: :func:`ontology_key_index` of ``kb`` with these switches' salt-free
        setting, when already at hand (the compiled KB stores it); built here otherwise."""
        self.switches = switches or SieveSwitches()
        self.names = names
        self.fold = fold or TextNormalizer()
        self.training = LabeledTexts.from_pairs(
            (self.fold(text), kb.resolve(label), type_) for text, label, type_ in training
            if "|" not in label)
        self._training_row = {text: i for i, text in enumerate(self.training.texts)}
        #: the ``compact_key`` step's rule (None: switched off)
        self.compact_keys: CompactKeySieve | None = None
        if self.switches.compact_key:
            self.compact_keys = CompactKeySieve(
                ontology_keys if ontology_keys is not None
                else ontology_key_index(kb, self.switches.salt_free),
                CompactKeyIndex([self.training]))

    @property
    def ontology_keys(self) -> CompactKeyIndex | None:
        """The KB's compact keys (None: the ``compact_key`` step is off): the written-form
        step and the gene ranking look forms up in them without the training block."""
        return self.compact_keys.ontology if self.compact_keys is not None else None

    def training_labels(self, text: str, type_: str | None) -> list[str]:
        """The concepts the pool of training mentions links ``text`` to (folded as the
        ``training`` step folds it), of ``type_``, in the pool's order; empty when no training
        mention is written so.

        Why: the ``training`` step links a text no KB name holds by them, and the gene
        ranking reads them among the genes an alias names (an alias is shared by genes of one
        species, and the one annotators meant by it in the training corpora is the one they
        mostly mean elsewhere: docs/decisions/0043-genes-by-training-usage.md). The pool
        is read whether or not the step is switched on."""
        row = self._training_row.get(self.fold(text))
        if row is None:
            return []
        return [la for la in self.training.labels[row]
                if type_allowed(self.training.label_types, la, type_)]

    def match(self, text: str, type_: str | None, expanded: str | None = None
              ) -> tuple[str, str] | None:
        """``(concept_id, step)`` for a span whose exact-name lookup found nothing, or None.

        ``expanded`` is the span's text with in-document short forms expanded; every step also
        tries it (after ``text``) when the ``abbreviations`` switch is on.
        """
        candidates = [text]
        if self.switches.abbreviations and expanded and expanded != text:
            candidates.append(expanded)
        if len(candidates) > 1:
            found = self.names.lookup(expanded, type_)
            if len(found) == 1:
                return found[0], "abbreviation"
        if self.switches.training:
            for candidate in candidates:
                if labels := self.training_labels(candidate, type_):
                    return labels[0], "training"
        if self.compact_keys is not None:
            for candidate in candidates:
                label = self.compact_keys.match(candidate, type_)
                if label is not None:
                    return label, "compact_key"
        if self.switches.written_forms and type_ == DISEASE_TYPE:
            for candidate in candidates:
                for form in disease_forms(candidate):
                    found = self.names.lookup(form, type_, only_type=True)
                    if len(found) == 1:
                        return found[0], "written_form"
                    if self.ontology_keys is not None and (
                            label := self.ontology_keys.unique(form, type_)) is not None:
                        return label, "written_form"
        return None


def ontology_key_index(kb, salt_free: bool = True) -> CompactKeyIndex:
    """The compact keys of every KB name (and, with ``salt_free``, of the salt-free forms of
    its chemical names): the ``compact_key`` step's index, built from the KB (seconds on the
    full MeSH KB, so the compiled KB stores the salt-free one)."""
    pools = [LabeledTexts.from_pairs((name, c.id, c.type) for c in kb for name in c.all_names())]
    if salt_free:
        pools.append(LabeledTexts.from_pairs(
            (name, cid, kb.get(cid).type) for cid, name in salt_free_synonyms(kb)))
    return CompactKeyIndex(pools)
