"""The species KB (issue 45): NCBI Taxonomy OBO + UniProt species list, keyed ``NCBITaxon:<id>``,
with genus abbreviations and the written forms mined from the training corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage
from data_tools.kb import KB, Concept
from data_tools.kb_loaders import (
    LOADERS,
    SPECIES_FORMS,
    genus_abbreviation,
    load_species,
    load_species_file,
    read_species_forms,
    read_taxonomy_obo,
    read_uniprot_speclist,
)
from data_tools.mine_species_forms import mine_species_forms, write_species_forms
from data_tools.registry import load_kb

_OBO = r"""format-version: 1.2
synonymtypedef: common_name "common name"
ontology: ncbitaxon/subsets/taxslim

[Term]
id: NCBITaxon:1
name: root
synonym: "all" RELATED synonym []

[Term]
id: NCBITaxon:10090
name: Mus musculus
namespace: ncbi_taxonomy
alt_id: NCBITaxon:85055
synonym: "house mouse" EXACT genbank_common_name []
synonym: "mouse" EXACT common_name []
is_a: NCBITaxon:862507 ! Mus <subgenus>
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:9606
name: Homo sapiens
synonym: "human" EXACT genbank_common_name []
is_a: NCBITaxon:9605 ! Homo
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:10088
name: Mus
synonym: "mice" EXACT common_name []
synonym: "rodent viruses" RELATED in_part []
synonym: "\"Mus\" Linnaeus 1758" RELATED synonym []
property_value: has_rank NCBITaxon:genus

[Term]
id: NCBITaxon:83333
name: Escherichia coli K-12
is_a: NCBITaxon:562 ! Escherichia coli
property_value: has_rank NCBITaxon:strain

[Term]
id: NCBITaxon:562
name: Escherichia coli
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:1069
name: Prochlorococcus marinus
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:7757
name: Petromyzon marinus
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:6239
name: Caenorhabditis elegans
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:10243
name: Cowpox virus
synonym: "CPXV" BROAD acronym []
property_value: has_rank NCBITaxon:species

[Term]
id: NCBITaxon:999
name: Obsoletus oldus
is_obsolete: true

[Typedef]
id: has_rank
name: has_rank
"""

_SPECLIST = """----------------------------------------------------------------------------
Description: Controlled vocabulary of species

Code    Taxon    N=Official (scientific) name
        Node     C=Common name
                 S=Synonym
_____ _ _______  ____________________________________________________________
MOUSE E   10090: N=Mus musculus
                 C=Mouse
MUSX  E   85055: N=Mus musculus (old ID)
                 S=Mus domesticus
RAT   E   10116: N=Rattus norvegicus
                 C=Rat
                 S=Rattus sp. strain Wistar
ECOLI B   83333: N=Escherichia coli (strain K12)
CYCEL E   99998: N=Cyclamen elegans
PETRX E   99997: N=Petromyzon fluviatilis

=======================
(2) "Virtual" codes
=======================

_____ _ _______  ____________________________________________________________
9ZZZZ X       1: N=root
9MUSX E   10088: N=Mus

-----------------------------------------------------------------------
Copyrighted by the UniProt Consortium
-----------------------------------------------------------------------
"""

_FORMS = ("# a provenance line\n# form\ttaxon\tdocuments\n"
          "patients\tNCBITaxon:9606\t149\nmice\tNCBITaxon:10090\t75\n"
          "women\t9606\t16\nzebrafish larvae\tNCBITaxon:7955\t3\n")


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    obo, speclist, forms = (tmp_path / "taxslim.obo", tmp_path / "speclist.txt",
                            tmp_path / "forms.tsv")
    obo.write_text(_OBO, encoding="utf-8")
    speclist.write_text(_SPECLIST, encoding="utf-8")
    forms.write_text(_FORMS, encoding="utf-8")
    return obo, speclist, forms


def test_obo_terms_ranks_parents_and_kept_synonyms(files):
    terms = {t.id: t for t in read_taxonomy_obo(files[0])}
    assert "999" not in terms and "has_rank" not in terms  # obsolete term, Typedef stanza
    mouse = terms["10090"]
    assert (mouse.rank, mouse.parent, mouse.alt_ids) == ("species", "862507", ["85055"])
    assert mouse.synonyms == ["house mouse", "mouse"]
    assert terms["10088"].synonyms == ["mice", '"Mus" Linnaeus 1758']  # in_part left out
    assert terms["10243"].synonyms == ["CPXV"]  # a BROAD acronym is still a name
    assert terms["83333"].rank == "strain" and terms["83333"].parent == "562"


def test_uniprot_speclist_skips_the_header_and_reads_both_sublists(files):
    entries = list(read_uniprot_speclist(files[1]))
    assert [e.taxon for e in entries] == ["10090", "85055", "10116", "83333", "99998", "99997",
                                          "1", "10088"]
    rat = entries[2]
    assert rat.name == "Rattus norvegicus" and rat.common == ["Rat"]
    assert rat.synonyms == ["Rattus sp. strain Wistar"] and rat.real
    assert not entries[-1].real  # a virtual code


def test_uniprot_speclist_without_its_underscore_line_is_an_error(tmp_path):
    path = tmp_path / "speclist.txt"
    path.write_text("MOUSE E   10090: N=Mus musculus\n", encoding="utf-8")
    with pytest.raises(FormatError, match="no species list"):
        list(read_uniprot_speclist(path))


def test_species_kb_ids_types_and_names(files):
    obo, speclist, forms = files
    kb = load_species(obo, speclist, forms)
    assert all(c.id.startswith("NCBITaxon:") and c.type == "Species" for c in kb)
    assert not any(c.taxon for c in kb)  # taxon is the gene concepts' species field
    assert "NCBITaxon:1" not in kb  # root ("all") left out, from both files
    mouse = kb.get("NCBITaxon:10090")
    assert mouse.name == "Mus musculus"
    # OBO synonyms, UniProt common name (same as 'mouse'), then the UniProt entry filed under
    # the OBO alt_id joins it; then the genus abbreviation and the mined plural
    assert mouse.all_names() == ["Mus musculus", "house mouse", "mouse",
                                 "Mus musculus (old ID)", "Mus domesticus", "M. musculus",
                                 "mice"]
    assert kb.resolve("NCBITaxon:85055") == "NCBITaxon:10090"
    rat = kb.get("NCBITaxon:10116")  # UniProt only: its N= name is preferred
    assert rat.all_names() == ["Rattus norvegicus", "Rat", "Rattus sp. strain Wistar",
                               "R. norvegicus"]  # a UniProt binomial is abbreviated too
    assert rat.source == "UniProt"
    strain = kb.get("NCBITaxon:83333")
    assert strain.all_names() == ["Escherichia coli K-12", "Escherichia coli (strain K12)"]
    human = kb.get("NCBITaxon:9606")
    assert human.all_names() == ["Homo sapiens", "human", "H. sapiens", "patients", "women"]
    assert "mice" in kb.get("NCBITaxon:10088").all_names()  # the genus keeps its own name
    assert "NCBITaxon:7955" not in kb  # a mined form of a taxon the KB lacks adds nothing
    assert "9606" not in kb  # never a bare number, which a gene ID may be


def test_genus_abbreviations(files):
    assert genus_abbreviation("Escherichia coli") == "E. coli"
    assert genus_abbreviation("Drosophila melanogaster") == "D. melanogaster"
    for not_binomial in ("Escherichia coli K-12", "Bacillus sp.", "Cowpox virus",
                         "Lassa mammarenavirus", "Mus", "escherichia coli"):
        assert genus_abbreviation(not_binomial) is None, not_binomial
    kb = load_species(files[0], forms_path=None)
    names = {n.lower(): c.id for c in kb for n in c.all_names()}
    assert names["e. coli"] == "NCBITaxon:562"
    assert "p. marinus" not in names  # two species abbreviate so: neither gets it
    assert "e. coli k-12" not in names and "c. virus" not in names  # strain, virus
    with_uniprot = load_species(files[0], files[1], forms_path=None)
    names = {n.lower(): c.id for c in with_uniprot for n in c.all_names()}
    # the OBO slim's species keeps its abbreviation against a UniProt-only species...
    assert names["c. elegans"] == "NCBITaxon:6239" and "NCBITaxon:99998" in with_uniprot
    # ...and a UniProt-only species takes one no other species has
    assert names["p. fluviatilis"] == "NCBITaxon:99997"
    assert "p. marinus" not in names and "m. musculus" in names


def test_species_forms_file_and_loader_spec(files):
    obo, speclist, forms = files
    assert read_species_forms(forms)["NCBITaxon:9606"] == ["patients", "women"]
    both = load_kb(f"species:{obo}+species:{speclist}")
    assert LOADERS["species"] is load_species_file
    assert both.get("NCBITaxon:10090").name == "Mus musculus"
    assert "NCBITaxon:10116" in both and both.get("NCBITaxon:562") is not None
    only_obo = load_species_file(obo)
    assert "NCBITaxon:10116" not in only_obo
    with pytest.raises(ValueError):
        load_species()


def _doc(doc_id: str, *mentions: tuple[str, str, str]) -> Document:
    text = " ".join(m[0] for m in mentions)
    doc = Document(doc_id, [Passage(0, text)])
    start = 0
    for mention, type_, cid in mentions:
        doc.add_annotation(Annotation(start, start + len(mention), mention, type_, [cid]))
        start += len(mention) + 1
    return doc


def test_mining_keeps_consistent_forms_of_three_documents(tmp_path):
    kb = KB([Concept("NCBITaxon:9606", "Homo sapiens", ["human"], "Species"),
             Concept("NCBITaxon:10090", "Mus musculus", ["mouse"], "Species"),
             Concept("NCBITaxon:10088", "Mus", ["mice"], "Species")])
    docs = [_doc("1", ("Patients", "OrganismTaxon", "9606"), ("mice", "Species", "10090"),
                 ("human", "Species", "9606"), ("hosts", "Species", "9606")),
            _doc("2", ("patients", "OrganismTaxon", "NCBITaxon:9606"),
                 ("mice", "Species", "NCBITaxon:10090"), ("hosts", "Species", "9606")),
            _doc("3", ("patients", "OrganismTaxon", "9606"), ("mice", "Species", "10090"),
                 ("hosts", "Species", "10090"), ("human", "Species", "9606")),
            _doc("4", ("patients", "Gene", "9606"), ("hosts", "Species", "9606"),
                 ("rabbits", "Species", "9986"), ("human", "Species", "9606"))]
    rows = mine_species_forms(docs, kb)
    # "patients": 3 documents as a species (written as most often); "mice": a name of the
    # genus, not yet of the mouse, which the corpora mean; "hosts": 3 documents, but only 3 of
    # its 4 (< 80 %) link human; "human": already a name; "rabbits": the KB lacks the taxon
    assert rows == [("mice", "NCBITaxon:10090", 3), ("patients", "NCBITaxon:9606", 3)]
    path = tmp_path / "forms.tsv"
    write_species_forms(rows, path)
    assert read_species_forms(path) == {"NCBITaxon:10090": ["mice"],
                                        "NCBITaxon:9606": ["patients"]}
    assert path.read_text().startswith("# written forms of species annotated in")


def _real_species_files() -> tuple[Path, Path]:
    from data_tools.registry import SPECIES_OBO, SPECIES_UNIPROT, vocab_path

    try:
        paths = vocab_path(*SPECIES_OBO), vocab_path(*SPECIES_UNIPROT)
    except FileNotFoundError:
        pytest.skip("no shared data folder (../shared/data or $E2E_LINKER_DATA)")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"species vocabularies not in the shared data: {', '.join(missing)}")
    return paths


def test_species_preset_on_the_real_files():
    _real_species_files()
    kb = load_kb("species")
    assert 30_000 < len(kb) < 40_000 and kb.types() == ["Species"]
    assert all(c.id.startswith("NCBITaxon:") for c in kb)
    names = {}
    for concept in kb:
        for name in concept.all_names():
            names.setdefault(name.lower(), set()).add(concept.id)
    for form, cid in [("homo sapiens", "9606"), ("human", "9606"), ("patients", "9606"),
                      ("women", "9606"), ("mouse", "10090"), ("mice", "10090"),
                      ("murine", "10090"), ("rats", "10116"), ("e. coli", "562"),
                      ("c. elegans", "6239"), ("s. cerevisiae", "4932"),
                      ("baker's yeast", "559292")]:
        assert f"NCBITaxon:{cid}" in names.get(form, set()), form
    assert kb.resolve("NCBITaxon:85055") == "NCBITaxon:10090"
    assert "all" not in names and "NCBITaxon:1" not in kb
    # every mined form belongs to a taxon of the KB
    assert set(read_species_forms(SPECIES_FORMS)) <= set(kb.concepts)


def test_species_form_taxa_read_the_forms_by_written_form(files):
    from data_tools.kb_loaders import species_form_taxa

    _, _, forms = files
    assert species_form_taxa(forms)["patients"] == ["NCBITaxon:9606"]
    assert species_form_taxa()["yeast"] == ["NCBITaxon:4932"]  # the shipped file


def test_the_taxa_above_a_species_are_the_ancestors_of_species_ranked_taxa(files):
    """Subgenus Mus and genus Homo are above a species (each holds one); E. coli K-12 is a
    strain below its species; genus Mus names no species under it in this tree, so the tree
    says nothing of it; which files of a spec are the taxonomy."""
    from data_tools.kb_loaders import taxa_above_species
    from data_tools.registry import taxonomy_files

    obo, speclist, _ = files
    assert taxa_above_species(str(obo)) == {"NCBITaxon:862507", "NCBITaxon:9605"}
    assert taxonomy_files(f"species:{obo}+species:{speclist}") == [obo]
    assert taxonomy_files(f"species:{speclist}") == []
    assert taxonomy_files("bc5cdr") == []
