"""Whether the vocabulary of the default model's KB holds a concept ID: what the checks of the
shipped mined names and replaced-ID table hold them to.

Why not ``load_kb`` of the default spec: merging its ~750k concepts into one KB takes most of a
minute on a busy machine. Here each vocabulary file is read by its own loader, as the
``bc5cdr_genes_species`` preset reads it (:mod:`data_tools.registry`), only when an ID of its
namespace is asked for, once a session, and an ID is looked up file by file.
:func:`reads_the_default_kbs_files` guards the list: a preset that reads another file fails it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from data_tools.kb import KB
from data_tools.kb_loaders import (
    load_gene_info,
    load_hgnc,
    load_homologene,
    load_medic,
    load_mesh_descriptors,
    load_mesh_supplementary,
)
from data_tools.registry import (
    GENE_INFO,
    GENE_SKIP_TYPES,
    HGNC,
    HOMOLOGENE,
    MEDIC,
    MESH_DESC,
    MESH_SUPP,
    PRESET_FILES,
    load_kb,
    vocab_path,
)

DEFAULT_SPEC = "bc5cdr_genes_species"
_MESH = re.compile(r"[CD]\d{6}(?:\d{3})?")

#: (the vocabulary files a loader reads, the loader as the default KB calls it), by the
#: namespace of the IDs they key
SOURCES: dict[str, list[tuple[tuple[tuple[str, ...], ...], Callable[[], KB]]]] = {
    "mesh": [((MEDIC,), lambda: load_medic(vocab_path(*MEDIC))),
             ((MESH_DESC,), lambda: load_mesh_descriptors(vocab_path(*MESH_DESC), trees="CD")),
             ((MESH_SUPP,), lambda: load_mesh_supplementary(vocab_path(*MESH_SUPP)))],
    "gene": [*(((("genes", name),), functools.partial(
                   load_gene_info, vocab_path("genes", name), taxa=taxa,
                   skip_types=GENE_SKIP_TYPES)) for name, taxa in GENE_INFO),
             ((HGNC,), lambda: load_hgnc(vocab_path(*HGNC))),
             ((HOMOLOGENE,), lambda: load_homologene(vocab_path(*HOMOLOGENE)))],
    "taxon": [(PRESET_FILES["species"], lambda: load_kb("species"))],
}


def reads_the_default_kbs_files() -> bool:
    """Whether :data:`SOURCES` read exactly the files the default KB reads."""
    listed = {f for sources in SOURCES.values() for files, _ in sources for f in files}
    return listed == set(PRESET_FILES[DEFAULT_SPEC])


def namespace_of(concept_id: str) -> str:
    """``mesh`` (a MeSH ID, or MEDIC's ``OMIM:``), ``gene`` or ``taxon``; ``other`` for an ID
    no vocabulary of the default KB keys."""
    if _MESH.fullmatch(concept_id) or concept_id.startswith("OMIM:"):
        return "mesh"
    if concept_id.startswith("NCBITaxon:"):
        return "taxon"
    return "gene" if concept_id.isdigit() else "other"


@functools.cache
def _loaded(namespace: str, index: int) -> KB:
    return SOURCES[namespace][index][1]()


def held(concept_id: str) -> bool:
    """Whether a vocabulary file of the default KB holds ``concept_id`` (as a primary or an
    alternative ID)."""
    namespace = namespace_of(concept_id)
    return any(concept_id in _loaded(namespace, i) for i in range(len(SOURCES.get(namespace, ()))))
