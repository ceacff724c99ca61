"""The spaCy component: ``spacy.blank("en").add_pipe("e2e_linker")`` through the entry point,
entities with concept IDs, types and scores at the Linker's own offsets."""

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
            assert ent._.mention_score == m.mention_score
            assert ent._.link_score == m.link_score
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
