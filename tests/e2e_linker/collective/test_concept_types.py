"""take_concept_types, drop_gene_products and drop_no_single_gene (formerly
ConceptTypeRules): a linked span's type settled against its concept's."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation
from data_tools.kb import KB, Concept
from e2e_linker.collective.concept_types import (
    concept_of,
    drop_gene_products,
    drop_no_single_gene,
    take_concept_types,
)

TYPES = ("Chemical", "Disease")


@pytest.fixture()
def kb() -> KB:
    return KB([Concept("D010001", "Osteitis Deformans", ["PDB"], "Disease"),
               Concept("C051615", "transgelin", [], "Chemical", gene_product=True),
               Concept("D015738", "Famotidine", [], "Chemical"),
               Concept("D000001", "Both", [], "Chemical|Disease"),
               Concept("1234", "TP53", [], "Gene", taxon="9606")])


def linked(text: str, type_: str, cid: str | None) -> Annotation:
    return Annotation(0, len(text), text, type_, [cid] if cid else [])


def all_rules(annotations, kb, model_types) -> list[Annotation | None]:
    """The three rules in the order the default pipeline runs them, on a copy of the list."""
    out = list(annotations)
    take_concept_types(out, kb, model_types)
    drop_gene_products(out, kb)
    drop_no_single_gene(out, kb)
    return out


def test_a_span_takes_the_type_of_the_concept_it_was_linked_to(kb):
    anns = [linked("PDB", "Chemical", "D010001"), linked("famotidine", "Disease", "D015738"),
            linked("both", "Disease", "D000001"), linked("nothing", "Chemical", None),
            linked("unknown", "Chemical", "D999999"), None]
    assert take_concept_types(anns, kb, TYPES) is None  # in place
    assert [a.type if a else None for a in anns] == [
        "Disease", "Chemical", "Disease", "Chemical", "Chemical", None]


def test_a_concept_type_the_model_does_not_predict_changes_nothing(kb):
    out = all_rules([linked("TP53", "Chemical", "1234")], kb, TYPES)
    assert out[0].type == "Chemical"


def test_chemicals_linked_to_gene_products_are_dropped_or_kept(kb):
    anns = [linked("transgelin", "Chemical", "C051615"), linked("famotidine", "Chemical",
                                                                 "D015738")]
    dropped = list(anns)
    assert drop_gene_products(dropped, kb) is None  # in place
    assert dropped[0] is None and dropped[1].concept_ids == ["D015738"]
    # the step disabled: the other two rules keep it
    kept = list(anns)
    take_concept_types(kept, kb, TYPES)
    drop_no_single_gene(kept, kb)
    assert kept[0] is not None


def test_a_gene_span_linked_to_a_gene_product_and_no_gene_is_dropped(kb):
    """The type head's Disease span linked to the protein becomes Gene (its concept's type
    for a gene model) with the MeSH ID: no gene guideline counts that right, so the step
    drops it; a Gene span linked to a gene, and a Chemical, stay."""
    anns = [linked("transgelin", "Disease", "C051615"), linked("TP53", "Gene", "1234"),
            linked("famotidine", "Chemical", "D015738")]
    take_concept_types(anns, kb, (*TYPES, "Gene"))
    assert [a.type for a in anns] == ["Gene", "Gene", "Chemical"]
    assert drop_gene_products(anns, kb, "Gene") is None  # in place
    assert anns[0] is None and [a.text for a in anns[1:]] == ["TP53", "famotidine"]
    assert drop_gene_products([None], kb, "Gene") is None


def test_rules_off_or_no_kb_change_nothing(kb):
    anns = [linked("PDB", "Chemical", "D010001"), linked("transgelin", "Chemical", "C051615")]
    # retyping and the gene-product drop disabled: only the Gene drop runs
    off = list(anns)
    drop_no_single_gene(off, kb)
    assert [a.type for a in off] == ["Chemical", "Chemical"]
    assert all_rules(anns, None, TYPES) == anns


def test_concept_of_reads_the_first_linked_concept(kb):
    assert concept_of(linked("PDB", "Chemical", "D010001"), kb).id == "D010001"
    assert concept_of(None, kb) is None
    assert concept_of(linked("nothing", "Chemical", None), kb) is None
    assert concept_of(linked("unknown", "Chemical", "D999999"), kb) is None
    assert concept_of(linked("PDB", "Chemical", "D010001"), None) is None


def test_a_gene_span_linked_to_a_gene_product_stays_a_gene(kb):
    """A model that predicts genes: "transgelin" typed Gene and linked to MeSH's transgelin
    (a Chemical that is a gene product) keeps Gene and is not dropped; typed Chemical it is
    dropped as before; a Gene span linked to a plain chemical takes Chemical."""
    types = ("Chemical", "Disease", "Gene")
    out = all_rules([linked("transgelin", "Gene", "C051615"),
                     linked("transgelin", "Chemical", "C051615"),
                     linked("famotidine", "Gene", "D015738")], kb, types)
    assert out[0] is not None and out[0].type == "Gene"
    assert out[1] is None
    assert out[2].type == "Chemical"


def test_a_disease_span_linked_to_a_gene_product_becomes_a_gene_in_a_gene_model(kb):
    """"transgelin" typed Disease and linked to MeSH's transgelin: Chemical and Gene are both
    its types, so a gene model calls it a Gene; a Chemical/Disease model takes Chemical and
    drops it as a gene product."""
    gene_model = all_rules([linked("transgelin", "Disease", "C051615")], kb,
                           ("Chemical", "Disease", "Gene"))
    assert gene_model[0] is not None and gene_model[0].type == "Gene"
    assert all_rules([linked("transgelin", "Disease", "C051615")], kb, TYPES) == [None]


def test_a_span_of_one_letter_that_becomes_a_gene_is_dropped(kb):
    """"G" of "c.686C>G" kept as a chemical's name and linked to a gene whose alias it is."""
    anns = [linked("G", "Chemical", "1234"), linked("p53", "Chemical", "1234"),
            linked("G", "Chemical", "D015738")]
    out = all_rules(anns, kb, ("Chemical", "Disease", "Gene"))
    assert out[0] is None
    assert out[1].type == "Gene"
    assert out[2].type == "Chemical"  # a chemical of one letter is not the gene rule's


def test_a_protein_class_name_that_becomes_a_gene_is_dropped(kb):
    """"protein kinase" linked to the one gene whose other designations hold it."""
    anns = [linked("protein kinase", "Gene", "1234"), linked("GTPase", "Chemical", "1234"),
            linked("protein kinase C", "Gene", "1234"),
            linked("calcium", "Chemical", "D015738"), linked("zeta", "Gene", "1234"),
            linked("SH3", "Gene", "1234")]
    out = all_rules(anns, kb, ("Chemical", "Disease", "Gene"))
    assert out[0] is None and out[1] is None
    assert out[2].type == "Gene"
    assert out[3].type == "Chemical"
    assert out[4] is None  # a subunit's Greek letter alone
    assert out[5] is None  # a domain


def test_a_species_linked_to_a_taxon_above_a_species_is_dropped():
    from e2e_linker.collective.concept_types import drop_higher_taxa

    def ann(type_, cid):
        return Annotation(0, 4, "text", type_, [cid])

    anns = [ann("Species", "NCBITaxon:3701"), ann("Species", "NCBITaxon:9606"),
            ann("Gene", "NCBITaxon:3701"), None]
    drop_higher_taxa(anns, lambda: frozenset({"NCBITaxon:3701"}))
    assert [a.concept_ids[0] if a else None for a in anns] == [
        None, "NCBITaxon:9606", "NCBITaxon:3701", None]  # only a Species is this rule's
    kept = [ann("Species", "NCBITaxon:3701")]
    drop_higher_taxa(kept, lambda: None)  # a KB without a taxonomy: nothing dropped
    assert kept[0] is not None

    def unread():
        raise AssertionError("the taxonomy was read")

    # text that names no organism does not pay for the taxonomy's parse
    drop_higher_taxa([ann("Gene", "NCBITaxon:3701"), None], unread)
