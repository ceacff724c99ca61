"""A KB file whose concepts come from the real vocabularies' sources (MeSH chemicals, NCBI Gene
rat genes with their taxon, the rat in NCBI Taxonomy), for the doors' tests of the linker's
record: namespaced IDs, names and a gene's species (``--kb kb:FILE`` with the tiny model)."""

from __future__ import annotations

from pathlib import Path

from data_tools.kb import KB, Concept

#: what a gene of this KB's record holds
RAT, RAT_NAME = "NCBITaxon:10116", "Rattus norvegicus"


def namespaced_kb() -> KB:
    """Chemicals of MeSH and rat genes of NCBI Gene, and no disease: the tiny model's Disease
    spans link to the nearest concept of another type, some of them genes."""
    return KB([Concept("D001241", "aspirin", ["acetylsalicylic acid"], "Chemical", "MeSH"),
               Concept("D007052", "ibuprofen", [], "Chemical", "MeSH"),
               Concept("C065179", "cisplatin analog", [], "Chemical", "MeSH-SCR"),
               *(Concept(str(24490 + n), name, [], "Gene", "NCBI Gene", taxon="10116")
                 for n, name in enumerate(("Il6", "Tnf", "Ren1", "Nos2", "Hdc", "Drd2"))),
               Concept(RAT, RAT_NAME, ["rats"], "Species", "NCBI Taxonomy")])


def namespaced_kb_spec(directory: Path) -> str:
    """:func:`namespaced_kb` saved in ``directory``, as a ``--kb`` spec."""
    path = directory / "namespaced.kb"
    namespaced_kb().save(path)
    return f"kb:{path}"
