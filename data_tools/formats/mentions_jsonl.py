"""Mentions as JSON Lines: one object per annotation, for tools that want mentions, not
documents (``linker annotate --format jsonl``).

Each line holds ``document``, ``start``, ``end``, ``text``, ``type``, ``concept_id`` (IDs
joined with ``|``, namespaced as :mod:`data_tools.formats.namespaces` says: ``MESH:D013629``,
``NCBIGene:672``; null when none), ``concept_name`` (only when known: the annotation's
``concept_name`` infon, which the linker fills from its KB: :mod:`data_tools.formats.records`),
for a gene ``species`` (its NCBI Taxonomy ID, ``NCBITaxon:9606``) and ``species_name``
(``Homo sapiens``, when the KB holds the species), ``mention_score`` and ``link_score`` (null
when the annotation has none), ``confidence`` (the linker's estimate, in [0, 1], that span,
type and concept are all right: the ``confidence`` infon, which the linker fills for every
annotation it writes, :mod:`e2e_linker.collective.confidence`; null only for an annotation
the linker did not write), then, only for an annotation that carries
its explanation (``linker annotate --explain``), ``explanation``: the ``step`` that decided its
concept (the ``link_method`` infon: ``exact``, ``dense``, ``abbreviation``, a sieve step such as
``training`` or ``compact_key``, ``text``), the ``long_form`` a short form took its concept
from, and ``candidates``: the dense ranking's top concepts with their scores. Offsets are the
document's character offsets. The format is written only: it drops the text around the
mentions, so it cannot be read back as a corpus (BioC JSON Lines, ``.jsonl``, is the lossless
one).
"""

from __future__ import annotations

import json
from typing import IO

from data_tools.documents import Annotation, Document

#: the annotation infon the writer takes a concept's name from
CONCEPT_NAME = "concept_name"
#: the infons of a gene's species: its NCBI Taxonomy ID (``NCBITaxon:9606``) and name
SPECIES = "species"
SPECIES_NAME = "species_name"
#: the infon holding an annotation's confidence, in [0, 1] (e2e_linker.collective.confidence)
CONFIDENCE = "confidence"
#: the infon naming the step that decided an annotation's concept
LINK_METHOD = "link_method"
#: the infon holding a short form's long form, when the short form took its concept
LONG_FORM = "long_form"
#: the ``annotator`` infon value that marks the annotations e2e_linker predicted
ANNOTATOR = "e2e_linker"
#: the infon of an explained annotation: its top dense candidates, ``ID|score;ID|score``
CANDIDATES = "dense_candidates"


def format_candidates(ranked: list[tuple[str, float]]) -> str:
    """``[(concept ID, score), ...]`` as the :data:`CANDIDATES` infon holds it (scores to 4
    places, as ``link_score``)."""
    return ";".join(f"{cid}|{score:.4f}" for cid, score in ranked)


def explanation_of(ann: Annotation) -> dict | None:
    """Why ``ann`` got its concept: ``{"step", "long_form"?, "candidates": [{"concept_id",
    "score"}, ...]}``, or None for an annotation written without ``--explain``.

    Why from infons: the explanation travels with the annotation through every format (BioC
    keeps it as two infons), and this one reader serves the JSON Lines writer and the page."""
    found = ann.infons.get(CANDIDATES)
    if found is None:
        return None
    candidates = []
    for item in filter(None, found.split(";")):
        cid, _, score = item.rpartition("|")
        try:
            candidates.append({"concept_id": cid, "score": float(score)})
        except ValueError:  # not written by format_candidates: kept, unscored
            candidates.append({"concept_id": item, "score": None})
    out: dict = {"step": ann.infons.get(LINK_METHOD)}
    if ann.infons.get(LONG_FORM):
        out["long_form"] = ann.infons[LONG_FORM]
    out["candidates"] = candidates
    return out


def confidence_of(ann: Annotation) -> float | None:
    """The annotation's :data:`CONFIDENCE` infon as a number (None: the linker did not write
    the annotation, or the infon is not a number)."""
    try:
        return float(ann.infons[CONFIDENCE])
    except (KeyError, ValueError):
        return None


def mention_records(doc: Document) -> list[dict]:
    """The JSON objects of a document's annotations, in offset order as stored."""
    records = []
    for ann in doc.annotations:
        record: dict = {"document": doc.id, "start": ann.start, "end": ann.end,
                        "text": ann.text, "type": ann.type,
                        "concept_id": "|".join(ann.concept_ids) or None}
        for key in (CONCEPT_NAME, SPECIES, SPECIES_NAME):  # only when known
            if ann.infons.get(key):
                record[key] = ann.infons[key]
        record["mention_score"] = ann.mention_score
        record["link_score"] = ann.link_score
        record["confidence"] = confidence_of(ann)
        explanation = explanation_of(ann)
        if explanation is not None:
            record["explanation"] = explanation
        records.append(record)
    return records


class MentionJSONLWriter:
    """Streams :func:`mention_records` to a text handle, one compact JSON object a line
    (non-ASCII kept as is, so ``text`` reads as in the document)."""

    def __init__(self, handle: IO[str]):
        self.handle = handle

    def write(self, doc: Document) -> None:
        for record in mention_records(doc):
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def close(self) -> None:
        self.handle.flush()
