"""Concept IDs with their namespace (``MESH:D013629``, ``NCBIGene:672``, ``NCBITaxon:10116``), and
back.

Why: the KB keys concepts as the vocabularies and corpora write them (MeSH ``D013629`` and NCBI
Gene ``672`` bare, MEDIC's ``OMIM:613162``, species ``NCBITaxon:10116``: see
:mod:`data_tools.kb_loaders`), and the linker's rule steps compare IDs with those keys. A reader
of the output cannot tell a bare ``672`` from a number of another vocabulary, so annotations
leave the linker with the prefixes PubTator3 and BERN2 write (:func:`namespaced_id`, applied by
:mod:`data_tools.formats.records`). :func:`kb_key` is its inverse (a namespaced ID looked up in
the KB) and :func:`comparable_id` the one form every prefix style compares in (``linker
score``: gold ``D013629`` equals ``MESH:D013629``, ``672`` equals ``NCBIGene:672``).
"""

from __future__ import annotations

import re

from data_tools.documents import strip_prefix
from data_tools.kb_loaders import CORPUS_SOURCE, GENE_TYPE, TAXON_PREFIX

MESH = "MESH:"
NCBI_GENE = "NCBIGene:"
NCBI_TAXON = TAXON_PREFIX
#: an ID that names its namespace already (``OMIM:613162``, ``NCBITaxon:9606``, ``CHEBI:15365``)
PREFIXED = re.compile(r"^[A-Za-z][\w.-]*:\S")
#: the KB sources (``Concept.source`` as :mod:`data_tools.kb_loaders` names them) whose keys
#: are bare IDs of one namespace; any other source's IDs (a user's ``tsv:`` KB, UMLS) are
#: written as the KB keys them
SOURCE_NAMESPACES = {"MeSH": MESH, "MeSH-SCR": MESH, "MEDIC": MESH,
                     "NCBI Gene": NCBI_GENE, "HGNC": NCBI_GENE, "HomoloGene": NCBI_GENE}
#: what a bare ID of each namespace looks like: a MeSH descriptor (``D`` + 6 digits) or
#: supplementary concept (``C`` + 6 or 9 digits), an NCBI Gene number
BARE_FORMS = {MESH: re.compile(r"[CD]\d{6}(?:\d{3})?"), NCBI_GENE: re.compile(r"\d+")}


def namespaced_id(key: str, type_: str = "", source: str = "") -> str:
    """The ID an annotation carries out of the linker for the KB key ``key`` of a concept of
    type ``type_`` from ``source``: ``D013629`` of MeSH (or MEDIC) → ``MESH:D013629``, ``672``
    of NCBI Gene (HGNC, HomoloGene) → ``NCBIGene:672``; an ID with a prefix (``OMIM:``,
    ``NCBITaxon:``) is kept, and so is the ID of any other source (a custom KB's IDs as its
    file wrote them).

    A name mined from a corpus (source :data:`~data_tools.kb_loaders.CORPUS_SOURCE`) keys its
    concept by the corpus's ID: a MeSH-formed one is MeSH, digits of a ``Gene`` are a gene."""
    key = key.strip()
    if PREFIXED.match(key):
        return key
    namespace = SOURCE_NAMESPACES.get(source)
    if namespace is None and source == CORPUS_SOURCE:
        namespace = MESH if BARE_FORMS[MESH].fullmatch(key) else \
            NCBI_GENE if type_ == GENE_TYPE else None
    if namespace is not None and BARE_FORMS[namespace].fullmatch(key):
        return namespace + key
    return key


def drop_namespace(concept_id: str, namespace: str) -> str:
    """``concept_id`` without the prefix ``namespace`` (any case), itself when it has none."""
    concept_id = concept_id.strip()
    if concept_id[:len(namespace)].lower() == namespace.lower():
        return concept_id[len(namespace):]
    return concept_id


def kb_key(concept_id: str) -> str:
    """The KB's key of an ID in any prefix style: the inverse of :func:`namespaced_id`
    (``MESH:`` and ``NCBIGene:`` removed; ``OMIM:`` and ``NCBITaxon:`` stay, as the KB keys
    them)."""
    return drop_namespace(strip_prefix(concept_id), NCBI_GENE)


def comparable_id(concept_id: str) -> str:
    """The one form IDs of every prefix style compare in: :func:`kb_key` without
    ``NCBITaxon:`` too, since PubTator files (PubTator3's and this linker's) write a species
    bare (``10116``) while the KB and BioC keep its namespace."""
    return drop_namespace(kb_key(concept_id), NCBI_TAXON)
