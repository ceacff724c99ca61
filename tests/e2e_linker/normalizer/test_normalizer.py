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


# ---- NIL by spelling, and the confidence of every answer (issue 44) -------------------------

def spelling_normalizer(tiny_encoder, tmp_path, **options) -> Normalizer:
    return Normalizer(tiny_encoder, small_kb(),
                      options=NormalizeOptions(mode="O-T", progress=False, **options),
                      cache_dir=tmp_path)


def test_the_nil_rule_asks_for_spelling_below_the_higher_bar(tiny_encoder, tmp_path):
    from e2e_linker.normalizer.normalizer import SPELLING_EVIDENCE, UNSUPPORTED_NIL_THRESHOLD

    normalizer = spelling_normalizer(tiny_encoder, tmp_path)
    little, enough = SPELLING_EVIDENCE / 2, SPELLING_EVIDENCE
    between = (0.78 + UNSUPPORTED_NIL_THRESHOLD) / 2
    assert normalizer.is_nil(0.77, 1.0, 0.78)  # the threshold alone, as before
    assert normalizer.is_nil(between, little, 0.78)
    assert not normalizer.is_nil(between, enough, 0.78)
    assert not normalizer.is_nil(UNSUPPORTED_NIL_THRESHOLD, little, 0.78)
    assert not normalizer.is_nil(between, None, 0.78)
    off = spelling_normalizer(tiny_encoder, tmp_path, spelling_nil=False)
    assert not off.is_nil(between, little, 0.78)


def test_nonsense_is_no_concept_and_every_answer_has_a_confidence(tiny_encoder, tmp_path,
                                                                  monkeypatch):
    """With the higher bar above every cosine, a mention sharing no spelling with its best
    link is NIL at any threshold above 0, while an exact name is not; threshold 0 keeps the
    old answer (every mention its best concept)."""
    from data_tools.formats.mentions_jsonl import confidence_of
    from e2e_linker.normalizer import normalizer as module
    from e2e_linker.normalizer.confidence import answer_confidence

    monkeypatch.setattr(module, "UNSUPPORTED_NIL_THRESHOLD", 1.01)
    normalizer = spelling_normalizer(tiny_encoder, tmp_path)
    doc = doc_with("qzxv and aspirin", [("qzxv", "Disease"), ("aspirin", "Chemical")])
    queries = normalizer.queries([doc])
    nonsense, aspirin = normalizer.rank(queries, ["O-T"], nil_threshold=1e-6)["O-T"]
    assert nonsense.concept_ids == [] and nonsense.score is not None
    assert nonsense.spelling_share < module.SPELLING_EVIDENCE
    assert aspirin.concept_ids == ["C001"] and aspirin.spelling_share == 1.0
    # a NIL answer's confidence is that its best candidate is wrong
    assert nonsense.confidence == pytest.approx(
        1 - answer_confidence(nonsense.score, nonsense.spelling_share, True))
    assert aspirin.confidence == answer_confidence(1.0, 1.0, True) > 0.9
    normalizer.normalize([doc], nil_threshold=1e-6)
    assert [confidence_of(a) for a in doc.annotations] == [
        round(nonsense.confidence, 4), round(aspirin.confidence, 4)]
    normalizer.normalize([doc], nil_threshold=0)
    assert doc.annotations[0].concept_ids  # no threshold: the best concept, as before
    assert 0.0 <= confidence_of(doc.annotations[0]) <= 1.0


def test_a_composites_spelling_is_its_weakest_parts(tiny_encoder, tmp_path):
    normalizer = spelling_normalizer(tiny_encoder, tmp_path, composite="always")
    doc = doc_with("breast and ovarian cancer", [("breast and ovarian cancer", "Disease")])
    [pred] = normalizer.rank(normalizer.queries([doc]), ["O-T"])["O-T"]
    assert pred.concept_ids == ["D001943", "D010051"] and pred.spelling_share == 1.0
