"""Linking the spans ``linker annotate`` kept: dense search, then the lexical steps.

Why its own module: detection (the model's scores and vectors, in
:mod:`e2e_linker.collective.annotator`) and selection (:mod:`e2e_linker.collective.span_selection`)
decide *which* spans; this module decides *what concept* each one is, from the KB side: the
entity index (dense), the exact-name sieve, the sieve stack, in-document short forms, or a text
linker (``--linking text``). Every step reads each document's one abbreviation scan
(:class:`~e2e_linker.lexical.abbreviations.DocumentAbbreviations`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from data_tools.documents import Annotation, Document
from data_tools.formats.mentions_jsonl import ANNOTATOR, CANDIDATES, format_candidates
from data_tools.kb_loaders import (
    CHEMICAL_TYPE,
    DISEASE_TYPE,
    GENE_TYPE,
    SPECIES_TYPE,
    TAXON_PREFIX,
    species_form_key,
)
from data_tools.species import gene_taxa, mentioned_taxa_first, preferred_taxa
from e2e_linker.collective.gene_appositions import ApposedName
from e2e_linker.collective.gene_families import GeneMentionModel
from e2e_linker.collective.gene_ranking import GeneRanking, document_words
from e2e_linker.collective.remembered import RememberedNames
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.collective.species_choice import (
    DocumentSpecies,
    SpeciesChoice,
    document_species,
)
from e2e_linker.kb_search.entity_index import EntityIndex
from e2e_linker.lexical.abbreviations import DocumentAbbreviations, expand_mention, written_for
from e2e_linker.lexical.gene_forms import coordinated_genes, too_short_for_a_gene
from e2e_linker.lexical.sieve_stack import SieveStack
from e2e_linker.lexical.sieves import NameDictionary, choose_concept
from e2e_linker.lexical.text_forms import composite_parts

#: candidates an explained annotation lists ("why this concept": the dense ranking's top)
EXPLAIN_TOP = 5
#: how many documents' species orders :func:`document_taxa` remembers (a group's and more)
DOCUMENT_MEMO = 256


@functools.lru_cache(maxsize=DOCUMENT_MEMO)
def document_taxa(text: str) -> tuple[str, ...]:
    """:func:`~data_tools.species.preferred_taxa` of a document's text, remembered for the
    last :data:`DOCUMENT_MEMO` documents: linking and the unnamed-species step both read it,
    and its cue words are searched over the whole text."""
    return tuple(preferred_taxa(text))


class TextLinker(Protocol):
    """What links detected spans by their text: ``linker normalize``'s engine
    (:class:`e2e_linker.normalizer.normalizer.Normalizer`) fits. The collective layer does not
    import the normalizer; the caller that wants it (:func:`e2e_linker.api.Linker.load`) hands
    it in."""

    def normalize(self, docs: Iterable[Document],
                  abbreviations: Sequence[DocumentAbbreviations] | None = None
                  ) -> list[Document]:
        """Fill each annotation's ``concept_ids`` and ``link_score`` in place."""
        ...


def usage_with_species(training: Callable[[str, str], Sequence[str]] | None,
                       species_usage: Mapping[str, Sequence[str]] | None
                       ) -> Callable[[str, str], Sequence[str]] | None:
    """The gene ranking's usage (:attr:`GeneRanking.usage`): ``training`` (the training
    mentions' concepts of a text), and for a Species span the taxa ``species_usage`` gives its
    written form (:func:`~data_tools.kb_loaders.species_form_key`) before them; None when
    neither is given.

    Why: a common word names many taxa in the species KB ("yeast" is a UniProt common name
    of Candida albicans and of dozens of other yeasts), and the ranking then put the taxon
    with the most names first; the species corpora's training mentions say which one
    annotators mean by it (``data_tools/species_forms.tsv``;
    docs/decisions/0045-species-usage.md)."""
    if not species_usage:
        return training

    def usage(text: str, type_: str) -> Sequence[str]:
        found = list(training(text, type_)) if training is not None else []
        if type_ == SPECIES_TYPE:
            found = [*species_usage.get(species_form_key(text), ()), *found]
        return found

    return usage


class SpanLinker:
    """Links kept spans against one KB: ``index`` (dense), ``names`` (the exact-name sieve;
    None: off), ``sieves`` (the sieve stack; None: off), ``text_linker`` (relinks every span
    by its text instead; None: off) and, with ``resolve_abbreviations``, a short form takes
    its long form's concept; with ``composites``, a span no name links as a whole takes its
    parts' concepts (:meth:`composite_ids`), and with ``coordinated_genes`` a span of a
    name-only type that writes numbered genes together does. A span of one of
    ``lexical_types`` is linked by its names only: ``index`` holds no names of those types,
    and another type's concept found by dense search is no link for it (``concepts``, the
    KB's concepts by ID, order a name's concepts: :meth:`GeneRanking.name_ranking`; with
    ``gene_usage``, the concepts the sieve stack's training mentions link a name to come
    first among them)."""

    def __init__(self, index: EntityIndex, names: NameDictionary | None = None,
                 sieves: SieveStack | None = None, text_linker: TextLinker | None = None,
                 resolve_abbreviations: bool = True, taxa: dict[str, str] | None = None,
                 composites: bool = True, lexical_types: Sequence[str] = (),
                 concepts: Mapping | None = None, species_mentions: bool = False,
                 species_choice: SpeciesChoice | None = None, gene_usage: bool = True,
                 gene_families: GeneMentionModel | None = None,
                 gene_false_alarms: GeneMentionModel | None = None,
                 species_usage: Mapping[str, Sequence[str]] | None = None,
                 read_higher_taxa: Callable[[], frozenset[str] | None] | None = None,
                 coordinated_genes: bool = False):
        self.index = index
        #: reads the taxa above a species when :attr:`higher_taxa` is first asked for
        self._read_higher_taxa = read_higher_taxa
        #: which Gene annotations name a family of genes, read by the ``gene_families`` step
        #: (:mod:`~e2e_linker.collective.gene_families`; None: the model has no such model)
        self.gene_families = gene_families
        #: which Gene annotations the gene corpora would leave unannotated, read by the
        #: ``gene_false_alarms`` step (None: the model has no such model)
        self.gene_false_alarms = gene_false_alarms
        #: a gene mention's species chosen by the fitted model in place of the rule's
        #: per-mention cues (:mod:`~e2e_linker.collective.species_choice`; None: the rule)
        self.species_choice = species_choice
        #: a document's species order starts from the taxa its Species spans link to
        #: (:func:`~data_tools.species.mentioned_taxa_first`)
        self.species_mentions = species_mentions
        #: the exact names, remembered: selection and linking look a text up several times
        self.names = RememberedNames(names) if names is not None else None
        self.sieves = sieves
        self.text_linker = text_linker
        self.resolve_abbreviations = resolve_abbreviations
        self.composites = composites
        #: a span of a name-only type writing numbered genes together ("JNK1/2") takes each
        #: gene (:meth:`composite_ids`; :meth:`coordination_of_species`)
        self.coordinated_genes = coordinated_genes
        self.lexical_types = frozenset(lexical_types)
        #: the KB's concepts by ID (``kb.concepts``): gene products, and the gene ranking's
        #: primary names
        self.concepts = concepts
        #: names and species for the name-only types and the species order of every ranking
        #: (concept ID → NCBI taxon in ``taxa``; none: no species preference)
        training = sieves.training_labels if sieves is not None and gene_usage else None
        self.genes = GeneRanking(self.names,
                                 sieves.ontology_keys if sieves is not None else None,
                                 taxa, concepts, usage_with_species(training, species_usage))

    @staticmethod
    def species_links(spans: Sequence[SpanPrediction],
                      ranked: Sequence[list[tuple[str, float]]]
                      ) -> dict[int, list[tuple[int, str]]]:
        """Document index → (start, NCBI taxon) of each of its Species spans whose ranking's
        first concept is a taxon (``NCBITaxon:`` IDs, prefix removed), in text order: what the
        species order (:meth:`mentioned_taxa`) and the species choice read of a batch; a
        species whose genes the KB files under a strain gives the strain's taxon first
        (:func:`~data_tools.species.gene_taxa`: yeast), as its cue words do."""
        out: dict[int, list[tuple[int, str]]] = {}
        for span, found in zip(spans, ranked, strict=True):
            if span.type == SPECIES_TYPE and found and found[0][0].startswith(TAXON_PREFIX):
                out.setdefault(span.doc_index, []).extend(
                    (span.start, taxon)
                    for taxon in gene_taxa(found[0][0].removeprefix(TAXON_PREFIX)))
        return out

    @staticmethod
    def mentioned_taxa(links: Mapping[int, list[tuple[int, str]]]) -> dict[int, list[str]]:
        """Document index → the NCBI taxa its Species spans link to (:meth:`species_links`),
        one entry a span, in text order."""
        return {doc: [taxon for _, taxon in found] for doc, found in links.items()}

    @staticmethod
    def species_inputs(spans: Sequence[SpanPrediction], texts: Sequence[str],
                       links: Mapping[int, list[tuple[int, str]]]
                       ) -> dict[int, tuple[list[tuple[int, str]], list[str]]]:
        """Document index → its Species spans' links (``links``: :meth:`species_links`) and
        its gene spans' texts: what
        :func:`~e2e_linker.collective.species_choice.document_species` reads of a batch."""
        gene_texts: dict[int, list[str]] = {}
        for span, text in zip(spans, texts, strict=True):
            found = gene_texts.setdefault(span.doc_index, [])
            if span.type == GENE_TYPE:
                found.append(text)
        return {doc: (links.get(doc, []), found) for doc, found in gene_texts.items()}

    @property
    def taxa(self) -> dict[str, str] | None:
        """Concept ID → NCBI taxon for the KB's concepts that have one (None: none)."""
        return self.genes.taxa

    def is_name(self, text: str, type_: str) -> bool:
        """Whether ``text`` is an exact KB name of a concept of ``type_``."""
        return bool(self.name_concepts(text, type_))

    def links_above(self, span: SpanPrediction, text: str, floor: float) -> bool:
        """Whether ``text`` (``span``'s, which need not be kept) links to a concept of the
        span's type: an exact KB name, a sieve-stack match, a name of a name-only type, or
        the best concept of its type in the dense search of its vector scored at least
        ``floor`` (the search's own scale, as ``link_score``).

        Why: a long form the detector did not keep decides its short form
        (:func:`~e2e_linker.collective.span_selection.keep_long_forms`) only as far as it
        names something the KB knows."""
        if self.is_name(text, span.type):
            return True
        if self.sieves is not None and self.sieves.match(text, span.type) is not None:
            return True
        if span.type in self.lexical_types:
            return bool(self.genes.name_only_ranking(text, span.type))
        found = self.index.link(span.vector[None].astype(np.float32), [span.type],
                                type_policy="filter")[0]
        return bool(found) and found[0][1] >= floor

    def dense_concepts(self, spans: Sequence[SpanPrediction], k: int) -> list[set[str]]:
        """Per span, the ``k`` best concepts of its type in the dense search of its vector
        (empty for a name-only type, which the index does not hold: not searched)."""
        searched = [s for s in spans if s.type not in self.lexical_types]
        found = iter(self.index.link(np.stack([s.vector for s in searched]).astype(np.float32),
                                     [s.type for s in searched], type_policy="filter")
                     if searched else ())
        return [set() if s.type in self.lexical_types else {cid for cid, _ in next(found)[:k]}
                for s in spans]

    def name_concepts(self, text: str, type_: str) -> list[str]:
        """The concepts of ``type_`` that ``text`` is an exact KB name of."""
        return self.names.lookup(text, type_) if self.names is not None else []

    def gene_named_chemicals(self, spans: Sequence[SpanPrediction], texts: Sequence[str]
                             ) -> list[SpanPrediction]:
        """``spans`` with each Chemical span whose text names a gene of some species
        (:meth:`GeneRanking.names_a_gene`) and no chemical but gene products retyped Gene,
        when genes are a name-only type here.

        Why: the type head calls many protein names chemicals ("ectodysplasin", "follicle
        stimulating hormone receptor"); such a span was dropped, as a Chemical linked to a
        gene product or as no chemical name at all, and its short form with it, though a gene
        name links it. Names of classes only ("cytokine") lost precision on every gene dev
        corpus (docs/decisions/0020-gene-named-chemicals.md)."""
        if GENE_TYPE not in self.lexical_types or self.names is None or self.concepts is None:
            return list(spans)
        out = []
        for span, text in zip(spans, texts, strict=True):
            if span.type == CHEMICAL_TYPE and all(
                    self.concepts[cid].gene_product
                    for cid in self.names.lookup(text, CHEMICAL_TYPE, only_type=True)) \
                    and self.genes.names_a_gene(text):
                span = dataclasses.replace(span, type=GENE_TYPE)
            out.append(span)
        return out

    @functools.cached_property
    def higher_taxa(self) -> frozenset[str] | None:
        """The taxa above a species, read by the ``higher_taxa`` step
        (:func:`~data_tools.kb_loaders.taxa_above_species`; None: the KB has no taxonomy, or
        the step is not declared).

        Why on first use: reading the taxonomy takes about half a second, which a load that
        annotates nothing (a server starting, ``Linker.load()``) should not pay."""
        return self._read_higher_taxa() if self._read_higher_taxa is not None else None

    def species_named_spans(self, spans: Sequence[SpanPrediction], texts: Sequence[str],
                            floor: float) -> list[SpanPrediction]:
        """``spans`` with each Chemical, Disease or Gene span scored above ``floor`` whose
        text is an exact KB name of a species and of no concept of its own type (for a Gene,
        of no gene of any species) retyped Species, when the KB holds species.

        Why: the type head calls many binomials of microbes, fungi and plants chemicals or
        diseases ("Thermohalobacter berrensis", "Venturia inaequalis"); such a span linked to
        no name of its type and was dropped at the gate, though the KB names it exactly as a
        species (docs/decisions/0049-species-named-spans.md)."""
        if self.names is None or SPECIES_TYPE not in self.lexical_types:
            return list(spans)
        out = []
        for span, text in zip(spans, texts, strict=True):
            if span.type in (CHEMICAL_TYPE, DISEASE_TYPE, GENE_TYPE) \
                    and span.mention_score > floor \
                    and self.names.lookup(text, SPECIES_TYPE, only_type=True) \
                    and not self.names.lookup(text, span.type, only_type=True) \
                    and not (span.type == GENE_TYPE and self.genes.names_a_gene(text)):
                span = dataclasses.replace(span, type=SPECIES_TYPE)
            out.append(span)
        return out

    def lexically_linked(self, spans: Sequence[SpanPrediction], texts: Sequence[str],
                         abbreviations: Sequence[DocumentAbbreviations]) -> list[bool]:
        """Per span, whether :meth:`link` would find its concept without dense search: an
        exact KB name, a short form defined in its document, or a sieve-stack step."""
        expansions = self.span_expansions(spans, texts, abbreviations) \
            if self.sieves is not None else {}

        def named(text: str, type_: str, found: dict[str, str] | None) -> bool:
            if self.is_name(text, type_):
                return True
            if self.sieves is not None and self.sieves.match(
                    text, type_, expand_mention(text, found) if found else None) is not None:
                return True
            # not a name (above): the name-only ranking is the written forms' (remembered)
            if type_ in self.lexical_types and self.genes.name_only_ranking(text, type_):
                return True
            return self.composite_ids(text, type_) is not None

        ends: dict[int, dict[int, list[tuple[int, str]]]] = {}  # doc → end → (start, text)
        for span, text in zip(spans, texts, strict=True):
            ends.setdefault(span.doc_index, {}).setdefault(span.end, []).append(
                (span.start, text))
        out = []
        for span, text in zip(spans, texts, strict=True):
            if span.type in self.lexical_types and too_short_for_a_gene(text):
                out.append(False)
                continue
            found = expansions.get(span.doc_index)
            ok = named(text, span.type, found)
            if not ok and self.resolve_abbreviations:
                abbr = abbreviations[span.doc_index].definitions.get(text)
                # a short form counts when its long form is named or detected, as
                # :meth:`link_short_forms` links it (short forms of undetected, unnamed things
                # were mostly junk: docs/decisions/0003-lexical-gate.md)
                ok = abbr is not None and (named(abbr.long, span.type, found) or any(
                    written_for(abbr, start, abbr.long_end, written)
                    for start, written in ends[span.doc_index].get(abbr.long_end, ())))
            out.append(ok)
        return out

    def link(self, spans: list[SpanPrediction], docs: Sequence[Document],
             abbreviations: Sequence[DocumentAbbreviations],
             explain: bool = False, species: Mapping[int, Sequence[str]] | None = None
             ) -> list[Annotation | None]:
        """One batched index search for all spans, then the name sieve, the sieve stack and
        short forms (or the text linker). ``species``: document index → the NCBI taxa its
        caller says it is about (``linker normalize --species``), first in its species order.

        ``explain`` adds to each annotation the :data:`EXPLAIN_TOP` best concepts of its dense
        ranking with their scores (the ``dense_candidates`` infon; with the text linker, its
        own candidates) beside the ``link_method`` infon that names the deciding step, so a
        curator can see why this concept; without it nothing is added, and the output is the
        same to the byte.

        Every span is searched, sieved or not: the sieve breaks ties between concepts that
        share a name by the dense ranking, and falls back to its own order when none of its
        concepts is in the top 64 — scoring only the sieve's concepts lost strict F1 on
        BC5CDR, so that shortcut is not taken.
        """
        if not spans:
            return []
        texts = [docs[s.doc_index].text_at(s.start, s.end) for s in spans]
        # a name-only span is ranked by its names; only the others are searched
        dense_rows = [k for k, s in enumerate(spans) if s.type not in self.lexical_types]
        ranked = [self.genes.name_only_ranking(text, span.type)
                  if span.type in self.lexical_types else []
                  for span, text in zip(spans, texts, strict=True)]
        if dense_rows:
            queries = np.stack([spans[k].vector for k in dense_rows]).astype(np.float32)
            found = self.index.link(queries, [spans[k].type for k in dense_rows])
            for k, dense in zip(dense_rows, found, strict=True):
                ranked[k] = dense
        span_taxa: list[list[str] | None] = [None] * len(spans)
        # each document's species order (the species it names first, then the cue words')
        preferred: dict[int, list[str]] = {}
        if self.taxa:
            doc_texts: dict[int, str] = {}
            doc_words: dict[int, str] = {}
            evidence: dict[int, DocumentSpecies] = {}
            inputs: dict[int, tuple[list[tuple[int, str]], list[str]]] | None = None
            given_species = species or {}
            links = self.species_links(spans, ranked) \
                if self.species_mentions or self.species_choice is not None else {}
            mentioned = self.mentioned_taxa(links) if self.species_mentions else {}
            taxa = self.taxa
            for k, span in enumerate(spans):
                if span.doc_index not in preferred:
                    doc_texts[span.doc_index] = docs[span.doc_index].text
                    order = mentioned_taxa_first(mentioned.get(span.doc_index, []),
                                                 document_taxa(doc_texts[span.doc_index]))
                    given = list(given_species.get(span.doc_index, ()))
                    preferred[span.doc_index] = [*given, *(t for t in order if t not in given)]
                if not any(cid in taxa for cid, _ in ranked[k]):
                    # no gene among its concepts (most dense rankings): the species steps
                    # below leave it as it is, and its species order is the document's
                    span_taxa[k] = list(preferred[span.doc_index])
                    continue
                if self.species_choice is not None and not given_species.get(span.doc_index):
                    # a caller's species (``linker normalize --species``) is an order, not
                    # evidence: the rule below keeps it first
                    if span.doc_index not in evidence:
                        if inputs is None:
                            inputs = self.species_inputs(spans, texts, links)
                        evidence[span.doc_index] = document_species(
                            doc_texts[span.doc_index], *inputs[span.doc_index],
                            preferred[span.doc_index], self.genes,
                            self.species_choice.text_prior(doc_texts[span.doc_index]))
                    span_taxa[k] = self.species_choice.order(
                        texts[k], doc_texts[span.doc_index], span.start, span.end, ranked[k],
                        evidence[span.doc_index], self.genes)
                else:
                    span_taxa[k] = self.genes.mention_species(
                        ranked[k], texts[k], doc_texts[span.doc_index], span.start,
                        span.end, preferred[span.doc_index])
                ranked[k] = self.genes.species_first(ranked[k], span_taxa[k])
                if span.type in self.lexical_types and len(ranked[k]) > 1:
                    if span.doc_index not in doc_words:
                        doc_words[span.doc_index] = document_words(doc_texts[span.doc_index])
                    ranked[k] = self.genes.named_in_document_first(
                        ranked[k], texts[k], doc_words[span.doc_index])
        expansions = self.span_expansions(spans, texts, abbreviations) \
            if self.sieves is not None else {}
        out: list[Annotation | None] = []
        for span, dense, text, taxa in zip(spans, ranked, texts, span_taxa, strict=True):
            cid, score, method = choose_concept(text, span.type, dense, self.names)
            if self.sieves is not None and method != "exact":
                found = expansions.get(span.doc_index)
                hit = self.sieves.match(text, span.type,
                                        expand_mention(text, found) if found else None)
                if hit is not None:
                    cid, method = hit
                    score = next((s for c, s in dense if c == cid), None)
            if span.type in self.lexical_types:
                score = None  # the name ranking's 0.0 is no similarity
            ids = [cid] if cid else []
            if method in ("dense", "none"):
                parts = self.composite_ids(text, span.type, taxa)
            else:
                parts = self.coordination_of_species(text, span.type, cid,
                                                     preferred.get(span.doc_index))
            if parts:
                ids, method, score = parts, "composite", None
            elif method == "dense" and span.type in self.lexical_types:
                # no dense search: GeneRanking.name_form_ranking decided
                method = "name_form"
            if len(ids) == 1 and taxa and span.type in self.lexical_types \
                    and (other := self.genes.ortholog(ids[0], taxa[0])) is not None:
                ids, method = [other], "ortholog"
            out.append(Annotation(
                start=span.start, end=span.end, text=text, type=span.type,
                concept_ids=ids,
                infons={"annotator": ANNOTATOR, "link_method": method},
                mention_score=round(span.mention_score, 4),
                link_score=None if score is None else round(score, 4),
            ))
        if explain:
            for ann, dense in zip(out, ranked, strict=True):
                ann.infons[CANDIDATES] = format_candidates(dense[:EXPLAIN_TOP])
        if self.text_linker is not None:
            self.link_by_text(spans, out, docs, abbreviations, explain)
        elif self.resolve_abbreviations:
            self.link_short_forms(spans, out, abbreviations)
        return out

    def composite_ids(self, text: str, type_: str, taxa: Sequence[str] | None = None
                      ) -> list[str] | None:
        """The concepts of a composite mention's parts, in the order written, when
        :func:`~e2e_linker.lexical.text_forms.composite_parts` splits ``text``, some part
        shares words the text writes once (an elliptical coordination) and every part is an
        exact KB name or a sieve-stack match of ``type_``; else None. Parts that name one
        concept give it once ("glomerular and tubular lesions" → nephropathy). A list of whole
        names ("ALL and NHL", "nausea, vomiting") is no composite: each is a span of its own.

        Why: "breast or ovarian cancer" is two concepts (both BC5CDR and NCBI disease link it
        ``D001943|D010051``), and one mean-pooled span vector can only find one of them; the
        parts are ordinary names. :meth:`link` asks only when no exact name or sieve linked
        the whole span: a whole name ("Duchenne and Becker muscular dystrophy") wins, as in
        the normalizer's composite policy "auto" (docs/decisions/0008-composites.md). That
        policy (:meth:`Normalizer._decide <e2e_linker.normalizer.normalizer.Normalizer._decide>`)
        compares scores instead, because its inputs differ in kind: the normalizer encodes and
        searches every part like the whole, while a detected span has one vector and its parts
        none, so here a part counts only as an exact name or a sieve match.

        A span of a name-only type is a composite only as numbered genes written together
        ("JNK1/2", "Notch1-4": :func:`~e2e_linker.lexical.gene_forms.coordinated_genes`), and
        only with :attr:`coordinated_genes` (the ``coordinated_genes`` step; ``composites``
        is the other types'); each part is then ranked as a whole span of that type is
        (:meth:`GeneRanking.name_only_ranking`, the species order ``taxa`` of the span). Why
        not the other coordinations for them: the gene corpora link "JNK1/2" to both genes,
        while a split of "p62/sequestosome 1" into names of two genes is one gene's two names
        (docs/decisions/0051-coordinated-genes.md).
        """
        lexical = type_ in self.lexical_types
        if not (self.coordinated_genes if lexical else self.composites):
            return None
        parts = coordinated_genes(text) if lexical else composite_parts(text)
        if not parts or all(part in text for part in parts) or (
                self.names is None and self.sieves is None):
            return None
        ids: list[str] = []
        for part in parts:
            if lexical:
                ranked = self.genes.name_only_ranking(part, type_)
                if self.taxa:
                    ranked = self.genes.species_first(ranked, taxa or ())
                found = [cid for cid, _ in ranked]
            else:
                found = self.names.lookup(part, type_) if self.names is not None else []
            cid = found[0] if found else None
            if cid is None and self.sieves is not None:
                hit = self.sieves.match(part, type_)
                cid = hit[0] if hit else None
            if cid is None:
                return None
            if cid not in ids:
                ids.append(cid)
        return ids

    def coordination_of_species(self, text: str, type_: str, whole: str | None,
                                taxa: Sequence[str] | None) -> list[str] | None:
        """The genes of the document's first species (``taxa``: its species order) a
        coordination of numbered genes names ("ERK1/2", "Mcm2-7":
        :func:`~e2e_linker.lexical.gene_forms.coordinated_genes`), each of them, when the gene
        its whole text names (``whole``) is of another species; else None.

        Why: some species' vocabularies hold the coordination itself as one gene's alias —
        the fly's gene_info lists "ERK1/2" for rolled, "MEK1/2" for Dsor1, "Mcm2-7" for Mcm2
        — so in a mouse or human abstract the whole text is an exact name of a fly gene, and
        the parts, which name the document's own genes, were never asked. A whole name of the
        document's species still wins ("Nkx2-5"), as in :meth:`composite_ids`
        (docs/decisions/0051-coordinated-genes.md)."""
        if (whole is None or type_ not in self.lexical_types or not taxa or not self.taxa
                or self.taxa.get(whole) in (None, taxa[0])):
            return None
        parts = self.composite_ids(text, type_, taxa)  # None unless a coordination
        if parts and all(self.taxa.get(part) == taxa[0] for part in parts):
            return parts
        return None

    def link_by_text(self, spans: Sequence[SpanPrediction],
                     annotations: list[Annotation | None], docs: Sequence[Document],
                     abbreviations: Sequence[DocumentAbbreviations],
                     explain: bool = False) -> None:
        """Relink every span with :attr:`text_linker`, in place.

        Each document goes to it as a bare view: its passages' text with only the detected
        spans, so abbreviations come from the whole text (the document's one scan) and the
        spans (as ``linker normalize`` reads them) and the input's own annotations are never
        touched. ``link_score`` becomes the text linker's (the normalizer's cosine, ≤ 1); the
        candidates list it writes is dropped, so the output carries the same infons as with
        collective linking, or with ``explain`` kept as the explanation's candidates (the
        ranking that decided).
        """
        views: dict[int, Document] = {}
        for span, ann in zip(spans, annotations, strict=True):
            if ann is None:
                continue
            if span.doc_index not in views:
                views[span.doc_index] = docs[span.doc_index].text_view()
            views[span.doc_index].add_annotation(ann)
        self.text_linker.normalize(list(views.values()),
                                   [abbreviations[d] for d in views])
        for ann in annotations:
            if ann is not None:
                found = ann.infons.pop("candidates", None)
                ann.infons.pop(CANDIDATES, None)
                if explain and found is not None:
                    ann.infons[CANDIDATES] = found
                ann.infons["link_method"] = "text"

    @staticmethod
    def span_expansions(spans: Sequence[SpanPrediction], texts: Sequence[str],
                        abbreviations: Sequence[DocumentAbbreviations]
                        ) -> dict[int, dict[str, str]]:
        """Short form → long form per document, from its scan and its detected spans (what
        the normalizer expands a mention with)."""
        by_doc: dict[int, list[tuple[str, str]]] = {}
        for span, text in zip(spans, texts, strict=True):
            by_doc.setdefault(span.doc_index, []).append((span.type, text))
        return {d: abbreviations[d].expansions(mentions) for d, mentions in by_doc.items()}

    def drop_unnamed_species(self, annotations: Sequence[Annotation | None],
                             spans: Sequence[SpanPrediction], docs: Sequence[Document]
                             ) -> list[Annotation | None]:
        """``annotations`` (one per span; None: dropped) without the spans of a name-only
        type linked to genes of a species their document does not name
        (:meth:`GeneRanking.of_unnamed_species`: a fly or yeast gene in an abstract that
        names neither)."""
        if not self.taxa:
            return list(annotations)
        named: dict[int, tuple[str, ...]] = {}
        out: list[Annotation | None] = []
        for ann, span in zip(annotations, spans, strict=True):
            if ann is not None and ann.type in self.lexical_types:
                if span.doc_index not in named:
                    named[span.doc_index] = document_taxa(docs[span.doc_index].text)
                if self.genes.of_unnamed_species(ann.concept_ids, named[span.doc_index]):
                    ann = None
            out.append(ann)
        return out

    def gene_product_named_as_gene(self, long_form: Annotation, short_form: Annotation
                                   ) -> bool:
        """Whether ``long_form`` is linked to a gene product (a protein MeSH files as a
        chemical) while its ``short_form`` is a span of a name-only type linked by its own
        names to a gene of some species ("mammalian target of rapamycin (mTOR)": the MeSH
        kinase class, and the MTOR gene).

        Why: a short form took its long form's concept and type, so such a short form became
        a Chemical linked to a gene product, and the rule after linking dropped both
        (docs/decisions/0013-gene-short-forms.md)."""
        if short_form.type not in self.lexical_types or not short_form.concept_ids \
                or self.concepts is None or self.taxa is None \
                or short_form.concept_ids[0] not in self.taxa:
            return False
        concept = self.concepts.get(long_form.concept_ids[0])
        return concept is not None and concept.gene_product and long_form.type != short_form.type

    def link_short_forms(self, spans: Sequence[SpanPrediction],
                         annotations: list[Annotation | None],
                         abbreviations: Sequence[DocumentAbbreviations]) -> None:
        """Give each short form the concept of its long form, defined in the same document.

        The long form's own prediction is used when one covers it (not a name kept beside its
        gene symbol, :class:`~e2e_linker.collective.gene_appositions.ApposedName`: that name
        takes the symbol's gene, not the other way round); otherwise the name sieve looks the
        long form up. Without either, the short form keeps its own link. A long
        form linked to a gene product whose short form a gene name links takes the short
        form's gene instead (:meth:`gene_product_named_as_gene`).
        """
        by_doc: dict[int, list[int]] = {}
        for k, span in enumerate(spans):
            by_doc.setdefault(span.doc_index, []).append(k)
        for doc_index, members in by_doc.items():
            defined = abbreviations[doc_index].definitions
            if not defined:
                continue
            for k in members:
                ann = annotations[k]
                abbr = defined.get(ann.text) if ann is not None else None
                if abbr is None:
                    continue
                source = next((annotations[m] for m in members if annotations[m] is not None
                               and not isinstance(spans[m], ApposedName)
                               and written_for(abbr, annotations[m].start, annotations[m].end,
                                               annotations[m].text)), None)
                if source is not None and source.concept_ids:
                    if self.gene_product_named_as_gene(source, ann):
                        # the long form names the gene its short form links by gene names
                        source.concept_ids, source.type = list(ann.concept_ids), ann.type
                        continue
                    ann.concept_ids = list(source.concept_ids)
                    ann.type = source.type
                elif self.names is not None:
                    found = self.names.lookup(abbr.long, ann.type)
                    if not found:
                        continue
                    ann.concept_ids = [found[0]]
                else:
                    continue
                ann.infons["link_method"] = "abbreviation"
                ann.infons["long_form"] = abbr.long
