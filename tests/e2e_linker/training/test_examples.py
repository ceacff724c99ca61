"""Training examples of the collective model: gold mentions placed in chunk token positions,
with what counts for linking and what is skipped, counted."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.encoder.text_encoder import load_tokenizer
from e2e_linker.training.examples import build_examples

TEXT = "Aspirin caused acute renal failure and breast and ovarian cancer in mice."


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(None)


def _doc() -> Document:
    doc = Document("1", [Passage(0, TEXT, {})])

    def add(surface, type_, ids, **infons):
        start = TEXT.index(surface)
        ann = Annotation(start, start + len(surface), surface, type_, ids)
        ann.infons.update(infons)
        doc.add_annotation(ann)

    add("Aspirin", "Chemical", ["MESH:C1"])
    add("acute renal failure", "Disease", ["D9"])  # a concept the KB lacks
    add("breast and ovarian cancer", "Disease", ["D1", "D2"])  # composite
    add("mice", "Species", ["10090"])  # a type the model does not predict
    add("ovarian cancer", "Disease", ["D2"], CompositeRole="IndividualMention")  # not counted
    return doc


def test_gold_spans_and_linking_targets(tokenizer):
    examples, stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"],
                                     {"C1", "D1", "D2"})
    assert stats == {"mentions": 4, "too_long": 0, "unaligned": 0, "linkable": 1, "capped": 0,
                     "unknown_type": 1, "ignored": 0, "unknown_types": {"Species": 1}}
    (example,) = examples
    tokens = tokenizer.convert_ids_to_tokens(example.chunk.input_ids)
    got = [(s.text, s.type_index, s.concept_id, tokens[s.i:s.j + 1]) for s in example.spans]
    assert got == [
        ("Aspirin", 0, "C1", ["as", "##pi", "##rin"]),
        ("acute renal failure", 1, None, ["acute", "renal", "failure"]),
        ("breast and ovarian cancer", 1, None,
         ["breast", "and", "o", "##var", "##ian", "cancer"]),
    ]
    # without a KB to check against, any single ID is a linking target
    examples, stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"], None)
    assert [s.concept_id for s in examples[0].spans] == ["C1", "D9", None]
    assert stats["linkable"] == 2


def test_an_id_the_vocabulary_replaced_trains_the_concept_that_replaced_it(tokenizer):
    """The KB's mined names moved atorvastatin's C065179 to D000069059 (e2e_linker.replaced_ids);
    a gold mention still citing C065179 links to it, and to nothing in a KB without it."""
    doc = Document("1", [Passage(0, "Atorvastatin helps.", {})])
    doc.add_annotation(Annotation(0, 12, "Atorvastatin", "Chemical", ["C065179"]))
    examples, stats = build_examples([doc], tokenizer, ["Chemical"], {"D000069059"})
    assert [s.concept_id for s in examples[0].spans] == ["D000069059"]
    assert stats["linkable"] == 1
    examples, stats = build_examples([doc], tokenizer, ["Chemical"], {"D013629"})
    assert [s.concept_id for s in examples[0].spans] == [None] and stats["linkable"] == 0


def test_long_spans_and_the_per_chunk_cap_are_counted(tokenizer):
    _, stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"], None, max_span_len=4)
    assert stats["too_long"] == 1  # the composite's six tokens
    examples, stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"], None,
                                     max_mentions_per_chunk=2)
    assert stats["capped"] == 1 and len(examples[0].spans) == 2


def test_a_span_inside_a_word_takes_the_covering_tokens_and_one_on_no_token_is_unaligned(
        tokenizer):
    doc = Document("2", [Passage(0, TEXT, {})])
    start = TEXT.index("spiri")
    doc.add_annotation(Annotation(start, start + 5, "spiri", "Chemical", ["C1"]))
    space = TEXT.index(" caused")
    doc.add_annotation(Annotation(space, space + 1, " ", "Chemical", ["C1"]))
    examples, stats = build_examples([doc], tokenizer, ["Chemical"], None)
    assert stats["unaligned"] == 1 and stats["mentions"] == 2
    (span,) = examples[0].spans
    assert tokenizer.convert_ids_to_tokens(examples[0].chunk.input_ids)[span.i:span.j + 1] == \
        ["as", "##pi", "##rin"]


def test_a_partial_corpus_marks_its_annotated_types_and_ignore_spans(tokenizer):
    doc = _doc()
    start = TEXT.index("mice")
    doc.add_annotation(Annotation(start, start + 4, "mice", "FamilyName", []))
    types = ["Chemical", "Disease", "Gene"]
    examples, stats = build_examples([doc], tokenizer, types, None, annotated=["Disease"],
                                     ignore_types={"FamilyName", "Species"}, corpus=3)
    (example,) = examples
    assert example.corpus == 3 and example.annotated == (False, True, False) and example.partial
    tokens = tokenizer.convert_ids_to_tokens(example.chunk.input_ids)
    assert [tokens[i:j + 1] for i, j in example.ignore] == [["mice"], ["mice"]]
    assert stats["ignored"] == 2 and stats["unknown_type"] == 0 and stats["mentions"] == 3
    # a corpus that annotates every type has no mask: the plain BCE path
    examples, _ = build_examples([_doc()], tokenizer, types, None, annotated=types)
    assert examples[0].annotated is None and not examples[0].partial


def test_epoch_examples_follow_the_weights_and_are_drawn_from_seed_and_epoch():
    from e2e_linker.training.examples import epoch_examples, epoch_size

    sizes = [4, 10, 3]
    assert epoch_examples(sizes, [1.0, 1.0, 1.0], seed=13, epoch=0) == list(range(17))
    order = epoch_examples(sizes, [2.0, 0.5, 1.0], seed=13, epoch=0)
    assert len(order) == epoch_size(sizes, [2.0, 0.5, 1.0]) == 8 + 5 + 3
    assert order[:8] == [0, 1, 2, 3] * 2 and order[-3:] == [14, 15, 16]
    half = order[8:13]
    assert len(set(half)) == 5 and all(4 <= k < 14 for k in half)
    assert epoch_examples(sizes, [2.0, 0.5, 1.0], seed=13, epoch=0) == order  # deterministic
    others = {tuple(epoch_examples(sizes, [2.0, 0.5, 1.0], seed=13, epoch=e)[8:13])
              for e in range(1, 6)}
    assert others - {tuple(half)}  # another half in other epochs
    assert epoch_examples(sizes, [1.5, 1.0, 0.4], seed=1, epoch=2)[:4] == [0, 1, 2, 3]
    assert epoch_size(sizes, [1.5, 1.0, 0.4]) == 6 + 10 + 1


def test_a_guideline_tag_moves_every_gold_span_one_position_on(tokenizer):
    plain, stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"], {"C1"})
    tag = tokenizer.convert_tokens_to_ids("[unused2]")
    tagged, tagged_stats = build_examples([_doc()], tokenizer, ["Chemical", "Disease"], {"C1"},
                                          prefix_ids=[tag])
    assert tagged_stats == stats
    assert tagged[0].chunk.input_ids[1] == tag
    assert [(s.i, s.j, s.text) for s in tagged[0].spans] == \
        [(s.i + 1, s.j + 1, s.text) for s in plain[0].spans]
