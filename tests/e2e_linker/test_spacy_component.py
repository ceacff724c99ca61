"""The spaCy component: ``spacy.blank("en").add_pipe("e2e_linker")`` through the entry point,
entities with concept IDs, types and scores at the Linker's own offsets; one namespaced
``kb_id_`` with a composite's parts as ``ent._.concept_ids``, and a gene's species."""

from __future__ import annotations

import pytest

spacy = pytest.importorskip("spacy")

from e2e_linker.api import Linker  # noqa: E402
from tests.helpers.tiny_linker import tiny_linker_dir  # noqa: E402

TEXTS = ["Aspirin caused a headache.",
         "Ibuprofen (ä ß é) and nausea; αβ-blocker 🙂 with aspirin and café headache.",
         "Nothing here.", "Nausea after ibuprofen."]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("spacy")
    directory, _ = tiny_linker_dir(root / "tiny")
    config = {"model_dir": str(directory), "cache_dir": str(root / "cache"), "batch_size": 2}
    nlp = spacy.blank("en")
    nlp.add_pipe("e2e_linker", config=config)
    linker = Linker.load(directory, cache_dir=str(root / "cache"))
    return nlp, linker


def test_the_factory_is_registered_through_the_entry_point():
    from importlib.metadata import entry_points

    [point] = [p for p in entry_points(group="spacy_factories") if p.name == "e2e_linker"]
    assert point.value == "e2e_linker.spacy_component:make_component"


def test_pipe_fills_ents_with_ids_labels_and_scores(setup):
    nlp, linker = setup
    docs = list(nlp.pipe(TEXTS, batch_size=2))
    assert [d.text for d in docs] == TEXTS
    assert sum(len(d.ents) for d in docs) > 0
    for doc, text in zip(docs, TEXTS, strict=True):
        mentions = {(m.start, m.end): m for m in linker(text)}
        for ent in doc.ents:
            m = mentions[(ent.start_char, ent.end_char)]  # token-aligned on this text
            assert ent.label_ == m.type and ent.kb_id_ == (m.concept_id or "")
            assert ent._.concept_ids == ([m.concept_id] if m.concept_id else [])
            assert ent._.mention_score == m.mention_score
            assert ent._.link_score == m.link_score
            assert ent._.confidence == m.confidence and 0.0 <= ent._.confidence <= 1.0
            assert ent._.concept_name == m.concept_name
        starts = [e.start for e in doc.ents]
        assert starts == sorted(starts)  # no overlaps: spaCy would refuse them anyway
    # one call and the batched pipe agree
    assert [(e.start_char, e.end_char, e.kb_id_) for e in nlp(TEXTS[1]).ents] == \
        [(e.start_char, e.end_char, e.kb_id_) for e in docs[1].ents]


def test_mentions_inside_tokens_expand_and_overlaps_are_filtered():
    from spacy.tokens import Span  # noqa: F401  (extensions are registered on Span)

    from e2e_linker.api import Mention
    from e2e_linker.spacy_component import LinkerComponent

    nlp = spacy.blank("en")
    doc = nlp("αβ-blockers help")
    mentions = [Mention(1, 2, "β", "Chemical", "C1", "beta", 0.9, 0.5),
                Mention(0, 11, "αβ-blockers", "Chemical", "C2", None, 0.8, 0.4)]
    LinkerComponent.set_entities(doc, mentions)
    [ent] = doc.ents
    assert (ent.start_char, ent.end_char, ent.kb_id_) == (0, 11, "C2")
    assert ent._.mention_score == 0.8 and ent._.concept_name is None


def test_one_kb_id_the_parts_and_the_species_as_extensions():
    from e2e_linker.api import Mention
    from e2e_linker.spacy_component import LinkerComponent

    nlp = spacy.blank("en")
    doc = nlp("Il6 and Tnf genes in rats")
    mentions = [Mention(0, 11, "Il6 and Tnf", "Gene", "NCBIGene:24498|NCBIGene:24835", None,
                        0.9, None, "NCBITaxon:10116", "Rattus norvegicus"),
                Mention(21, 25, "rats", "Species", "NCBITaxon:10116", "Rattus norvegicus",
                        0.8, 0.7)]
    LinkerComponent.set_entities(doc, mentions)
    gene, rat = doc.ents
    assert gene.kb_id_ == "NCBIGene:24498"  # spaCy's one ID: the first part
    assert gene._.concept_ids == ["NCBIGene:24498", "NCBIGene:24835"]
    assert (gene._.species, gene._.species_name) == ("NCBITaxon:10116", "Rattus norvegicus")
    assert rat.kb_id_ == "NCBITaxon:10116" and rat._.concept_ids == ["NCBITaxon:10116"]
    assert rat._.species is None and rat._.concept_name == "Rattus norvegicus"


def test_the_component_shows_the_linkers_record(tmp_path):
    """With a KB of the real sources the entities carry namespaced IDs and genes' species,
    the Linker's own."""
    from tests.helpers.namespaced_kb import RAT, namespaced_kb_spec

    directory, _ = tiny_linker_dir(tmp_path / "tiny")
    options = {"cache_dir": str(tmp_path / "cache"), "kb": namespaced_kb_spec(tmp_path)}
    nlp = spacy.blank("en")
    nlp.add_pipe("e2e_linker", config={"model_dir": str(directory), **options})
    linker = Linker.load(directory, **options)
    ents = [e for text in TEXTS for e in nlp(text).ents]
    assert ents and all(e.kb_id_.startswith(("MESH:", "NCBIGene:", "NCBITaxon:"))
                        for e in ents)
    genes = [e for e in ents if e.kb_id_.startswith("NCBIGene:")]
    assert genes and all(e._.species == RAT for e in genes)
    found = {(m.start, m.end): m for text in TEXTS[:1] for m in linker(text)}
    for ent in nlp(TEXTS[0]).ents:
        m = found[ent.start_char, ent.end_char]
        assert (ent.kb_id_, ent._.species, ent._.species_name) == \
            (m.concept_id, m.species, m.species_name)


def test_kb_ents_rank_the_chosen_concept_first_and_share_the_rest():
    """scispacy's ``kb_ents``: the chosen concept (each part of a composite) with the
    mention's confidence, then the other candidates sharing 1 − confidence by the softmax of
    their scores, none above the chosen one; nothing for an unlinked mention."""
    import math

    from e2e_linker.api import Mention
    from e2e_linker.spacy_component import LinkerComponent, ranked_candidates

    ranked = (("MESH:D002945", 33.9), ("MESH:C1", 27.0), ("MESH:C2", 26.0))
    cisplatin = Mention(0, 9, "Cisplatin", "Chemical", "MESH:D002945", "Cisplatin", 0.99,
                        33.9, confidence=0.9, candidates=ranked)
    pairs = ranked_candidates(cisplatin)
    assert [cid for cid, _ in pairs] == ["MESH:D002945", "MESH:C1", "MESH:C2"]
    assert pairs[0][1] == 0.9
    share = 1 / (1 + math.exp(-1.0))
    assert pairs[1][1] == pytest.approx(0.1 * share, abs=1e-4)
    assert pairs[2][1] == pytest.approx(0.1 * (1 - share), abs=1e-4)
    assert sum(c for _, c in pairs) == pytest.approx(1.0, abs=1e-3)
    # a sieve chose a concept the dense ranking put second: the rest never outrank it
    unsure = Mention(0, 3, "x", "Chemical", "MESH:C2", None, 0.5, None, confidence=0.2,
                     candidates=ranked)
    pairs = ranked_candidates(unsure)
    assert pairs[0] == ("MESH:C2", 0.2) and all(c <= 0.2 for _, c in pairs)
    # a composite: each part first; names-only scores share equally; unlinked: nothing
    both = Mention(0, 3, "x", "Gene", "NCBIGene:1|NCBIGene:2", None, 1.0, None,
                   confidence=0.8, candidates=(("NCBIGene:1", 0.0), ("NCBIGene:3", 0.0),
                                               ("NCBIGene:4", 0.0)))
    assert ranked_candidates(both) == [("NCBIGene:1", 0.8), ("NCBIGene:2", 0.8),
                                       ("NCBIGene:3", 0.1), ("NCBIGene:4", 0.1)]
    assert ranked_candidates(Mention(0, 1, "x", "Chemical", None, None, 0.5, None,
                                     confidence=0.3)) == []
    doc = spacy.blank("en")("Cisplatin")
    LinkerComponent.set_entities(doc, [cisplatin])
    assert doc.ents[0]._.kb_ents == ranked_candidates(cisplatin)


def test_the_component_lists_the_linkers_candidates(setup):
    """Built by the factory, the linker explains: every linked entity's ``kb_ents`` starts
    with its ``kb_id_`` at its confidence and lists the ranking after it, in [0, 1]."""
    nlp, _ = setup
    ents = [e for doc in nlp.pipe(TEXTS) for e in doc.ents if e.kb_id_]
    assert ents
    for ent in ents:
        ids = [cid for cid, _ in ent._.kb_ents]
        assert ids[0] == ent.kb_id_ and ent._.kb_ents[0][1] == ent._.confidence
        assert all(0.0 <= c <= ent._.confidence for _, c in ent._.kb_ents)
    assert any(len(e._.kb_ents) > 1 for e in ents)
