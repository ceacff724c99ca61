"""The normalizer on a tiny KB: exact names, composites, abbreviations, NIL, extra synonyms."""

from __future__ import annotations

import pytest

from data_tools.kb import KB, Concept
from e2e_linker.normalizer.normalizer import NormalizeOptions, Normalizer, normalize_documents
from tests.helpers.small_kb import doc_with, small_kb


def test_exact_names_composites_and_abbreviations(tiny_encoder, tmp_path):
    text = ("Women with breast and ovarian cancer took Aspirin. Temporal lobe epilepsy (TLE) "
            "was seen; TLE recurred.")
    doc = doc_with(text, [("breast and ovarian cancer", "Disease"), ("Aspirin", "Chemical"),
                      ("Temporal lobe epilepsy", "Disease"), ("TLE", "Disease"),
                      ("TLE", "Disease")])
    out = normalize_documents([doc], tiny_encoder, small_kb(), mode="O-T", cache_dir=tmp_path,
                              top_k=3, progress=False)
    anns = out[0].annotations
    assert anns[0].concept_ids == ["D001943", "D010051"]
    assert anns[0].composite_texts == ["breast cancer", "ovarian cancer"]
    assert " || " in anns[0].infons["candidates"]
    assert [a.concept_ids for a in anns[1:]] == [["C001"], ["D004833"], ["D004833"],
                                                 ["D004833"]]
    for ann in anns:
        assert ann.link_score == pytest.approx(1.0, abs=2e-3)
        first = ann.infons["candidates"].split(";")[0]
        assert first.rsplit("|", 1)[0] in ann.concept_id
    # without abbreviation resolution "TLE" is not an exact name any more
    doc2 = doc_with(text, [("TLE", "Disease")])
    normalize_documents([doc2], tiny_encoder, small_kb(), mode="O-T", cache_dir=tmp_path,
                        abbreviations=False, progress=False)
    assert doc2.annotations[0].link_score < 0.999


def test_composite_never_and_nil_threshold(tiny_encoder, tmp_path):
    doc = doc_with("breast and ovarian cancer", [("breast and ovarian cancer", "Disease")])
    normalize_documents([doc], tiny_encoder, small_kb(), mode="O-T", cache_dir=tmp_path,
                        composite="never", progress=False)
    ann = doc.annotations[0]
    assert len(ann.concept_ids) == 1 and ann.composite_texts is None
    normalize_documents([doc], tiny_encoder, small_kb(), mode="O-T", cache_dir=tmp_path,
                        composite="never", nil_threshold=1.01, progress=False)
    assert doc.annotations[0].concept_ids == [] and doc.annotations[0].concept_id == "-1"


def test_training_mentions_and_extra_synonyms(tiny_encoder, tmp_path):
    train = doc_with("heart attack", [("heart attack", "Disease")])
    train.annotations[0].concept_ids = ["MESH:D009203"]
    doc = doc_with("a heart attack and an MI", [("heart attack", "Disease"), ("MI", "Disease")])
    normalize_documents([doc], tiny_encoder, small_kb(), mode="D-T+O-T", training=[train],
                        cache_dir=tmp_path, progress=False)
    assert doc.annotations[0].concept_ids == ["D009203"]
    normalize_documents([doc], tiny_encoder, small_kb(), mode="O-T", cache_dir=tmp_path,
                        extra_synonyms=[("D009203", "MI")], progress=False)
    assert doc.annotations[1].concept_ids == ["D009203"]


def test_type_aware_search(tiny_encoder, tmp_path):
    kb = KB([Concept("X1", "lithium", [], "Chemical"), Concept("X2", "lithium", [], "Disease")])
    doc = doc_with("lithium lithium", [("lithium", "Disease"), ("lithium", "Chemical")])
    normalize_documents([doc], tiny_encoder, kb, mode="O-T", cache_dir=tmp_path, progress=False)
    assert [a.concept_ids for a in doc.annotations] == [["X2"], ["X1"]]


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        NormalizeOptions(mode="X-T")
    with pytest.raises(ValueError):
        NormalizeOptions(composite="sometimes")


def test_normalizer_reuses_its_index(tiny_encoder, tmp_path):
    normalizer = Normalizer(tiny_encoder, small_kb(), options=NormalizeOptions(mode="O-C",
                                                                         progress=False),
                            cache_dir=tmp_path)
    for _ in range(2):
        doc = doc_with("aspirin", [("aspirin", "Chemical")])
        normalizer.normalize([doc])
        assert doc.annotations[0].concept_ids == ["C001"]


def test_mention_types_unknown_to_the_kb_do_not_filter(tiny_encoder, tmp_path):
    """NCBI types (SpecificDisease...) are not KB types: D entries of any type stay reachable."""
    train = doc_with("galactosemia variant", [("galactosemia variant", "SpecificDisease")])
    train.annotations[0].concept_ids = ["OMIM:230400"]  # not in the KB
    doc = doc_with("galactosemia variant", [("galactosemia variant", "DiseaseClass")])
    normalize_documents([doc], tiny_encoder, small_kb(), mode="D-T+O-T", training=[train],
                        cache_dir=tmp_path, progress=False)
    assert doc.annotations[0].concept_ids == ["OMIM:230400"]


def test_ncbi_types_search_the_diseases_of_a_mixed_kb(tiny_encoder, tmp_path):
    """Over a KB with chemicals and diseases, an NCBI 'SpecificDisease' mention is a disease."""
    kb = KB([Concept("X1", "lithium", [], "Chemical"), Concept("X2", "lithium", [], "Disease")])
    doc = doc_with("lithium lithium", [("lithium", "SpecificDisease"), ("lithium", "Chemical")])
    normalize_documents([doc], tiny_encoder, kb, mode="O-T", cache_dir=tmp_path, progress=False)
    assert [a.concept_ids for a in doc.annotations] == [["X2"], ["X1"]]
    off = doc_with("lithium", [("lithium", "SpecificDisease")])
    normalize_documents([off], tiny_encoder, kb, mode="O-T", cache_dir=tmp_path,
                        progress=False, type_aware=False)
    assert off.annotations[0].concept_ids == ["X1"]  # unfiltered: the tie breaks by ID
