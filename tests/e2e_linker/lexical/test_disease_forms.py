"""The forms a disease span no KB name spells is looked up under."""

from __future__ import annotations

from e2e_linker.lexical.disease_forms import disease_forms, singular


def test_singular_leaves_words_that_only_end_in_s():
    assert singular("epilepsies") == "epilepsy"
    assert singular("Tumors") == "Tumor"
    assert singular("abscesses") == "abscess"
    assert singular("diseases") == "disease"
    for word in ("virus", "sclerosis", "illness", "ALS", "is"):
        assert singular(word) == word


def test_disease_forms_singular_then_neoplasm_heads_then_modifier_free():
    forms = disease_forms("prostate carcinomas")
    assert forms[0] == "prostate carcinoma"
    assert "prostate cancer" in forms and "prostate neoplasms" in forms
    assert disease_forms("sporadic glioblastomas") == [
        "sporadic glioblastoma", "glioblastomas", "glioblastoma"]
    # a leading word the corpora leave out of the mention stays (the shorter span is right)
    assert disease_forms("idiopathic dystonias") == ["idiopathic dystonia"]
    # a modifier that names another concept stays
    assert all(not f.startswith("breast") for f in disease_forms("hereditary breast cancers"))
    assert disease_forms("") == []


def test_a_neoplasm_in_british_spelling_gets_the_american_heads():
    forms = disease_forms("sporadic Wilms tumours")
    assert "Wilms tumor" in forms and "sporadic Wilms cancer" in forms


def test_a_leading_subtype_or_stage_is_dropped_after_its_letter():
    forms = disease_forms("type IID von Willebrand disease")
    assert forms.index("type II von Willebrand disease") < forms.index("von Willebrand disease")
    assert "colorectal carcinomas" in disease_forms("stage II and III colorectal carcinomas")
    assert "colorectal cancer" in disease_forms("stage II or stage III colorectal cancer")
    assert "diabetes" in disease_forms("type I/II diabetes")
    # a qualifier with nothing after it, or a word that only starts like one, stays
    assert disease_forms("stage IV") == ["stage IV"]
    assert disease_forms("typed disease") == ["typed disease"]
    assert disease_forms("type A botulism")[1] == "botulism"


def test_an_organs_adenocarcinoma_gets_the_neoplasm_heads():
    forms = disease_forms("prostate adenocarcinomas")
    assert forms[0] == "prostate adenocarcinoma"
    assert "prostate cancer" in forms and "prostate neoplasms" in forms
