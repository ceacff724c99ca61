"""The record of a linked annotation (:mod:`data_tools.formats.records`): namespaced IDs, the
concept's name, a gene's species and its name, the explanation's candidates; and what each
writer makes of it."""

from __future__ import annotations

import io
import json

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats import read_documents, write_documents
from data_tools.formats.mentions_jsonl import (
    CANDIDATES,
    CONCEPT_NAME,
    SPECIES,
    SPECIES_NAME,
    MentionJSONLWriter,
)
from data_tools.formats.records import (
    concept_name_in,
    namespaced_candidates,
    record_annotation,
    record_annotations,
)
from data_tools.kb import KB, Concept


def kb() -> KB:
    return KB([Concept("D013629", "Tacrine", [], "Chemical", "MeSH"),
               Concept("672", "BRCA1", ["RNF53"], "Gene", "NCBI Gene", ["HGNC:1100"], "9606"),
               Concept("497672", "Brca1", [], "Gene", "HomoloGene", taxon="10116"),
               Concept("99999", "Gene9", [], "Gene", "HomoloGene", taxon="7955"),
               Concept("NCBITaxon:9606", "Homo sapiens", ["human"], "Species", "NCBI Taxonomy"),
               Concept("NCBITaxon:10116", "Rattus norvegicus", [], "Species", "NCBI Taxonomy"),
               Concept("OMIM:613162", "Some syndrome", [], "Disease", "MEDIC"),
               Concept("X1", "mine", [], "Chemical", "tsv")])


def linked(ids: list[str], type_: str = "Gene", **infons: str) -> Annotation:
    return Annotation(0, 5, "BRCA1", type_, list(ids),
                      infons={"annotator": "e2e_linker", **infons})


def test_a_gene_gets_its_namespace_name_and_species():
    ann = linked(["672"])
    record_annotation(ann, kb())
    assert ann.concept_ids == ["NCBIGene:672"]
    assert ann.infons[CONCEPT_NAME] == "BRCA1"
    assert ann.infons[SPECIES] == "NCBITaxon:9606"
    assert ann.infons[SPECIES_NAME] == "Homo sapiens"


def test_other_concepts_get_their_namespace_and_name_and_no_species():
    for key, expected, name in (("D013629", "MESH:D013629", "Tacrine"),
                                ("OMIM:613162", "OMIM:613162", "Some syndrome"),
                                ("NCBITaxon:10116", "NCBITaxon:10116", "Rattus norvegicus"),
                                ("X1", "X1", "mine")):
        ann = linked([key], "Chemical")
        record_annotation(ann, kb())
        assert ann.concept_ids == [expected] and ann.infons[CONCEPT_NAME] == name
        assert SPECIES not in ann.infons and SPECIES_NAME not in ann.infons


def test_composites_species_the_kb_lacks_and_unknown_ids():
    both = linked(["672", "497672"])
    record_annotation(both, kb())
    assert both.concept_ids == ["NCBIGene:672", "NCBIGene:497672"]
    assert CONCEPT_NAME not in both.infons  # several concepts: no one name
    assert both.infons[SPECIES] == "NCBITaxon:9606|NCBITaxon:10116"
    assert both.infons[SPECIES_NAME] == "Homo sapiens|Rattus norvegicus"
    fish = linked(["99999"])
    record_annotation(fish, kb())
    assert fish.infons[SPECIES] == "NCBITaxon:7955" and SPECIES_NAME not in fish.infons
    unknown = linked(["12345"])
    record_annotation(unknown, kb())
    assert unknown.concept_ids == ["12345"] and set(unknown.infons) == {"annotator"}
    none = linked([])
    record_annotation(none, kb())
    assert none.concept_ids == [] and set(none.infons) == {"annotator"}


def test_without_a_kb_nothing_changes_and_a_second_pass_changes_nothing():
    ann = linked(["672"])
    record_annotation(ann, None)
    assert ann.concept_ids == ["672"] and set(ann.infons) == {"annotator"}
    record_annotation(ann, kb())
    once = (list(ann.concept_ids), dict(ann.infons))
    record_annotation(ann, kb())
    assert (ann.concept_ids, ann.infons) == once
    kept = [linked(["D013629"]), None]
    record_annotations(kept, kb())
    assert kept[0].concept_ids == ["MESH:D013629"] and kept[1] is None


def test_the_explanations_candidates_are_namespaced_with_their_scores_as_written():
    ann = linked(["672"], **{CANDIDATES: "672|0.9100;497672|0.8000;12345|0.1;odd"})
    record_annotation(ann, kb())
    assert ann.infons[CANDIDATES] == \
        "NCBIGene:672|0.9100;NCBIGene:497672|0.8000;12345|0.1;odd"


def test_concept_names_by_key_or_namespaced_id():
    knowledge = kb()
    assert concept_name_in(knowledge, "672") == concept_name_in(knowledge, "NCBIGene:672") \
        == "BRCA1"
    assert concept_name_in(knowledge, "MESH:D013629") == "Tacrine"
    assert concept_name_in(knowledge, "HGNC:1100") == "BRCA1"  # an alternative ID
    assert concept_name_in(knowledge, "672|D013629") is None
    assert concept_name_in(knowledge, "nope") is None and concept_name_in(None, "672") is None
    assert concept_name_in(knowledge, None) is None


def _document(ann: Annotation) -> Document:
    return Document("1", [Passage(0, "BRCA1 in rats.", {"type": "title"}, [ann])])


def test_the_record_reaches_json_lines_and_bioc(tmp_path):
    ann = linked(["672"])
    record_annotation(ann, kb())
    out = io.StringIO()
    MentionJSONLWriter(out).write(_document(ann))
    row = json.loads(out.getvalue())
    assert (row["concept_id"], row["concept_name"], row["species"], row["species_name"]) == \
        ("NCBIGene:672", "BRCA1", "NCBITaxon:9606", "Homo sapiens")
    unnamed = io.StringIO()
    MentionJSONLWriter(unnamed).write(_document(linked(["12345"])))
    assert not {"concept_name", "species", "species_name"} & set(json.loads(unnamed.getvalue()))
    for name in ("out.xml", "out.json"):
        write_documents([_document(ann)], tmp_path / name)
        [back] = list(read_documents(tmp_path / name))
        infons = back.annotations[0].infons
        assert back.annotations[0].concept_ids == ["NCBIGene:672"]
        assert infons["identifier"] == "NCBIGene:672" and infons[CONCEPT_NAME] == "BRCA1"
        assert (infons[SPECIES], infons[SPECIES_NAME]) == ("NCBITaxon:9606", "Homo sapiens")


def test_the_normalizers_candidates_are_namespaced_composites_too():
    kb = KB([Concept("D001943", "Breast Neoplasms", [], "Disease", "MeSH"),
             Concept("D010051", "Ovarian Neoplasms", [], "Disease", "MeSH")])
    assert namespaced_candidates("D001943|0.9000;X1|0.5000 || D010051|0.8000", kb) == \
        "MESH:D001943|0.9000;X1|0.5000 || MESH:D010051|0.8000"
    assert namespaced_candidates("D001943|D010051|1.0000", kb) == \
        "MESH:D001943|MESH:D010051|1.0000"
    assert namespaced_candidates("", kb) == ""
