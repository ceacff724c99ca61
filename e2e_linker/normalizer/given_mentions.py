"""Mentions found elsewhere linked against the annotate model's KB, with a "no match" answer:
the engine of ``linker normalize``, :meth:`e2e_linker.api.Linker.normalize` and
``POST /normalize``.

Why not the text normalizer alone: its KB (MeSH and MEDIC) holds no genes, so "BRCA1" typed
Gene came back as a disease concept and "IL-6" as a MeSH chemical, and every mention got a
link, nonsense too (issue 44). Now a mention of a type the annotate model links by its names
only (its ``lexical_types``: genes and species) is linked by that model's
:class:`~e2e_linker.collective.span_linking.SpanLinker`, exactly as ``linker annotate`` links a
detected span of that type: the KB names it is or is written like, ordered by species (the
document's, or one the caller gives), orthologs, short forms of the same document. A mention
of any other type goes to the text normalizer
(:class:`~e2e_linker.normalizer.normalizer.Normalizer`) as before, whose figures on BC5CDR and
NCBI disease this keeps (docs/results.md); below the NIL threshold, or when the link rests on
too little of the mention's spelling and its score is below a higher bar, its answer is "no
concept" (:meth:`~e2e_linker.normalizer.normalizer.Normalizer._decide`, rule 5). A gene no
name links gets no concept either.

Each annotation leaves with the record ``linker annotate`` writes
(:mod:`data_tools.formats.records`): namespaced IDs, the concept's name and, for a gene, its
species; the ``candidates`` infon lists the top concepts namespaced too (with the
normalizer's scores; a name-only link has none, so its candidates are IDs alone).

Every answer carries a ``confidence`` infon, in [0, 1]: for the text normalizer's answers
its :mod:`~e2e_linker.normalizer.confidence` (linked: that the concept is right; no concept:
1 − that for the best candidate); for a name-linked gene or species, the annotate model's own
confidence (:mod:`e2e_linker.collective.confidence`) for that link with its span taken as
certain (mention score 1, as the span linker is handed it). An answer without a candidate
has none, and says so by its absence: a gene no name links, or a mention the normalizer's
search found nothing for.

Both linkers are loaded on first need, so a file of diseases never loads the annotate model
and one of genes never the normalizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from data_tools.documents import Annotation, Document
from data_tools.formats.mentions_jsonl import (
    CANDIDATES,
    CONCEPT_NAME,
    CONFIDENCE,
    SPECIES,
    SPECIES_NAME,
)
from data_tools.formats.records import namespaced_candidates, namespaced_in, record_annotation
from data_tools.kb_loaders import GENE_TYPE, SPECIES_TYPE, TAXON_PREFIX
from data_tools.species import document_species
from e2e_linker.errors import UserError
from e2e_linker.normalizer.pools import TYPE_ALIASES

if TYPE_CHECKING:
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.normalizer.normalizer import Normalizer

#: the infon of a normalized annotation listing its top concepts (the normalizer's
#: ``ID|score;ID|score``, or a name-only link's ``ID;ID``)
NORMALIZE_CANDIDATES = "candidates"
#: the types annotate may link by name only: a mention of one loads the annotate model, which
#: then says whether it does (its ``lexical_types``)
NAME_LINKED_TYPES = frozenset({GENE_TYPE, SPECIES_TYPE})
#: an NCBI Taxonomy ID as a caller may write it: ``10090`` or ``NCBITaxon:10090``
TAXON_ID = re.compile(rf"(?:{re.escape(TAXON_PREFIX)})?(\d+)", re.IGNORECASE)
#: the record's infons, cleared before an annotation is linked again
RECORD_INFONS = (CONCEPT_NAME, SPECIES, SPECIES_NAME, NORMALIZE_CANDIDATES, CONFIDENCE)


def checked_threshold(value: float) -> float:
    """``value`` as a NIL threshold: a link score in [0, 1] (a :class:`UserError` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= value <= 1.0:
        raise UserError(f"the NIL threshold is a link score between 0 and 1 (0: every mention "
                        f"gets a concept), not {value!r}")
    return float(value)


def mention_type(ann: Annotation) -> str:
    """The KB type an annotation's corpus type means (NCBI's ``SpecificDisease`` is a
    ``Disease``: :data:`~e2e_linker.normalizer.pools.TYPE_ALIASES`)."""
    return TYPE_ALIASES.get(ann.type, ann.type)


class GivenMentionLinker:
    """Links given annotations in place: name-only types with ``annotator``'s span linker over
    its KB, the others with ``text_normalizer``; both are callables that load on first call
    (None: no annotate model, every mention goes to the normalizer). ``nil_threshold``: the
    normalizer's link score below which a mention gets no concept (0: none)."""

    def __init__(self, text_normalizer: Callable[[], Normalizer],
                 annotator: Callable[[], Annotator] | None, nil_threshold: float):
        self._load_normalizer = text_normalizer
        self._load_annotator = annotator
        self.nil_threshold = checked_threshold(nil_threshold)
        #: the text normalizer once a mention needed it (None before)
        self.normalizer: Normalizer | None = None
        self._annotator: Annotator | None = None
        self._taxa: dict[str, tuple[str, ...]] = {}
        #: how many annotations were linked, and how many of them got no concept
        self.linked = self.nil = 0

    def text_normalizer(self) -> Normalizer:
        """The text normalizer, loaded on the first call."""
        if self.normalizer is None:
            self.normalizer = self._load_normalizer()
        return self.normalizer

    def annotator(self) -> Annotator | None:
        """The annotate model's annotator, loaded on the first call (None: none given)."""
        if self._annotator is None and self._load_annotator is not None:
            self._annotator = self._load_annotator()
        return self._annotator

    def name_linked(self, annotator: Annotator | None, ann: Annotation) -> bool:
        """Whether ``annotator`` links ``ann``'s type by its names only."""
        return annotator is not None and mention_type(ann) in annotator.linker.lexical_types

    def taxa_of(self, species: str) -> tuple[str, ...]:
        """The NCBI taxa ``species`` names: an NCBI Taxonomy ID (``10090``,
        ``NCBITaxon:10090``), a word for a species the document rule knows ("mouse",
        "human": :func:`~data_tools.species.document_species`) or a species name of the
        annotate model's KB ("Rattus norvegicus"); a :class:`UserError` otherwise."""
        key = species.strip()
        if key in self._taxa:
            return self._taxa[key]
        found: tuple[str, ...] = ()
        if match := TAXON_ID.fullmatch(key):
            found = (match.group(1),)
        elif named := document_species(key):
            found = tuple(named)
        elif (annotator := self.annotator()) is not None:
            names = annotator.linker.names
            if names is not None:
                found = tuple(dict.fromkeys(
                    cid.removeprefix(TAXON_PREFIX) for cid in names.lookup(key, SPECIES_TYPE)
                    if cid.startswith(TAXON_PREFIX)))
        if not found:
            raise UserError(f"unknown species {species!r}: give an NCBI Taxonomy ID (9606, "
                            "NCBITaxon:10090) or a species name such as 'mouse'")
        self._taxa[key] = found
        return found

    def normalize(self, docs: Sequence[Document],
                  species: Sequence[str | None] | None = None,
                  nil_threshold: float | None = None) -> list[Document]:
        """Link every annotation of ``docs`` in place (also returned): concept IDs, link
        score, ``candidates`` and ``confidence`` infons and the record. ``species``: per
        document, the species its gene mentions are of as the caller writes it
        (:meth:`taxa_of`), put first in the order the document's text gives;
        ``nil_threshold``: this call's (None: this linker's)."""
        docs = list(docs)
        threshold = self.nil_threshold if nil_threshold is None \
            else checked_threshold(nil_threshold)
        annotator = None
        if self._load_annotator is not None and any(
                mention_type(a) in NAME_LINKED_TYPES for d in docs for a in d.annotations):
            annotator = self.annotator()
        by_name: list[tuple[int, Annotation]] = []
        by_text: list[tuple[int, Annotation]] = []
        for d, doc in enumerate(docs):
            for ann in doc.annotations:
                for key in RECORD_INFONS:
                    ann.infons.pop(key, None)
                (by_name if self.name_linked(annotator, ann) else by_text).append((d, ann))
        if by_name:
            given = {d: self.taxa_of(s) for d, s in enumerate(species or ()) if s}
            self.link_by_name(annotator, docs, by_name, given)
        if by_text:
            self.link_by_text(docs, by_text, threshold)
        self.linked += len(by_name) + len(by_text)
        self.nil += sum(not a.concept_ids for _, a in by_name + by_text)
        return docs

    @staticmethod
    def link_by_name(annotator: Annotator, docs: Sequence[Document],
                     found: Sequence[tuple[int, Annotation]],
                     species: dict[int, tuple[str, ...]]) -> None:
        """Link ``found`` (document index, annotation) with the annotator's span linker, as
        ``linker annotate`` links its spans of a name-only type (no dense vector is read for
        them), then fill their record from its KB and, for a linked one, the confidence the
        annotator gives that link (none for a gene no name links)."""
        from e2e_linker.collective.span_selection import SpanPrediction
        from e2e_linker.lexical.abbreviations import scan_documents

        empty = np.zeros(0, dtype=np.float32)
        spans = [SpanPrediction(d, ann.start, ann.end, 1.0, mention_type(ann), empty)
                 for d, ann in found]
        linked = annotator.linker.link(spans, docs, scan_documents(docs), explain=True,
                                       species=species)
        for (_, ann), result in zip(found, linked, strict=True):
            ann.concept_ids = list(result.concept_ids) if result is not None else []
            ann.no_id = False
            # a name is found or not: no similarity (a text linker's, with ``--linking text``)
            ann.link_score = result.link_score if result is not None else None
            ranked = result.infons.get(CANDIDATES, "") if result is not None else ""
            record_annotation(ann, annotator.kb)
            if ann.concept_ids:
                ann.infons[CONFIDENCE] = f"{annotator.confidence(result):.4f}"
            ann.infons[NORMALIZE_CANDIDATES] = ";".join(
                namespaced_in(annotator.kb, item.rpartition("|")[0])
                for item in ranked.split(";") if item)

    def link_by_text(self, docs: Sequence[Document], found: Sequence[tuple[int, Annotation]],
                     threshold: float) -> None:
        """Link ``found`` with the text normalizer, each document as a view holding only
        these annotations (the same objects, so the answers land in place; their confidence
        too), then fill their record from the normalizer's KB."""
        normalizer = self.text_normalizer()
        views: dict[int, Document] = {}
        for d, ann in found:
            if d not in views:
                views[d] = docs[d].text_view()
            views[d].add_annotation(ann)
        normalizer.normalize(list(views.values()), nil_threshold=threshold)
        for _, ann in found:
            ranked = ann.infons.get(NORMALIZE_CANDIDATES, "")
            record_annotation(ann, normalizer.kb)
            ann.infons[NORMALIZE_CANDIDATES] = namespaced_candidates(ranked, normalizer.kb)

