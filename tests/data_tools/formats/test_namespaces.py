"""Concept IDs with their namespace and back: :mod:`data_tools.formats.namespaces` on each KB
source's keys, on the loaders' own output, and the inverse forms."""

from __future__ import annotations

import gzip

import pytest

from data_tools.formats.namespaces import (
    SOURCE_NAMESPACES,
    comparable_id,
    kb_key,
    namespaced_id,
)
from data_tools.kb_loaders import (
    CORPUS_SOURCE,
    load_gene_info,
    load_hgnc,
    load_homologene,
    load_medic,
    load_mesh_descriptors,
    load_mesh_supplementary,
    load_species,
    load_tsv,
)


@pytest.mark.parametrize("key, type_, source, expected", [
    ("D013629", "Chemical", "MeSH", "MESH:D013629"),
    ("C065179", "Chemical", "MeSH-SCR", "MESH:C065179"),
    ("C000657245", "Chemical", "MeSH-SCR", "MESH:C000657245"),  # a 9-digit SCR
    ("D003920", "Disease", "MEDIC", "MESH:D003920"),
    ("OMIM:613162", "Disease", "MEDIC", "OMIM:613162"),  # a prefix is kept
    ("672", "Gene", "NCBI Gene", "NCBIGene:672"),
    ("7157", "Gene", "HGNC", "NCBIGene:7157"),
    ("24842", "Gene", "HomoloGene", "NCBIGene:24842"),
    ("NCBITaxon:10116", "Species", "NCBI Taxonomy", "NCBITaxon:10116"),
    ("NCBITaxon:10116", "Species", "UniProt", "NCBITaxon:10116"),
    ("MESH:D013629", "Chemical", "MeSH", "MESH:D013629"),  # already namespaced
    (" D013629 ", "Chemical", "MeSH", "MESH:D013629"),
    # mined from a corpus: the corpus's IDs, MeSH-formed or a gene's digits
    ("D006973", "Disease", CORPUS_SOURCE, "MESH:D006973"),
    ("D006973", "SpecificDisease", CORPUS_SOURCE, "MESH:D006973"),
    ("10434", "Gene", CORPUS_SOURCE, "NCBIGene:10434"),
    ("10434", "Chemical", CORPUS_SOURCE, "10434"),
    # a custom KB's IDs as its file wrote them, whatever they look like
    ("D000001", "Chemical", "tsv", "D000001"),
    ("672", "Gene", "tsv", "672"),
    ("C0011849", "T047", "UMLS", "C0011849"),
    ("SYN0000001", "Chemical", "test", "SYN0000001"),
    ("D013629", "Chemical", "", "D013629"),
    # a source's key not of its namespace's form is not given the namespace
    ("X1", "Chemical", "MeSH", "X1"),
    ("ABC", "Gene", "NCBI Gene", "ABC"),
])
def test_namespaced_ids_by_source(key, type_, source, expected):
    assert namespaced_id(key, type_, source) == expected


def test_the_inverse_forms():
    for key in ("D013629", "C065179", "672", "OMIM:613162", "NCBITaxon:10116", "X1"):
        for source in ("MeSH", "NCBI Gene", "MEDIC", "tsv"):
            assert kb_key(namespaced_id(key, "", source)) == key
    assert kb_key("mesh:D1") == "D1" and kb_key("ncbigene:672") == "672"
    assert kb_key("NCBITaxon:9606") == "NCBITaxon:9606"  # the KB keys species so
    assert comparable_id("NCBITaxon:9606") == comparable_id("9606") == "9606"
    assert comparable_id("MESH:D013629") == comparable_id("D013629") == "D013629"
    assert comparable_id("NCBIGene:672") == comparable_id(" 672 ") == "672"
    assert comparable_id("OMIM:613162") == "OMIM:613162" != comparable_id("613162")


def _write(path, text: str, gz: bool = False) -> str:
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_each_loader_names_its_source_as_the_table_does(tmp_path):
    """The table keys on ``Concept.source`` as the loaders write it: a loader renaming its
    source would leave its IDs bare without this failing."""
    gene_row = "\t".join(["9606", "672", "BRCA1", "-", "RNF53", "-", "-", "-",
                          "BRCA1 DNA repair", "protein-coding", "-", "-", "-", "-", "-", "-"])
    kbs = {
        "MEDIC": load_medic(_write(tmp_path / "medic.txt", "MESH:D003920|OMIM:1||Diabetes\n")),
        "MeSH": load_mesh_descriptors(_write(tmp_path / "desc.tsv",
                                             "D013629\tTacrine\t\tD03.1\n")),
        "MeSH-SCR": load_mesh_supplementary(_write(tmp_path / "supp.tsv",
                                                   "C065179\tSomething\t\tD013629\n")),
        "NCBI Gene": load_gene_info(_write(tmp_path / "gene_info", gene_row + "\n")),
        "HGNC": load_hgnc(_write(tmp_path / "hgnc.txt",
                                 "hgnc_id\tsymbol\tname\talias_symbol\talias_name\tprev_symbol\t"
                                 "prev_name\tentrez_id\nHGNC:1100\tBRCA1\tBRCA1 DNA repair\t"
                                 "\t\t\t\t672\n")),
        "HomoloGene": load_homologene(_write(tmp_path / "homologene.tsv.gz",
                                             "HID\tGene.Symbol\tTaxonomy\tGene.ID\n"
                                             "1\tBrca1\t10116\t497672\n", gz=True)),
    }
    for source, kb in kbs.items():
        [concept] = list(kb)
        assert concept.source == source
        assert namespaced_id(concept.id, concept.type, concept.source) == \
            SOURCE_NAMESPACES[source] + concept.id.removeprefix("MESH:")
    assert set(kbs) == set(SOURCE_NAMESPACES)
    species = load_species(obo_path=_write(tmp_path / "taxslim.obo",
                                           "format-version: 1.2\n\n[Term]\nid: NCBITaxon:10116\n"
                                           "name: Rattus norvegicus\n"), forms_path=None)
    [rat] = list(species)
    assert namespaced_id(rat.id, rat.type, rat.source) == "NCBITaxon:10116"
    custom = load_tsv(_write(tmp_path / "own.tsv", "D000001\taspirin\n"))
    [own] = list(custom)
    assert namespaced_id(own.id, own.type, own.source) == "D000001"
