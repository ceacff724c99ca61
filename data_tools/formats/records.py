"""A linked annotation's record as it leaves the linker: namespaced concept IDs, the concept's
name and a gene's species.

Why one step: every door (``linker annotate``'s files, the Python API, ``linker serve``, the
spaCy component, the page) writes the annotations one call returns, so filling the record
once, where they leave the linker (:meth:`e2e_linker.collective.annotator.Annotator.annotate`),
makes every door show the same IDs, names and species. It runs after every pipeline step:
those compare IDs with the KB's keys, which this step replaces by the namespaced IDs
(:func:`~data_tools.formats.namespaces.namespaced_id`).

What it fills: ``concept_ids`` namespaced (``MESH:D013629``, ``NCBIGene:672``); the infon
:data:`~data_tools.formats.mentions_jsonl.CONCEPT_NAME` (the concept's preferred name, for a
mention of one concept); for a concept with a species (a gene: ``Concept.taxon``) the infons
:data:`~data_tools.formats.mentions_jsonl.SPECIES` (``NCBITaxon:9606``) and
:data:`~data_tools.formats.mentions_jsonl.SPECIES_NAME` (``Homo sapiens``, when the KB holds
the species); the explanation's candidates (``--explain``) namespaced too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from data_tools.documents import Annotation
from data_tools.formats.mentions_jsonl import CANDIDATES, CONCEPT_NAME, SPECIES, SPECIES_NAME
from data_tools.formats.namespaces import kb_key, namespaced_id
from data_tools.kb_loaders import species_id


def concept_name_in(kb: Any, concept_id: str | None) -> str | None:
    """The preferred name of ``concept_id`` (a KB key or a namespaced ID) in ``kb`` (a
    :class:`data_tools.kb.KB` or a compiled one); None for no KB, no ID, several IDs or an ID
    the KB does not hold."""
    if kb is None or not concept_id or "|" in concept_id:
        return None
    concept = kb.get(kb_key(concept_id))
    return (concept.name or None) if concept is not None else None


def namespaced_in(kb: Any, concept_id: str) -> str:
    """``concept_id``, a key of ``kb``, with its namespace (itself when the KB does not hold it:
    no source says which namespace it is in)."""
    concept = kb.get(kb_key(concept_id))
    return namespaced_id(concept_id, concept.type, concept.source) if concept is not None \
        else concept_id


def record_annotation(ann: Annotation, kb: Any) -> None:
    """Fill ``ann``'s record from ``kb``, in place (see the module docstring); nothing without
    a KB. Filling it again changes nothing."""
    if kb is None:
        return
    concepts = [kb.get(kb_key(cid)) for cid in ann.concept_ids]
    if len(concepts) == 1 and concepts[0] is not None and concepts[0].name:
        ann.infons[CONCEPT_NAME] = concepts[0].name
    taxa = list(dict.fromkeys(c.taxon for c in concepts if c is not None and c.taxon))
    if taxa:
        ann.infons[SPECIES] = "|".join(species_id(t) for t in taxa)
        species = [kb.get(species_id(t)) for t in taxa]
        if all(s is not None and s.name for s in species):
            ann.infons[SPECIES_NAME] = "|".join(s.name for s in species)
    ann.concept_ids = [namespaced_id(cid, c.type, c.source) if c is not None else cid
                       for cid, c in zip(ann.concept_ids, concepts, strict=True)]
    if ann.infons.get(CANDIDATES):
        ann.infons[CANDIDATES] = namespaced_candidates(ann.infons[CANDIDATES], kb)


def namespaced_candidates(ranked: str, kb: Any) -> str:
    """A candidates infon with every ID namespaced, the scores as written: the dense
    ranking's :data:`~data_tools.formats.mentions_jsonl.CANDIDATES` (``ID|score;...``) and
    the normalizer's ``candidates`` (``label|score;...``, a label of several IDs joined by
    ``|``, a composite's parts joined by `` || ``); an item without a score is kept as
    written."""
    def item(text: str) -> str:
        label, bar, score = text.rpartition("|")
        if not bar:
            return text
        return "|".join(namespaced_in(kb, cid) for cid in label.split("|")) + f"|{score}"

    return " || ".join(";".join(item(t) for t in part.split(";") if t)
                       for part in ranked.split(" || ")) if ranked else ""


def record_annotations(annotations: Iterable[Annotation | None], kb: Any) -> None:
    """:func:`record_annotation` on each annotation (None: one a pipeline step dropped)."""
    for ann in annotations:
        if ann is not None:
            record_annotation(ann, kb)
