"""The normalizer's text pools: training triples (composites, abbreviation expansion, types)
and the pairing of a composite's parts with its IDs."""

from __future__ import annotations

from data_tools.documents import Annotation
from data_tools.kb import KB, Concept
from e2e_linker.lexical.text_forms import TextNormalizer
from e2e_linker.normalizer.pools import (
    align_parts,
    mention_ids,
    ontology_pool,
    synonym_pool,
    training_triples,
)
from tests.helpers.small_kb import doc_with, small_kb


def test_training_triples_use_gold_composite_parts():
    doc = doc_with("breast and ovarian cancer", [("breast and ovarian cancer", "Disease")])
    ann = doc.annotations[0]
    ann.concept_ids = ["D001943", "D010051"]
    ann.composite_texts = ["breast cancer", "ovarian cancer"]
    triples = training_triples([doc], TextNormalizer(), small_kb())
    assert ("breast and ovarian cancer", "D001943|D010051", "Disease") in triples
    assert ("breast cancer", "D001943", "Disease") in triples
    assert ("ovarian cancer", "D010051", "Disease") in triples


def test_composite_parts_are_paired_with_ids_by_name_not_position():
    """NCBI lists composite IDs in any order: "breast and ovarian cancer" → D010051|D001943."""
    doc = doc_with("breast and ovarian cancer", [("breast and ovarian cancer", "Disease")])
    doc.annotations[0].concept_ids = ["D010051", "D001943"]
    triples = training_triples([doc], TextNormalizer(), small_kb())
    assert ("breast cancer", "D001943", "Disease") in triples
    assert ("ovarian cancer", "D010051", "Disease") in triples
    assert align_parts(["foo", "bar"], ["D010051", "D001943"], small_kb(), TextNormalizer()) is None


def test_heuristic_composite_split_gives_parts_and_the_whole():
    """Without gold parts the split is used; the whole text is labelled with every ID and its
    type is the KB type an NCBI class stands for."""
    doc = doc_with("breast and ovarian cancer", [("breast and ovarian cancer", "CompositeMention")])
    doc.annotations[0].concept_ids = ["MESH:D001943", "MESH:D010051"]
    triples = training_triples([doc], TextNormalizer(), small_kb())
    assert sorted(triples) == [("breast and ovarian cancer", "D001943|D010051", "Disease"),
                               ("breast cancer", "D001943", "Disease"),
                               ("ovarian cancer", "D010051", "Disease")]


def test_a_short_form_is_added_a_second_time_expanded():
    text = "Temporal lobe epilepsy (TLE) was seen; TLE recurred."
    doc = doc_with(text, [("TLE", "Disease")])
    doc.annotations[0].start = text.rindex("TLE")  # the second TLE, after the definition
    doc.annotations[0].end = doc.annotations[0].start + 3
    doc.annotations[0].concept_ids = ["D004833"]
    assert sorted(training_triples([doc], TextNormalizer(), small_kb())) == [
        ("temporal lobe epilepsy", "D004833", "Disease"), ("tle", "D004833", "Disease")]
    assert training_triples([doc], TextNormalizer(), small_kb(), abbreviations=False) == [
        ("tle", "D004833", "Disease")]


def test_types_filter_and_mentions_without_concepts():
    doc = doc_with("Aspirin and a heart attack and fever",
               [("Aspirin", "Chemical"), ("heart attack", "Disease"), ("fever", "Disease")])
    doc.annotations[0].concept_ids = ["C001"]
    doc.annotations[1].concept_ids = ["D009203"]
    doc.annotations[2].concept_ids = [" "]  # no concept: not a training mention
    assert training_triples([doc], TextNormalizer(), small_kb()) == [
        ("aspirin", "C001", "Chemical"), ("heart attack", "D009203", "Disease")]
    assert training_triples([doc], TextNormalizer(), small_kb(), types=["Chemical"]) == [
        ("aspirin", "C001", "Chemical")]
    # without a KB the annotation's own type is used, NCBI classes mapped to Disease
    doc.annotations[1].type = "SpecificDisease"
    assert training_triples([doc], TextNormalizer(), None)[1] == (
        "heart attack", "D009203", "Disease")


def test_mention_ids_strip_the_mesh_prefix_and_resolve_through_thesmall_kb():
    kb = KB([Concept("D001", "a", [], "Disease", alt_ids=["D999"])])
    ann = Annotation(0, 1, "a", "Disease", ["mesh:D999", "OMIM:123", " "])
    assert mention_ids(ann) == ["D999", "OMIM:123"]
    assert mention_ids(ann, kb) == ["D001", "OMIM:123"]


def test_align_parts_reorders_parts_to_match_the_ids():
    text = TextNormalizer()
    assert align_parts(["ovarian cancer", "breast cancer"], ["D001943", "D010051"], small_kb(),
                       text) == ["breast cancer", "ovarian cancer"]
    assert align_parts(["breast cancer", "ovarian cancer"], ["D001943", "D010051"], small_kb(),
                       text) == ["breast cancer", "ovarian cancer"]
    # no KB: positional; a count mismatch or a single part: no pairing
    assert align_parts(["ovarian cancer", "breast cancer"], ["D001943", "D010051"], None,
                       text) == ["ovarian cancer", "breast cancer"]
    assert align_parts(["breast cancer"], ["D001943", "D010051"], small_kb(), text) is None
    assert align_parts(["breast cancer"], ["D001943"], small_kb(), text) is None
    # an ID the KB lacks overlaps nothing: no confident pairing
    assert align_parts(["breast cancer", "ovarian cancer"], ["D001943", "D404"], small_kb(),
                       text) is None


def test_ontology_and_synonym_pools_label_every_name():
    text = TextNormalizer()
    pool = ontology_pool(small_kb(), text)
    pairs = {(t, label) for t, labels in zip(pool.texts, pool.labels, strict=True)
             for label in labels}
    assert ("acetylsalicylic acid", "C001") in pairs and ("breast neoplasms", "D001943") in pairs
    assert len(pairs) == small_kb().num_names
    extra = synonym_pool(small_kb(), text, [("MESH:D009203", "Heart Attack")])
    assert list(extra.texts) == ["heart attack"] and list(extra.labels) == [("D009203",)]
