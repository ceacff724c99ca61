"""names_a_protein_class: a name of a class of proteins, not of one gene."""

from __future__ import annotations

import pytest

from e2e_linker.lexical.protein_classes import (
    names_a_domain,
    names_a_protein_class,
    names_a_subunit_alone,
    names_no_single_gene,
)


@pytest.mark.parametrize("text", [
    "protein kinase", "Protein Tyrosine Phosphatase", "protein-tyrosine-phosphatase",
    "serine/threonine protein kinase", "GTPase", "small GTP-binding protein", "cytokines",
    "DNA-binding protein", "cell surface receptor", "ubiquitin ligase", "protease"])
def test_class_names(text):
    assert names_a_protein_class(text)


@pytest.mark.parametrize("text", [
    "protein kinase C", "DNA polymerase delta", "RNA polymerase II", "growth hormone receptor",
    "actin", "ubiquitin", "calcium", "binding", "p53", "", "-", "insulin receptor",
    "tyrosine hydroxylase"])
def test_specific_names_and_words_without_a_head(text):
    assert not names_a_protein_class(text)


@pytest.mark.parametrize("text", ["zeta", "beta subunit", "beta-subunit", "alpha chains", "Delta"])
def test_a_greek_letter_alone_names_a_subunit(text):
    assert names_a_subunit_alone(text)


@pytest.mark.parametrize("text", [
    "tau", "Rho", "PI", "alpha1", "TCR zeta", "PKC delta", "subunit", "", "beta-catenin"])
def test_proteins_named_by_a_letter_and_specific_names_are_not_subunits_alone(text):
    assert not names_a_subunit_alone(text)


def test_a_domain_name_alone():
    for text in ("SH3", "SH2", "HMG", "PDZ", " WD40 "):
        assert names_a_domain(text)
    for text in ("SH3GL1", "SH3 domain-binding protein", "HMGB1", "Src"):
        assert not names_a_domain(text)


def test_names_no_single_gene_is_any_of_the_three():
    assert names_no_single_gene("protein kinase")
    assert names_no_single_gene("beta subunit")
    assert names_no_single_gene("SH2")
    assert not names_no_single_gene("protein kinase C")
    assert not names_no_single_gene("TP53")
