"""The sieves: exact names before the dense ranking; the lexical sieve's compact keys, type
filtering, and its place in front of the vector search."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from e2e_linker.kb_search.label_index import LabeledTexts
from e2e_linker.lexical.sieves import (
    CompactKeyIndex,
    CompactKeySieve,
    NameDictionary,
    choose_concept,
    compact_key,
    normalize_name,
)
from e2e_linker.normalizer.normalizer import normalize_documents


def test_compact_key_keeps_letters_and_digits_only():
    assert compact_key("SR 48,968") == compact_key("sr48968") == "sr48968"
    assert compact_key("Ro15-1788") == compact_key("Ro 15-1788")
    assert compact_key("--") == ""


def test_compact_key_folds_british_spellings():
    assert compact_key("oestrogen") == compact_key("Estrogen")
    assert compact_key("pregnenolone sulphate") == compact_key("Pregnenolone Sulfate")
    assert compact_key("haemoglobin") == compact_key("hemoglobin")


def test_unique_label_and_every_label_by_type():
    pool = LabeledTexts.from_pairs([("sr 48968", "C1", "Chemical"), ("bay k 8644", "C2", "Chemical"),
                                    ("bayk 8644", "D9", "Disease"), ("cold", "C3", "Chemical"),
                                    ("cold", "D4", "Disease")])
    index = CompactKeyIndex([pool])
    assert index.unique("SR 48,968") == "C1"
    assert index.unique("BAY k-8644") is None  # two concepts share the key
    assert index.unique("BAY k-8644", "Chemical") == "C2"
    assert index.unique("cold", "Disease") == "D4"
    assert index.unique("nothing") is None
    assert index.matches("BAY k-8644") == ["C2", "D9"]  # every label of the key
    assert index.matches("BAY k-8644", "Chemical") == ["C2"]
    assert index.matches("nothing") == []
    assert "s.r. 48968" in index and "sr 4896" not in index


def test_compact_key_sieve_takes_a_unique_key_unless_training_holds_it():
    ontology = CompactKeyIndex([LabeledTexts.from_pairs([
        ("sr 48968", "C1", "Chemical"), ("bay k 8644", "C2", "Chemical"),
        ("bayk 8644", "C3", "Chemical"), ("ro 15 1788", "C4", "Chemical")])])
    training = CompactKeyIndex([LabeledTexts.from_pairs([("ro15-1788", "C9", "Chemical")])])
    sieve = CompactKeySieve(ontology, training)
    assert sieve.match("SR 48,968", "Chemical") == "C1"  # one concept bears the key
    assert sieve.match("SR 48,968", "Disease") is None  # none of the mention's type
    assert sieve.match("BAY k-8644", "Chemical") is None  # two concepts share the key
    assert sieve.match("Ro 15-1788", "Chemical") is None  # a training mention holds the key
    assert CompactKeySieve(ontology, CompactKeyIndex([])).match("Ro15-1788") == "C4"


def _doc(text: str, surface: str) -> Document:
    doc = Document("1", [Passage(0, text, {})])
    start = text.index(surface)
    doc.add_annotation(Annotation(start, start + len(surface), surface, "Chemical", ["X"]))
    return doc


def test_normalizer_takes_the_lexical_match_unless_training_mentions_have_the_key(
        tiny_encoder, tmp_path):
    kb = KB([Concept("C1", "SR 48968", ["saredutant"], "Chemical"),
             Concept("C2", "SR 4895", [], "Chemical")])
    doc = _doc("Rats given SR 48,968 recovered.", "SR 48,968")
    normalize_documents([doc], tiny_encoder, kb, mode="OD-T", cache_dir=tmp_path,
                        progress=False)
    ann = doc.annotations[0]
    assert ann.concept_ids == ["C1"] and ann.link_score == 1.0
    assert ann.infons["candidates"].startswith("C1|1.0000")
    # the corpus files the string elsewhere: the vector search (which sees D) decides
    train = _doc("SR-48968 again.", "SR-48968")
    train.annotations[0].concept_ids = ["C2"]
    normalize_documents([doc], tiny_encoder, kb, mode="OD-T", training=[train],
                        cache_dir=tmp_path, progress=False)
    assert doc.annotations[0].concept_ids == ["C2"]
    # switched off, or in a mode that never searches the ontology, there is no lexical answer
    for options in ({"mode": "OD-T", "lexical": False}, {"mode": "D-T"}):
        normalize_documents([doc], tiny_encoder, kb, training=[train], cache_dir=tmp_path,
                            progress=False, **options)
        assert doc.annotations[0].concept_ids == ["C2"]


def test_salt_free_and_anion_forms_answer_in_the_lexical_sieve_only(tiny_encoder, tmp_path):
    kb = KB([Concept("D1", "Tiapride Hydrochloride", [], "Chemical"),
             Concept("D2", "tiaramide", [], "Chemical"),
             Concept("D3", "Metrizoic Acid", [], "Chemical")])
    doc = Document("1", [Passage(0, "Tiapride and metrizoate were given.", {})])
    for surface in ("Tiapride", "metrizoate"):
        start = doc.passages[0].text.index(surface)
        doc.add_annotation(Annotation(start, start + len(surface), surface, "Chemical", ["X"]))
    normalize_documents([doc], tiny_encoder, kb, mode="OD-T", cache_dir=tmp_path,
                        progress=False)
    assert [a.concept_ids for a in doc.annotations] == [["D1"], ["D3"]]
    assert all(a.link_score == 1.0 for a in doc.annotations)  # exact matches, not vectors
    normalize_documents([doc], tiny_encoder, kb, mode="OD-T", cache_dir=tmp_path,
                        progress=False, salt_free=False)
    assert all(a.link_score != 1.0 for a in doc.annotations)


def test_name_sieve_prefers_exact_names_and_dense_order():
    names = NameDictionary([("Renal failure", "D1"), ("renal-failure", "D2"), ("cold", "D3")],
                           {"D1": "Disease", "D2": "Disease", "D3": "Disease"})
    assert normalize_name("Renal-Failure ") == "renal failure"
    assert choose_concept("renal failure", "Disease", [("D2", 0.9), ("D1", 0.8)], names)[0] == "D2"
    assert choose_concept("cold", "Disease", [("D9", 0.9)], names) == ("D3", None, "exact")
    assert choose_concept("fever", "Disease", [("D9", 0.9)], names) == ("D9", 0.9, "dense")
