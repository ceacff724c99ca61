"""Scoring semantics on hand-built documents with known answers."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.scoring import merge_predictions, score


def doc(*anns, doc_id="d1"):
    d = Document(doc_id, [Passage(0, "x" * 200, {"type": "title"})])
    for start, end, ids, *rest in anns:
        d.add_annotation(Annotation(start, end, "x" * (end - start), rest[0] if rest else "Disease",
                                    list(ids)))
    return d


def test_strict_partial_mentions_by_hand():
    gold = [doc((0, 10, ["D1"]), (20, 30, ["D2"]), (40, 50, ["D3"]))]
    pred = [doc((0, 10, ["MESH:D1"]), (20, 25, ["D2"]), (40, 50, ["D9"]), (60, 70, ["D4"]))]
    strict = score(gold, pred, "strict")
    assert (strict.tp, strict.fp, strict.fn) == (1, 3, 2)
    assert strict.precision == pytest.approx(0.25) and strict.recall == pytest.approx(1 / 3)
    mentions = score(gold, pred, "mentions")
    assert (mentions.tp, mentions.fp, mentions.fn) == (2, 2, 1)
    partial = score(gold, pred, "partial")
    # system 20-25 covers 5 of gold's 10 chars: gold side 0.5; system side covers itself fully
    assert partial.rtp == pytest.approx(1 + 0.5)
    assert partial.tp == pytest.approx(2)
    assert partial.precision == pytest.approx(2 / 4) and partial.recall == pytest.approx(1.5 / 3)


def test_composite_and_no_concept_ids():
    gold = [doc((0, 10, ["D1", "D2"]), (20, 30, []))]
    assert score(gold, [doc((0, 10, ["D1|D2"]), (20, 30, []))]).f1 == 1.0
    assert score(gold, [doc((0, 10, ["D2", "D1"]), (20, 30, []))]).tp == 1  # order matters as a string


def test_unlinked_mentions_are_not_scored():
    gold = [doc((0, 10, ["D1"]))]
    pred = doc((0, 10, ["D1"]), (20, 30, []))
    pred.annotations[1].no_id = True
    assert score(gold, [pred], "mentions").fp == 0


def test_accuracy_requires_every_part():
    gold = [doc((0, 10, ["D1", "D2"]), (20, 30, ["D3"]), (40, 50, []))]
    pred = [doc((0, 10, ["D1"]), (20, 30, ["D3"]), (40, 50, ["D7"]))]
    acc = score(gold, pred, "accuracy")
    assert acc.accuracy == 0.5 and acc.n == 2
    both = [doc((0, 10, ["D2", "D1"]), (20, 30, ["D3"]))]
    assert score(gold, both, "accuracy").accuracy == 1.0
    assert score(gold, [doc((0, 10, ["X"]))], "accuracy", resolve=lambda c: "D3").n == 2


def test_by_type_and_empty_prediction():
    gold = [doc((0, 10, ["D1"], "Disease"), (20, 30, ["C1"], "Chemical"))]
    pred = [doc((0, 10, ["D1"], "Disease"))]
    report = score(gold, pred, by_type=True)
    assert report.per_type["Disease"].f1 == 1.0 and report.per_type["Chemical"].recall == 0.0
    empty = score(gold, [], "strict")
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    as_dict = report.to_dict()
    assert {"precision", "recall", "f1", "tp", "fp", "fn"} <= set(as_dict)


def test_duplicates_count_once_like_neleval():
    gold = [doc((0, 10, ["D1"]))]
    assert score(gold, [doc((0, 10, ["D1"]), (0, 10, ["D1"]))]).fp == 0


def test_merge_predictions_joins_by_document():
    a = [doc((0, 10, ["D1"]), doc_id="1"), doc(doc_id="2")]
    b = [doc((20, 30, ["C1"]), doc_id="1"), doc((0, 5, ["C2"]), doc_id="3")]
    merged = merge_predictions(a, b)
    assert [d.id for d in merged] == ["1", "2", "3"]
    assert len(merged[0].annotations) == 2
