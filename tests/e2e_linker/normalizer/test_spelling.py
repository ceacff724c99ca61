"""The spelling share a normalizer link rests on: trigrams of padded words, the best name of
the concept, the names from the KB and from the training pools."""

from __future__ import annotations

import pytest

from data_tools.kb import KB, Concept
from e2e_linker.kb_search.label_index import LabeledTexts
from e2e_linker.lexical.text_forms import TextNormalizer
from e2e_linker.normalizer.spelling import ConceptSpellings, spelling_share, trigrams


def test_trigrams_pad_each_word():
    assert trigrams("mi") == {" mi", "mi "}
    assert trigrams("a b") == {" a ", " b "}
    assert trigrams("  ") == set()


def test_a_name_shares_all_an_inflection_most_and_a_shuffled_word_little():
    assert spelling_share("hypotension", ["fever", "hypotension"]) == 1.0
    assert spelling_share("hypotensive", ["hypotension"]) > 0.6
    assert spelling_share("ctrlk", ["clark syndrome"]) < 0.3
    # the best single name counts, not the union of several
    assert spelling_share("ab cd", ["ab", "cd"]) == pytest.approx(0.5)
    assert spelling_share("anything", []) == 0.0
    assert spelling_share("", ["x"]) == 0.0


def test_a_concept_rests_on_its_folded_kb_names_and_its_pooled_texts():
    kb = KB([Concept("D1", "Myocardial Infarction", ["Heart-Attack"], "Disease"),
             Concept("D2", "Stroke", [], "Disease")])
    pool = LabeledTexts.from_pairs([("mi", "D1", "Disease"), ("mi and stroke", "D1|D2",
                                                              "Disease")])
    spellings = ConceptSpellings(kb, TextNormalizer(), [pool])
    assert set(spellings.names("D1")) == {"myocardial infarction", "heart attack", "mi"}
    # a composite's whole text is a name of the composite, not of each part
    assert spellings.names("D2") == ["stroke"]
    assert set(spellings.names("D1|D2")) == {"myocardial infarction", "heart attack", "mi",
                                             "stroke", "mi and stroke"}
    assert spellings.share("mi", "D1") == 1.0 and spellings.share("mi", "D2") == 0.0
    assert spellings.names("D9") == []
