"""eval.species_fit: the linked taxon, the fit and the check on labelled mention rows."""

from __future__ import annotations

from data_tools.species import HUMAN, MOUSE
from eval.species_fit import check, fit, linked_taxon
from tests.e2e_linker.collective.test_gene_ranking import _genes


def test_the_linked_taxon_is_the_first_reachable_one_of_the_order():
    genes = _genes()
    ranked = genes.name_only_ranking("Shh", "Gene")
    assert linked_taxon([MOUSE, HUMAN], ranked, genes) == MOUSE
    assert linked_taxon([HUMAN], ranked, genes) == HUMAN
    # fly first: no fly gene and no fly ortholog, so the next taxon of the order decides
    assert linked_taxon(["7227", MOUSE, HUMAN], ranked, genes) == MOUSE
    assert linked_taxon([HUMAN], [], genes) is None


def test_fit_and_check_on_rows_where_the_written_symbol_decides():
    def row(gold, rule):
        return {"gold": [gold], "rule": rule, "candidates": [HUMAN, MOUSE],
                "features": [{"document_first": 1.0, "written_symbol": float(gold == HUMAN)},
                             {"written_symbol": float(gold == MOUSE)}]}

    rows = [row(MOUSE, HUMAN)] * 30 + [row(HUMAN, HUMAN)] * 30
    choice = fit(rows, {"data": "test"})
    assert choice.model.weights["written_symbol"] > 1.0
    found = check(rows + [{"gold": ["7227"], "rule": HUMAN, "candidates": [HUMAN, MOUSE],
                           "features": [{}, {}]}], choice)
    assert found["mentions"] == 61 and found["unreachable"] == 1
    assert found["rule"] == round(30 / 61, 4) and found["learned"] == round(60 / 61, 4)


def test_splits_of_one_corpus_are_one_corpus():
    from eval.species_fit import same_corpus

    assert same_corpus("nlmgene:fit", "nlmgene:dev")
    assert not same_corpus("biored:train", "nlmgene:dev")
