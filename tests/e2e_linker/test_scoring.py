"""Scoring semantics on hand-built documents with known answers (neleval's, worked out by hand).

Offsets here are ours (end exclusive); the comments give neleval's inclusive ends where the
arithmetic needs them.
"""

from __future__ import annotations

import json

import pytest

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats.namespaces import namespaced_id
from e2e_linker.scoring import merge_predictions, score


def doc(*anns, doc_id="d1"):
    """One 200-char document; each ann is (start, end, ids[, type])."""
    d = Document(doc_id, [Passage(0, "x" * 200, {"type": "title"})])
    for start, end, ids, *rest in anns:
        d.add_annotation(Annotation(start, end, "x" * (end - start), rest[0] if rest else "Disease",
                                    list(ids)))
    return d


def counts(report):
    return report.tp, report.fp, report.fn


def test_strict_partial_mentions_by_hand():
    gold = [doc((0, 10, ["D1"]), (20, 30, ["D2"]), (40, 50, ["D3"]))]
    pred = [doc((0, 10, ["MESH:D1"]), (20, 25, ["D2"]), (40, 50, ["D9"]), (60, 70, ["D4"]))]
    strict = score(gold, pred, "strict")
    assert counts(strict) == (1, 3, 2)
    assert strict.precision == pytest.approx(0.25) and strict.recall == pytest.approx(1 / 3)
    mentions = score(gold, pred, "mentions")
    assert counts(mentions) == (2, 2, 1)
    partial = score(gold, pred, "partial")
    # system 20-25 covers 5 of gold's 10 chars: gold side 0.5; system side covers itself fully
    assert partial.rtp == pytest.approx(1 + 0.5)
    assert partial.tp == pytest.approx(2)
    assert partial.precision == pytest.approx(2 / 4) and partial.recall == pytest.approx(1.5 / 3)


def test_partial_takes_the_best_overlap_on_each_side():
    # gold 0-10 overlapped by two predictions: one gold mention justifies both (max-max)
    gold = [doc((0, 10, ["D1"]))]
    pred = [doc((0, 4, ["D1"]), (2, 10, ["D1"]))]
    partial = score(gold, pred, "partial")
    assert partial.tp == pytest.approx(2) and partial.fp == pytest.approx(0)
    assert partial.rtp == pytest.approx(0.8) and partial.fn == pytest.approx(0.2)  # 8 of 10 chars
    assert partial.precision == pytest.approx(1.0) and partial.recall == pytest.approx(0.8)
    # and one prediction may cover two gold mentions
    two = score([doc((0, 4, ["D1"]), (6, 10, ["D1"]))], [doc((0, 10, ["D1"]))], "partial")
    assert two.rtp == pytest.approx(2) and two.tp == pytest.approx(0.4)  # 4 of its 10 chars


def test_partial_needs_the_same_concept_and_document():
    gold = [doc((0, 10, ["D1"])), doc((0, 10, ["D1"]), doc_id="d2")]
    pred = [doc((2, 8, ["D2"])), doc((20, 30, ["D1"]), doc_id="d2"), doc((0, 10, ["D1"]), doc_id="d3")]
    partial = score(gold, pred, "partial")
    assert counts(partial) == (0, 3, 2)


def test_partial_reproduces_nelevals_sweep_which_can_miss_an_overlap():
    # gold 0-11 and 2-4, system 5-7, same concept. True overlap: system lies inside gold 0-11.
    # neleval sweeps from the right over both lists sorted by (start, -end): it compares the system
    # mention with gold 2-4 (no overlap), pops the system mention and never sees gold 0-11.
    gold = [doc((0, 11, ["D1"]), (2, 4, ["D1"]))]
    pred = [doc((5, 7, ["D1"]))]
    partial = score(gold, pred, "partial")
    assert counts(partial) == (0, 1, 2) and partial.rtp == 0
    # without the short gold mention the overlap is found: 2 of gold's 11 chars
    found = score([doc((0, 11, ["D1"]))], pred, "partial")
    assert found.tp == pytest.approx(1) and found.rtp == pytest.approx(2 / 11)


def test_missing_and_extra_documents():
    gold = [doc((0, 10, ["D1"])), doc((0, 10, ["D2"]), doc_id="d2")]
    pred = [doc((0, 10, ["D1"])), doc((0, 10, ["D3"]), doc_id="d3")]
    for mode in ("strict", "mentions", "partial"):
        assert counts(score(gold, pred, mode)) == (1, 1, 1), mode


def test_type_is_not_part_of_the_match():
    gold = [doc((0, 10, ["D1"], "Disease"))]
    pred = [doc((0, 10, ["D1"], "Chemical"))]
    assert score(gold, pred).f1 == 1.0
    by_type = score(gold, pred, by_type=True)
    assert counts(by_type.per_type["Disease"]) == (0, 0, 1)
    assert counts(by_type.per_type["Chemical"]) == (0, 1, 0)


def test_composite_and_no_concept_ids():
    gold = [doc((0, 10, ["D1", "D2"]), (20, 30, []))]
    assert score(gold, [doc((0, 10, ["D1|D2"]), (20, 30, []))]).f1 == 1.0
    # composites compare as the joined string, so the order of parts matters in strict mode
    assert score(gold, [doc((0, 10, ["D2", "D1"]), (20, 30, []))]).tp == 1
    assert counts(score(gold, [doc((0, 10, ["D1"]), (20, 30, ["-1"]))])) == (1, 1, 1)
    # "-1" (no concept) is an ID like any other: a concept predicted on a -1 span is wrong
    assert counts(score(gold, [doc((0, 10, ["D1", "D2"]), (20, 30, ["D5"]))])) == (1, 1, 1)
    assert score(gold, [doc((0, 10, [" MESH:D1", "mesh:D2 "]), (20, 30, []))]).f1 == 1.0


def test_nil_clusters_match_each_other_like_neleval():
    gold = [doc((0, 10, ["NIL1"]))]
    assert score(gold, [doc((0, 10, ["NIL7"]))]).tp == 1
    assert score(gold, [doc((2, 8, ["NIL7"]))], "partial").tp == pytest.approx(1)
    assert score(gold, [doc((0, 10, ["D1"]))]).tp == 0


def test_unlinked_mentions_are_not_scored():
    gold = [doc((0, 10, ["D1"]))]
    pred = doc((0, 10, ["D1"]), (20, 30, []))
    pred.annotations[1].no_id = True
    assert score(gold, [pred], "mentions").fp == 0


def test_composite_parts_from_bioc_are_skipped_unless_asked():
    gold = doc((0, 10, ["D1", "D2"]), (0, 4, ["D1"]), (6, 10, ["D2"]))
    gold.annotations[0].infons["CompositeRole"] = "CompositeMention"
    for ann in gold.annotations[1:]:
        ann.infons["CompositeRole"] = "IndividualMention"
    pred = [doc((0, 10, ["D1", "D2"]))]
    assert counts(score([gold], pred)) == (1, 0, 0)
    assert counts(score([gold], pred, include_parts=True)) == (1, 0, 2)


def test_duplicates_count_once_in_sets_but_twice_in_partial_like_neleval():
    gold = [doc((0, 10, ["D1"]))]
    pred = [doc((0, 10, ["D1"]), (0, 10, ["D1"]))]
    assert counts(score(gold, pred)) == (1, 0, 0)
    # the sweep pairs gold with one copy only; the other copy is a whole false positive
    assert counts(score(gold, pred, "partial")) == (1, 1, 0)


def test_empty_prediction_and_empty_everything_give_zero_not_nan():
    gold = [doc((0, 10, ["D1"]))]
    for mode in ("strict", "partial", "mentions"):
        empty = score(gold, [], mode)
        assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
        assert counts(empty) == (0, 0, 1)
        nothing = score([], [], mode)
        assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)
    assert score([], [], "accuracy").accuracy == 0.0


def test_accuracy_requires_every_part():
    gold = [doc((0, 10, ["D1", "D2"]), (20, 30, ["D3"]), (40, 50, []))]
    pred = [doc((0, 10, ["D1"]), (20, 30, ["D3"]), (40, 50, ["D7"]))]
    acc = score(gold, pred, "accuracy")
    assert acc.accuracy == 0.5 and acc.n == 2  # the -1 gold mention is not counted
    both = [doc((0, 10, ["D2", "MESH:D1"]), (20, 30, ["D3"]))]  # parts compare as a set
    assert score(gold, both, "accuracy").accuracy == 1.0
    extra = [doc((0, 10, ["D1", "D2", "D4"]), (20, 30, ["D3"]))]
    assert score(gold, extra, "accuracy").accuracy == 0.5
    shifted = [doc((0, 9, ["D1", "D2"]), (20, 30, ["D3"]))]  # not at the gold span: wrong
    assert score(gold, shifted, "accuracy").accuracy == 0.5
    assert score(gold, [doc((0, 10, ["X"]))], "accuracy", resolve=lambda c: "D3").n == 2
    d = score(gold, pred, "accuracy").to_dict()
    assert d["accuracy"] == d["precision"] == d["recall"] == d["f1"] == 0.5 and d["n"] == 2


def test_by_type_report_dict_and_table():
    gold = [doc((0, 10, ["D1"], "Disease"), (20, 30, ["C1"], "Chemical"))]
    pred = [doc((0, 10, ["D1"], "Disease"))]
    report = score(gold, pred, by_type=True)
    assert report.per_type["Disease"].f1 == 1.0 and report.per_type["Chemical"].recall == 0.0
    as_dict = json.loads(json.dumps(report.to_dict()))
    assert {"precision", "recall", "f1", "tp", "fp", "fn"} <= set(as_dict)
    assert set(as_dict["by_type"]) == {"Chemical", "Disease"}
    table = report.format_table().splitlines()
    assert table[0].split("\t") == ["strict", "precision", "recall", "f1", "tp", "fp", "fn"]
    assert [row.split("\t")[0] for row in table[1:]] == ["all", "Chemical", "Disease"]
    acc = score(gold, pred, "accuracy", by_type=True)
    assert acc.per_type["Chemical"].accuracy == 0.0 and acc.per_type["Disease"].accuracy == 1.0
    assert "accuracy" in acc.format_table()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="mode"):
        score([], [], "fuzzy")
    with pytest.raises(ValueError, match="empty span"):
        score([doc((5, 5, ["D1"]))], [])


def test_merge_predictions_joins_by_document_without_touching_inputs():
    a = [doc((0, 10, ["D1"]), doc_id="1"), doc(doc_id="2")]
    b = [doc((20, 30, ["C1"]), doc_id="1"), doc((0, 5, ["C2"]), doc_id="3")]
    merged = merge_predictions(a, b)
    assert [d.id for d in merged] == ["1", "2", "3"]
    assert len(merged[0].annotations) == 2
    assert len(a[0].annotations) == 1
    merged_gen = merge_predictions(iter(a), (d for d in b))
    assert sum(len(d.annotations) for d in merged_gen) == 3


def test_ids_compare_across_prefix_styles():
    """Gold as corpora write it (bare MeSH and gene IDs, a PubTator file's bare taxon) against
    the linker's namespaced IDs: every mode matches them; an ID whose prefix is part of it
    (OMIM) does not lose it."""
    gold = [doc((0, 10, ["D013629"], "Chemical"), (20, 30, ["672"], "Gene"),
                (40, 50, ["10116"], "Species"), (60, 70, ["D000001", "C000002"]),
                (80, 90, ["OMIM:613162"]))]
    pred = [doc((0, 10, ["MESH:D013629"], "Chemical"), (20, 30, ["NCBIGene:672"], "Gene"),
                (40, 50, ["NCBITaxon:10116"], "Species"),
                (60, 70, ["mesh:D000001", "MESH:C000002"]), (80, 90, ["613162"]))]
    for mode in ("strict", "partial", "accuracy"):
        report = score(gold, pred, mode)
        assert (report.tp, report.fn) == (4, 1), mode
    # ``resolve`` sees the KB's keys (``D2``, ``672``), whatever the prefix
    primary = {"D2": "D1", "HGNC:1100": "672"}.get
    mapped = score([doc((0, 10, ["D1"]), (20, 30, ["HGNC:1100"]))],
                   [doc((0, 10, ["MESH:D2"]), (20, 30, ["NCBIGene:672"]))], "strict",
                   resolve=lambda cid: primary(cid, cid))
    assert counts(mapped) == (2, 0, 0)


def test_a_replaced_id_matches_the_id_that_replaced_it_on_either_side():
    """BC5CDR's atorvastatin (C065179, since made descriptor D000069059: the shipped table of
    e2e_linker.replaced_ids) matches either ID, alone or as a part of a composite; an ID not
    in the table still needs itself."""
    gold = [doc((0, 10, ["C065179"]), (20, 30, ["C065179", "D003920"]), (40, 50, ["D000069059"]),
                (60, 70, ["C000001"]))]
    pred = [doc((0, 10, ["MESH:D000069059"]), (20, 30, ["D000069059", "MESH:D003920"]),
                (40, 50, ["C065179"]), (60, 70, ["D000069470"]))]
    for mode in ("strict", "partial", "accuracy"):
        report = score(gold, pred, mode)
        assert (report.tp, report.fn) == (3, 1), mode
    # ``resolve`` (the KB's alternative IDs) comes first, then the table
    resolved = score([doc((0, 10, ["C065179"]))], [doc((0, 10, ["OLD"]))], "strict",
                     resolve=lambda cid: {"OLD": "C065179"}.get(cid, cid))
    assert counts(resolved) == (1, 0, 0)


def test_the_published_dnorm_tmchem_figures_hold_whatever_the_prediction_prefixes(
        shared_data, tmp_path):
    """The official DNorm + tmChem output (``MESH:D…``) against BC5CDR test gold (bare
    ``D…``): docs/scoring.md's figures, the same with the predictions' IDs bare, and the same
    through ``linker score`` on a namespaced BioC file."""
    from click.testing import CliRunner

    from data_tools.formats import read_documents, write_documents
    from e2e_linker.cli import main

    gold_file = shared_data / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    base = shared_data / "bc5cdr" / "baselines"
    files = [base / "TestSet.DNorm.PubTator.txt", base / "TestSet.tmChem.PubTator.txt"]
    gold = list(read_documents(gold_file))
    pred = merge_predictions(*(read_documents(f) for f in files))
    published = {"strict": (0.8459, 0.7743, 0.8085), "partial": (0.8658, 0.8002, 0.8317),
                 "mentions": (0.8973, 0.8213, 0.8576)}

    def figures(predicted):
        return {mode: tuple(round(x, 4) for x in (r.precision, r.recall, r.f1))
                for mode in published for r in [score(gold, predicted, mode)]}

    assert figures(pred) == published
    prefixed = sum(cid.startswith("MESH:") for d in pred for a in d.annotations
                   for cid in a.concept_ids)
    assert prefixed > 5000  # the predictions are namespaced, the gold is not
    assert not any(cid.startswith("MESH:") for d in gold for a in d.annotations
                   for cid in a.concept_ids)
    for d in pred:
        for a in d.annotations:
            a.concept_ids = [cid.removeprefix("MESH:") for cid in a.concept_ids]
    assert figures(pred) == published
    for d in pred:
        for a in d.annotations:
            a.concept_ids = [namespaced_id(cid, source="MeSH") for cid in a.concept_ids]
    namespaced = tmp_path / "pred.bioc.xml"
    write_documents(pred, namespaced)
    result = CliRunner().invoke(main, ["score", str(gold_file), str(namespaced), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert tuple(round(report[k], 4) for k in ("precision", "recall", "f1")) == \
        published["strict"]
