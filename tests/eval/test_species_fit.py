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


def test_the_check_keeps_each_documents_choices_for_a_paired_bootstrap():
    from eval.paired_bootstrap import by_document, paired_bootstrap
    from eval.species_fit import bootstrap_rows

    def row(doc, gold, written):
        return {"document": doc, "gold": [gold], "rule": HUMAN, "candidates": [HUMAN, MOUSE],
                "features": [{"document_first": 1.0, "written_symbol": float(written == HUMAN)},
                             {"written_symbol": float(written == MOUSE)}]}

    train = [row("t", MOUSE, MOUSE)] * 30 + [row("t", HUMAN, HUMAN)] * 30
    choice = fit(train, {})
    # document "a": two right; document "b": the symbol says human, the gold is mouse
    checked = {"x:dev": check([row("a", MOUSE, MOUSE), row("a", HUMAN, HUMAN),
                               row("b", MOUSE, HUMAN)], choice)}
    assert checked["x:dev"]["by_document"] == {"a": [2, 0, 0], "b": [0, 1, 1]}
    rows = bootstrap_rows(checked, {})
    assert "by_document" not in checked["x:dev"]  # moved into the rows, not kept twice
    counts = by_document({"rows": rows})
    assert counts == {"x:dev (fitted)": {"a": [2, 0, 0], "b": [0, 1, 1]}}
    # the micro F1 of the counts is the accuracy; a fit right on "b" too is 1/3 above it
    better = {"x:dev (fitted)": {"a": [2, 0, 0], "b": [1, 0, 0]}}
    found = paired_bootstrap(counts, better, samples=200)
    assert found["x:dev (fitted)"]["a"] == round(2 / 3, 4)
    assert found["x:dev (fitted)"]["delta"] == round(1 - 2 / 3, 4)


def test_splits_of_one_corpus_are_one_corpus():
    from eval.species_fit import same_corpus

    assert same_corpus("nlmgene:fit", "nlmgene:dev")
    assert not same_corpus("biored:train", "nlmgene:dev")


def _doc(doc_id: str, text: str, ids: list[str]):
    from data_tools.documents import Annotation, Document, Passage

    anns = [Annotation(0, 3, text[:3], "Gene", [cid]) for cid in ids]
    return Document(doc_id, [Passage(0, text, annotations=anns)])


def test_the_text_model_target_is_the_share_of_gold_genes_by_species_group():
    from eval.species_fit import gene_groups

    genes = _genes()
    doc = _doc("1", "Shh and SHH", ["NCBIGene:20423", "20423", "6469", "424242"])
    assert gene_groups(doc, genes) == {"mouse": 2.0, "human": 1.0}  # 424242: not in the KB
    assert gene_groups(_doc("2", "none", ["424242"]), genes) == {}


def test_out_of_fold_priors_come_from_models_that_did_not_read_the_document():
    import eval.species_fit as species_fit

    seen: list[set[str]] = []
    real = species_fit.fit_text

    def recording(training, fitted=None):
        seen.append({key for key, _, _ in training})
        return real(training, fitted)

    training = [(f"c/{n}", "mice cells" if n % 2 else "patients cells",
                 {"mouse": 1.0} if n % 2 else {"human": 1.0}) for n in range(12)]
    species_fit.fit_text = recording
    try:
        priors = species_fit.out_of_fold_priors(training)
    finally:
        species_fit.fit_text = real
    assert set(priors) == {key for key, _, _ in training}
    assert len(seen) == species_fit.FOLDS
    for fold, keys in enumerate(seen):  # fold k's documents are those its model never read
        held = {key for n, (key, _, _) in enumerate(training) if n % species_fit.FOLDS == fold}
        assert not keys & held and keys | held == set(priors)
    assert priors["c/1"]["mouse"] > priors["c/0"]["mouse"]
