"""How a span's concepts are ranked by their names and their species: genes, linked by name.

Why its own module: a span of a name-only type (genes: ``lexical_types``) is never searched
densely; its concepts come from the names its text is or is written like, and the species
decides among a name's genes — the document's species, the one the mention itself names, the
same-symbol gene of that species (ortholog), the gene the document otherwise names too. Those
steps grew inside :class:`~e2e_linker.collective.span_linking.SpanLinker`, which now holds one
:class:`GeneRanking` and keeps only what every type goes through (dense search, sieves,
composites, short forms). The species order (:meth:`GeneRanking.species_first`) also reorders
a dense ranking's gene concepts. Each step's figures: docs/decisions/0025-gene-ranking.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from data_tools.kb_loaders import CORPUS_SOURCE, GENE_TYPE
from data_tools.species import (
    DEFAULT_TAXON,
    FLY,
    MOUSE,
    YEAST,
    YEAST_S288C,
    mutant_mark_after,
    species_before,
)
from e2e_linker.lexical.gene_forms import written_variants
from e2e_linker.lexical.sieves import CompactKeyIndex, NameDictionary, normalize_name

#: species whose genes a mention is taken for only in a document that names the species
#: (:meth:`GeneRanking.of_unnamed_species`)
NAMED_ONLY_TAXA = frozenset({FLY, YEAST_S288C, YEAST})
#: how many texts' name-only rankings, and how many concepts' :class:`NameFacts`, a
#: :class:`GeneRanking` remembers (the least recently used go first)
MEMO_SIZE = 1 << 16


def document_words(text: str) -> str:
    """A document's text folded as KB names are (:func:`normalize_name`), between spaces, so
    that ``f" {name} " in words`` says whether it writes a name as whole words."""
    return f" {normalize_name(text)} "


@dataclass(frozen=True)
class NameFacts:
    """What the ranking reads of one concept's names: its primary name (``name``) and that
    name folded (``key``, :func:`normalize_name`), whether it was mined from a corpus alone
    (``mined``), how many names it has (``count``: :meth:`~data_tools.kb.Concept.all_names`)
    and their folded forms (``keys``)."""

    name: str
    key: str
    mined: bool
    count: int
    keys: frozenset[str]


class GeneRanking:
    """Ranks concepts by names and species over one KB: ``names`` (the exact-name sieve;
    None: no names), ``keys`` (the KB's compact keys, :attr:`SieveStack.ontology_keys
    <e2e_linker.lexical.sieve_stack.SieveStack.ontology_keys>`; None: no written forms by
    letters), ``taxa`` (concept ID → NCBI taxon for the concepts that have one; None or
    empty: no species preference) and ``concepts`` (the KB's concepts by ID: primary names,
    symbols, name counts)."""

    def __init__(self, names: NameDictionary | None = None,
                 keys: CompactKeyIndex | None = None, taxa: dict[str, str] | None = None,
                 concepts: Mapping | None = None,
                 usage: Callable[[str, str], Sequence[str]] | None = None):
        self.names = names
        self.keys = keys
        self.taxa = taxa or None
        self.concepts = concepts
        #: (text, type) → the concepts training mentions written so link to
        #: (:meth:`SieveStack.training_labels
        #: <e2e_linker.lexical.sieve_stack.SieveStack.training_labels>`; None: not read)
        self.usage = usage
        # remembered per instance (its names and concepts do not change): selection and
        # linking rank the same text again and again, in every document that writes it, and
        # each ranking read every concept's names from the KB (the host time of
        # eval/results/bench/host_time.md)
        self._name_only = functools.lru_cache(maxsize=MEMO_SIZE)(self._rank_name_only)
        self._facts = functools.lru_cache(maxsize=MEMO_SIZE)(self._name_facts)

    def name_only_ranking(self, text: str, type_: str) -> list[tuple[str, float]]:
        """The ranking a span of a name-only type gets in place of the dense one:
        :meth:`name_ranking`, else :meth:`name_form_ranking` when no exact name links it
        (remembered by text and type: a new list each call)."""
        return list(self._name_only(text, type_))

    def _rank_name_only(self, text: str, type_: str) -> tuple[tuple[str, float], ...]:
        return tuple(self.name_ranking(text, type_) or self.name_form_ranking(text, type_))

    def facts(self, cid: str) -> NameFacts:
        """The :class:`NameFacts` of concept ``cid`` of :attr:`concepts` (remembered: a
        compiled KB decodes a concept's strings on every read)."""
        return self._facts(cid)

    def _name_facts(self, cid: str) -> NameFacts:
        concept = self.concepts[cid]
        names = concept.all_names()
        return NameFacts(concept.name, normalize_name(concept.name),
                         concept.source == CORPUS_SOURCE, len(names),
                         frozenset(normalize_name(name) for name in names))

    def name_ranking(self, text: str, type_: str) -> list[tuple[str, float]]:
        """The concepts ``text`` names exactly, those whose primary name it is first (not a name
        mined from a corpus), then those with more names (each scored 0.0 and written
        without a link score; the species rule then reorders the species), else none — the
        sieve stack and short forms still apply.

        Why: an alias is shared by several genes of one species ("p62" is an alias of
        SQSTM1 and of GTF2H1); the gene whose official symbol the text is, and then the
        better-described gene, was the gold one more often than the KB's order on every gene
        corpus's training split and on BioRED dev (docs/decisions/0025-gene-ranking.md)."""
        return self.name_ranking_of(
            text, self.names.lookup(text, type_) if self.names is not None else [], type_)

    def name_ranking_of(self, text: str, found: list[str], type_: str
                        ) -> list[tuple[str, float]]:
        """The concepts ``found`` for ``text`` in :meth:`name_ranking`'s order, with those
        that training mentions written as ``text`` link to (:attr:`usage`) before the rest
        of theirs: a concept mined alone, then one whose primary name ``text`` is not, comes
        after the others still."""
        if len(found) > 1 and self.concepts is not None:
            key = normalize_name(text)
            used = set(self.usage(text, type_)) if self.usage is not None else set()

            def order(cid: str) -> tuple[bool, bool, bool, int]:
                # a concept mined from a corpus alone has no name of its own: its "primary
                # name" is a training mention's text (an IL-10 of a species the KB lacks)
                facts = self.facts(cid)
                return facts.mined, cid not in used, facts.mined or facts.key != key, \
                    -facts.count

            found = sorted(found, key=order)
        return [(cid, 0.0) for cid in found]

    def name_form_ranking(self, text: str, type_: str) -> list[tuple[str, float]]:
        """For a span of a name-only type whose text is no exact name: the concepts of the
        KB names with its letters and digits (any case, spacing or punctuation: "SIRT-1",
        "Twist 1"), else of the first of its written variants
        (:func:`~e2e_linker.lexical.gene_forms.written_variants`: "TGF-b1", "Nas1p") that an
        exact name or those letters name; ordered as :meth:`name_ranking` orders the variant's
        own concepts, and empty when none is found.

        Why: a name-only span that no name links is dropped, and many genes are written in a
        form no KB name spells (docs/decisions/0025-gene-ranking.md). Unlike the sieve stack's
        compact key, several concepts may share the letters: the species rule then chooses,
        as it does among an exact name's concepts."""
        keys = self.keys
        if keys is not None and (found := keys.matches(text, type_)):
            return self.name_ranking_of(text, found, type_)
        for form in written_variants(text):
            if ranked := self.name_ranking(form, type_):
                return ranked
            if keys is not None and (found := keys.matches(form, type_)):
                return self.name_ranking_of(form, found, type_)
        return []

    def names_a_gene(self, text: str) -> bool:
        """Whether ``text`` names a gene of some species (a concept with a taxon), not only
        a class of gene products ("cytokine", "chromatin": MeSH concepts typed Gene)."""
        return self.taxa is not None and any(
            cid in self.taxa for cid, _ in self.name_only_ranking(text, GENE_TYPE))

    def of_unnamed_species(self, ids: Sequence[str], named: Sequence[str]) -> bool:
        """Whether ``ids`` are all genes of a species in :data:`NAMED_ONLY_TAXA` (fly, yeast)
        that ``named`` (the document's :func:`~data_tools.species.preferred_taxa`) lacks: such
        a mention is taken for no gene.

        Why: fly genes are named by words ("filamin", "calmodulin", "dynein"), so a span
        whose only gene is a fly or yeast one (the ortholog step found no gene of the
        document's species with its symbol) in an abstract that names neither species was
        mostly a protein family or class ("PKC", "integrin", "tyrosine kinase") or no gene
        at all ("Alu" repeats, "SNPs"). Dropping it gained Gene mention and strict F1 on the
        gene dev rows; mouse genes are kept, their names being the human ones written
        another way (the figures: docs/decisions/0024-unnamed-species.md)."""
        return bool(ids) and self.taxa is not None and all(
            self.taxa.get(cid) in NAMED_ONLY_TAXA and self.taxa[cid] not in named
            for cid in ids)

    def mention_species(self, ranked: list[tuple[str, float]], text: str, doc_text: str,
                        start: int, end: int, preferred: Sequence[str]) -> list[str]:
        """The species order for one span's concepts: its document's ``preferred`` taxa, with
        one of its candidates' species moved first when the mention itself says so — a
        species named right before it (:func:`~data_tools.species.species_before`: "mouse
        Nkx6-2"), else a species the document names whose official symbol the text is as
        written when the human one is not ("Shh", "Sox7": mouse; "SHH" is no cue, proteins
        of every species are written in capitals), else mouse for a mutant allele written
        after it (:func:`~data_tools.species.mutant_mark_after`: "Shh(-/-)").

        Why: the document's species is the gold gene's for most gene mentions, not for all:
        abstracts about mouse models name human genes and the reverse. Each cue moved more
        gold genes first than it moved away on the gene corpora's training splits and
        BioRED dev (docs/decisions/0025-gene-ranking.md)."""
        named = {self.taxa[cid] for cid, _ in ranked if cid in self.taxa}
        if not named:  # no gene candidate: nothing to order
            return list(preferred)
        # the species said beside the mention counts even when no candidate is of it: the
        # ortholog step (:meth:`ortholog`) can then find that species' gene
        first = list(species_before(doc_text, start))
        if not first and self.concepts is not None and len(named) > 1:
            written = [self.taxa[cid] for cid, _ in ranked
                       if cid in self.taxa and self.facts(cid).name == text]
            if written and DEFAULT_TAXON not in written and written[0] in preferred:
                first = [written[0]]
        if not first and MOUSE in preferred and mutant_mark_after(doc_text, end):
            first = [MOUSE]
        return [*first, *(t for t in preferred if t not in first)]

    def named_in_document_first(self, ranked: list[tuple[str, float]], text: str,
                                words: str) -> list[tuple[str, float]]:
        """``ranked`` with, among the genes of its first gene's species, the one that has the
        most of its other names written in the document moved first, when it has more than
        the first one; ``words`` is :func:`document_words` of the document. A name that is
        the official symbol of another gene of that species does not count for a gene that
        has it only as an alias.

        Why: an alias is shared by genes of one species ("PAI-1": Serpine1 and Serpine2), and
        a document that names a gene by an alias usually names it otherwise too ("plasminogen
        activator inhibitor-1", "Serpine1"); this chose the gold gene more often than the
        symbol-and-names order alone on every gene dev set. A document that writes another
        gene's official symbol names that gene: a list of a family's members ("CCR3, CCR4,
        CCR6, CCR9, CCR10") wrote CCR9, an alias of ACKR2 too, and so gave ACKR2 every
        member whose symbol is also its alias (docs/decisions/0025-gene-ranking.md)."""
        if self.taxa is None or self.concepts is None or len(ranked) < 2:
            return ranked
        taxon = self.taxa.get(ranked[0][0])
        same = [item for item in ranked if self.taxa.get(item[0]) == taxon]
        if taxon is None or len(same) < 2:
            return ranked
        own = normalize_name(text)

        def symbol_of_another(cid: str, key: str) -> bool:
            return any(other != cid for other in self.genes_with_symbol(key, key, taxon))

        def named(cid: str) -> int:
            return sum(f" {key} " in words and not symbol_of_another(cid, key)
                       for key in self.facts(cid).keys if len(key) > 2 and key != own)

        counts = [named(cid) for cid, _ in same]
        best = max(range(len(same)), key=lambda n: (counts[n], -n))
        if counts[best] <= counts[0]:
            return ranked
        return [same[best], *(item for item in ranked if item is not same[best])]

    def ortholog(self, cid: str, taxon: str) -> str | None:
        """The gene of ``taxon`` whose official symbol is gene ``cid``'s, case aside
        ("VEGFA" for mouse is Vegfa), when ``cid`` is a gene of another species; else None.

        Why: an alias is often recorded for one species' gene only ("VEGF-A" for human
        VEGFA, "alpha1A" for mouse Cacna1a), so the species a mention prefers may have no
        gene its text names while its ortholog does; orthologs mostly share their symbol.
        Linking the preferred species' gene of that symbol was right more often than the
        other species' gene on the gene corpora's training splits and BioRED dev
        (docs/decisions/0025-gene-ranking.md)."""
        if self.taxa is None or self.concepts is None or self.names is None:
            return None
        own = self.taxa.get(cid)
        if own is None or own == taxon:
            return None
        return next(self.genes_with_symbol(self.facts(cid).name, self.facts(cid).key, taxon),
                    None)

    def genes_with_symbol(self, name: str, key: str, taxon: str) -> Iterator[str]:
        """The genes of ``taxon`` that ``name`` names whose official symbol, folded, is
        ``key`` (none without names): a symbol's own genes, apart from the genes that hold
        it as an alias (:meth:`ortholog`, :meth:`named_in_document_first`)."""
        if self.names is None or self.taxa is None or self.concepts is None:
            return
        for other in self.names.lookup(name, None):
            if self.taxa.get(other) == taxon and self.facts(other).key == key:
                yield other

    def species_first(self, ranked: list[tuple[str, float]], preferred: Sequence[str]
                      ) -> list[tuple[str, float]]:
        """``ranked`` with its species-specific concepts reordered in the places they hold:
        those of the ``preferred`` taxa first, in that order, then the other taxa's, each
        group in its dense order; concepts without a taxon (chemicals, diseases) keep their
        places.

        Why: a gene symbol ("p53", "IL6") names a gene in every species, with vectors that
        tie or nearly tie; the document says which species it is about
        (:func:`data_tools.species.preferred_taxa`: the species it names most, human by
        default), and that decides both the dense choice and which of an exact name's
        concepts wins.
        """
        slots = [n for n, (cid, _) in enumerate(ranked) if cid in self.taxa]
        if len(slots) < 2:
            return ranked
        order = {taxon: n for n, taxon in enumerate(preferred)}
        moved = sorted((ranked[n] for n in slots),
                       key=lambda item: order.get(self.taxa[item[0]], len(order)))
        out = list(ranked)
        for n, item in zip(slots, moved, strict=True):
            out[n] = item
        return out
