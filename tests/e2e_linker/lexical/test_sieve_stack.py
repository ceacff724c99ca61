"""The lexical steps annotate borrows from the normalizer: each fires on its own case, and
a switched-off step never fires."""

from __future__ import annotations

from data_tools.kb import KB, Concept
from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches
from e2e_linker.lexical.sieves import NameDictionary


def _kb() -> KB:
    kb = KB()
    for cid, name, synonyms, type_ in (
            ("D004833", "Temporal Lobe Epilepsy", [], "Disease"),
            ("C100001", "SR 48968", [], "Chemical"),
            ("D013999", "Tiapride Hydrochloride", [], "Chemical"),
            ("D003042", "Cocaine", [], "Chemical"),
            ("D012559", "Schizophrenia", [], "Disease")):
        kb.add(Concept(cid, name, synonyms, type_))
    return kb


def _stack(switches: SieveSwitches | None = None, training=()) -> SieveStack:
    kb = _kb()
    return SieveStack(kb, NameDictionary.from_kb(kb), training, switches)


def test_abbreviation_expansion_looks_up_the_long_form():
    stack = _stack()
    assert stack.match("TLE", "Disease", "temporal lobe epilepsy") == ("D004833", "abbreviation")
    assert stack.match("TLE", "Disease", None) is None
    off = _stack(SieveSwitches(abbreviations=False, training=False))
    assert off.match("TLE", "Disease", "temporal lobe epilepsy") is None


def test_training_mentions_answer_with_their_majority_concept():
    training = [("crack cocaine", "D003042", "Chemical")] * 2 + [
        ("crack cocaine", "D013999", "Chemical")]
    stack = _stack(training=training)
    assert stack.match("Crack-Cocaine", "Chemical") == ("D003042", "training")
    assert stack.match("crack cocaine", "Disease") is None  # another type never sees it
    assert _stack(SieveSwitches(training=False), training).match(
        "crack cocaine", "Chemical") is None


def test_training_labels_are_read_with_the_step_switched_off():
    """The gene ranking reads the pool whether or not the ``training`` step links by it."""
    training = [("crack cocaine", "D003042", "Chemical")] * 2 + [
        ("crack cocaine", "D013999", "Chemical")]
    off = _stack(SieveSwitches(training=False), training)
    assert off.training_labels("Crack-Cocaine", "Chemical") == ["D003042", "D013999"]
    assert off.training_labels("crack cocaine", "Disease") == []
    assert off.training_labels("cocaine", "Chemical") == []


def test_compact_key_and_salt_free_forms():
    stack = _stack()
    assert stack.match("SR-48,968", "Chemical") == ("C100001", "compact_key")
    assert stack.match("SR-48,968", "Disease") is None  # the key's concept is a chemical
    assert stack.match("tiapride", "Chemical") == ("D013999", "compact_key")
    no_salt = _stack(SieveSwitches(salt_free=False))
    assert no_salt.match("tiapride", "Chemical") is None
    assert no_salt.match("SR 48968", "Chemical") == ("C100001", "compact_key")


def test_a_key_held_by_training_mentions_is_left_to_them():
    training = [("SR 48968", "D003042", "Chemical")]
    stack = _stack(SieveSwitches(training=False), training)
    assert stack.match("SR 48968", "Chemical") is None


def test_all_off_matches_nothing():
    stack = _stack(SieveSwitches.none(), [("cocaine", "D003042", "Chemical")])
    assert stack.match("SR 48968", "Chemical", "x") is None
    assert stack.match("cocaine", "Chemical") is None


def test_written_forms_need_one_concept_of_the_type():
    kb = _kb()
    kb.add(Concept("D010673", "Pheochromocytoma", [], "Disease"))
    kb.add(Concept("D011471", "Prostatic Neoplasms", ["prostate cancer"], "Disease"))
    kb.add(Concept("D999998", "Wilms Tumor", [], "Disease"))
    kb.add(Concept("D999999", "Wilms Tumor", [], "Disease"))
    stack = SieveStack(kb, NameDictionary.from_kb(kb))
    # the compact key folds British spellings; a form is looked up by it too
    assert stack.match("phaeochromocytomas", "Disease") == ("D010673", "written_form")
    assert stack.match("prostate carcinomas", "Disease") == ("D011471", "written_form")
    assert stack.match("prostate carcinomas", "Chemical") is None
    assert stack.match("Wilms tumours", "Disease") is None  # two concepts bear the form
    off = SieveStack(kb, NameDictionary.from_kb(kb), (), SieveSwitches(written_forms=False))
    assert off.match("phaeochromocytomas", "Disease") is None


def test_a_lettered_subtype_links_to_its_level_then_to_the_disease():
    kb = _kb()
    kb.add(Concept("D014842", "von Willebrand Diseases", ["von Willebrand Disease"], "Disease"))
    stack = SieveStack(kb, NameDictionary.from_kb(kb))
    assert stack.match("type IID von Willebrand disease", "Disease") == (
        "D014842", "written_form")
    kb.add(Concept("D056728", "von Willebrand Disease, Type 2",
                   ["Type II von Willebrand Disease"], "Disease"))
    stack = SieveStack(kb, NameDictionary.from_kb(kb))
    assert stack.match("type IID von Willebrand disease", "Disease") == (
        "D056728", "written_form")
