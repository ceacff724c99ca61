"""The text species model: its words, its fit on soft targets, its file."""

from __future__ import annotations

import json

import pytest

from data_tools.species import HUMAN, MOUSE, YEAST_S288C
from e2e_linker.collective.text_species import (
    GROUPS,
    TEXT_SPECIES_FILE,
    fit_text_species,
    load_text_species,
    taxon_group,
    words,
)
from e2e_linker.errors import UserError

# two groups' vocabularies with a shared frame; the cell lines are the only evidence
_HUMAN = "Expression of the gene in HeLa cells and HEK293 cells from patients."
_MOUSE = "Expression of the gene in 4T1 cells and NIH-3T3 cells from the colony."


def _fitted():
    texts = [_HUMAN] * 6 + [_MOUSE] * 6
    targets = [{"human": 1.0}] * 6 + [{"mouse": 3.0, "human": 1.0}] * 6
    return fit_text_species(texts, targets, l2=0.1, fitted={"data": "test"})


def test_words_keep_hyphenated_names_whole_and_fold_case():
    assert words("NIH-3T3 and IEC-6 cells (HeLa).") == ["nih-3t3", "and", "iec-6", "cells",
                                                         "hela"]
    assert words("-- _x_ --") == ["x"]


def test_taxon_groups():
    assert (taxon_group(HUMAN), taxon_group(MOUSE), taxon_group(YEAST_S288C)) == \
        ("human", "mouse", "yeast")
    assert taxon_group("7955") == "other"  # zebrafish


def test_fit_learns_which_words_say_which_species():
    model = _fitted()
    human = model.probabilities("HeLa cells were used.")
    mouse = model.probabilities("4T1 cells were used.")
    assert set(human) == set(GROUPS) and abs(sum(human.values()) - 1.0) < 1e-9
    assert human["human"] > 0.5 and mouse["mouse"] > human["mouse"]
    # soft targets: the mouse documents also had human genes, so human stays likely there
    assert mouse["human"] > mouse["rat"]
    # words of one document only are not kept (min_documents), nor unknown words
    assert "colony" in model.vocabulary and "zebrafish" not in model.vocabulary
    assert model.probabilities("zebrafish") == model.probabilities("")


def test_the_file_round_trips_and_a_damaged_one_is_named(tmp_path):
    model = _fitted()
    (tmp_path / TEXT_SPECIES_FILE).write_text(json.dumps(model.to_json()))
    loaded = load_text_species(tmp_path)
    text = "HeLa and 4T1 cells"
    assert loaded.probabilities(text) == pytest.approx(model.probabilities(text), abs=1e-4)
    assert load_text_species(tmp_path / "none") is None and load_text_species(None) is None
    data = model.to_json()
    data["idf"] = data["idf"][:-1]
    (tmp_path / TEXT_SPECIES_FILE).write_text(json.dumps(data))
    with pytest.raises(UserError, match=TEXT_SPECIES_FILE):
        load_text_species(tmp_path)
    (tmp_path / TEXT_SPECIES_FILE).write_text("{")
    with pytest.raises(UserError, match="refit"):
        load_text_species(tmp_path)
