"""The species choice: a gene mention's candidate taxa, their features, the fitted order."""

from __future__ import annotations

import json

from data_tools.species import HUMAN, MOUSE
from e2e_linker.collective.confidence import ConfidenceModel, fit_confidence
from e2e_linker.collective.species_choice import (
    SPECIES_CHOICE_FILE,
    SpeciesChoice,
    candidate_taxa,
    document_species,
    load_species_choice,
    sentence_bounds,
    sentence_ends,
    taxon_features,
    text_prior_feature,
)
from tests.e2e_linker.collective.test_gene_ranking import _genes

TEXT = ("Sonic hedgehog in patients. In mice, Shh and Sirt1 were induced. "
        "Human SHH was not.")


def _doc(genes, gene_texts=("Shh", "Sirt1", "SHH")):
    return document_species(TEXT, [(31, MOUSE)], list(gene_texts), [HUMAN, MOUSE], genes)


def test_document_species_counts_spans_cues_and_how_genes_are_written():
    genes = _genes()
    doc = _doc(genes)
    assert doc.mentioned == {MOUSE: 1}
    assert doc.cued == {HUMAN: 2, MOUSE: 1}  # "patients", "Human"; "mice"
    assert doc.symbols == {MOUSE: 2, HUMAN: 1}  # "Shh", "Sirt1" mouse symbols; "SHH" human
    assert doc.gene_spans == 3
    assert [t for _, t in doc.named] == [HUMAN, MOUSE, MOUSE, HUMAN]


def test_sentence_bounds_split_at_sentence_ends():
    start = TEXT.index("Shh")
    lo, hi = sentence_bounds(TEXT, start, start + 3)
    assert TEXT[lo:hi] == "In mice, Shh and Sirt1 were induced"  # its end mark left out
    assert sentence_bounds(TEXT, start, start + 3, sentence_ends(TEXT)) == (lo, hi)
    # a sentence mark right before the mention counts only with a character between; a
    # line end right before it counts
    assert sentence_bounds("Mice. Shh rose", 6, 9) == (0, 14)
    assert sentence_bounds("Mice\nShh rose", 5, 8) == (5, 13)


def test_features_read_the_mention_its_sentence_and_its_document():
    genes = _genes()
    doc = _doc(genes)
    start = TEXT.index("Shh")
    ranked = genes.name_only_ranking("Shh", "Gene")
    sentence = sentence_bounds(TEXT, start, start + 3)
    mouse = taxon_features(MOUSE, "Shh", TEXT, start, start + 3, ranked, doc, genes, (),
                           sentence)
    human = taxon_features(HUMAN, "Shh", TEXT, start, start + 3, ranked, doc, genes, (),
                           sentence)
    assert mouse["written_symbol"] == 1.0 and "written_symbol" not in human
    assert mouse["same_sentence"] == 1.0 and "same_sentence" not in human
    assert mouse["title:mouse"] == 1.0 and human["title:human"] == 1.0
    assert human["document_first"] == 1.0 and "document_first" not in mouse
    assert mouse["symbol_share"] == 2 / 3
    assert sorted(candidate_taxa(ranked, genes, doc, ())) == sorted([MOUSE, HUMAN])


def test_the_fitted_order_puts_the_likeliest_taxon_first_and_is_stored():
    genes = _genes()
    doc = _doc(genes)
    # a model that weighs only how the mention is written
    choice = SpeciesChoice(ConfidenceModel({"written_symbol": 4.0, "document_first": 1.0}))
    for mention, first in (("Shh", MOUSE), ("SHH", HUMAN)):
        start = TEXT.index(mention)
        ranked = genes.name_only_ranking(mention, "Gene")
        assert choice.order(mention, TEXT, start, start + 3, ranked, doc, genes)[0] == first


def test_fit_learns_the_taxon_of_the_labelled_rows(tmp_path):
    rows = [({"written_symbol": 1.0, "taxon=mouse": 1.0}, True),
            ({"taxon=human": 1.0, "document_first": 1.0}, False)] * 20 + \
           [({"taxon=human": 1.0, "document_first": 1.0}, True), ({"taxon=mouse": 1.0}, False)] * 20
    model = fit_confidence([f for f, _ in rows], [y for _, y in rows], (), ())
    assert model.weights["written_symbol"] > 1.0
    choice = SpeciesChoice(model)
    (tmp_path / SPECIES_CHOICE_FILE).write_text(json.dumps(choice.to_json()))
    assert load_species_choice(tmp_path).model.weights == model.weights
    assert load_species_choice(tmp_path / "none") is None
    assert load_species_choice(None) is None


def test_the_shipped_species_choice_weighs_only_features_the_linker_computes():
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.collective.species_choice import TAXON_GROUPS

    choice = load_species_choice(default_linker_dir())
    assert choice is not None
    groups = [*TAXON_GROUPS.values(), "other"]
    known = {"text_prior", "mentioned_share", "cued_share", "named_nowhere", "document_first",
             "document_second", "most_symbols", "named_before", "same_sentence", "has_gene",
             "first_gene", "written_symbol", "symbol_key", "symbol_share", "only_share",
             "mutant_mark", *(f"taxon={g}" for g in groups), *(f"caps:{g}" for g in groups),
             *(f"title:{g}" for g in groups)}
    assert set(choice.model.weights) <= known
    assert choice.model.weights["named_before"] > 0  # a species word right before the mention


def test_the_text_prior_is_the_log_of_the_groups_probability_and_cancels_without_a_model():
    import math

    from e2e_linker.collective.species_choice import PRIOR_FLOOR

    prior = {"human": 0.7, "mouse": 0.3, "rat": 0.0}
    assert text_prior_feature(HUMAN, prior) == math.log(0.7)
    assert text_prior_feature("10116", prior) == math.log(PRIOR_FLOOR)  # floored
    assert text_prior_feature("7955", prior) == math.log(PRIOR_FLOOR)  # "other": not given
    assert text_prior_feature(MOUSE, {}) == 0.0
    genes = _genes()
    doc = document_species(TEXT, [(31, MOUSE)], ["Shh"], [HUMAN, MOUSE], genes, prior)
    start = TEXT.index("Shh")
    ranked = genes.name_only_ranking("Shh", "Gene")
    sentence = sentence_bounds(TEXT, start, start + 3)
    mouse = taxon_features(MOUSE, "Shh", TEXT, start, start + 3, ranked, doc, genes, (),
                           sentence)
    assert mouse["text_prior"] == math.log(0.3)
    # without a text model the feature is absent for every candidate: the order is the one
    # a choice fitted without it gives
    plain = _doc(genes)
    assert "text_prior" not in taxon_features(MOUSE, "Shh", TEXT, start, start + 3, ranked,
                                              plain, genes, (), sentence)


def test_a_choice_that_weighs_the_text_prior_needs_its_text_model(tmp_path):
    import pytest

    from e2e_linker.collective.text_species import TEXT_SPECIES_FILE, fit_text_species
    from e2e_linker.errors import UserError

    choice = SpeciesChoice(ConfidenceModel({"text_prior": 1.0, "written_symbol": 2.0}))
    (tmp_path / SPECIES_CHOICE_FILE).write_text(json.dumps(choice.to_json()))
    with pytest.raises(UserError, match=TEXT_SPECIES_FILE):
        load_species_choice(tmp_path)
    text = fit_text_species(["mice cells", "mice tissue", "patients cells", "patients tissue"],
                            [{"mouse": 1}, {"mouse": 1}, {"human": 1}, {"human": 1}])
    (tmp_path / TEXT_SPECIES_FILE).write_text(json.dumps(text.to_json()))
    loaded = load_species_choice(tmp_path)
    assert loaded.text_prior("mice")["mouse"] > loaded.text_prior("patients")["mouse"]
    assert SpeciesChoice(choice.model).text_prior("mice") == {}
