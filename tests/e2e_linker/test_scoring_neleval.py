"""Our scorer equals neleval itself: on the real BC5CDR baselines, edge cases and random documents.

neleval runs through eval.neleval_shim, which converts documents with the same
``mentions_of`` the scorer uses; the comparisons are on raw counts (ptp, fp, rtp, fn), so the
rates then agree to the last bit.
"""

from __future__ import annotations

import random

import pytest

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats import read_documents
from e2e_linker.scoring import merge_predictions, score
from eval.neleval_shim import import_neleval, neleval_scores, neleval_scores_by_type

MODES = ("strict", "partial", "mentions")


def _assert_counts(ours, theirs, what):
    assert ours.tp == pytest.approx(theirs["ptp"], abs=1e-9), what
    assert ours.rtp == pytest.approx(theirs["rtp"], abs=1e-9), what
    assert ours.fp == pytest.approx(theirs["fp"], abs=1e-9), what
    assert ours.fn == pytest.approx(theirs["fn"], abs=1e-9), what
    assert ours.precision == pytest.approx(theirs["precision"], abs=1e-12), what
    assert ours.recall == pytest.approx(theirs["recall"], abs=1e-12), what
    assert ours.f1 == pytest.approx(theirs["fscore"], abs=1e-12), what


def _assert_same(gold, pred, by_type=False):
    ref = neleval_scores(gold, pred, MODES)
    ref_types = neleval_scores_by_type(gold, pred, MODES) if by_type else {}
    for mode in MODES:
        ours = score(gold, pred, mode, by_type=by_type)
        _assert_counts(ours, ref[mode], mode)
        for typ, theirs in ref_types.get(mode, {}).items():
            _assert_counts(ours.per_type[typ], theirs, (mode, typ))
    return ref


def test_shim_imports_neleval_and_accepts_measure_names():
    neleval = import_neleval()
    assert hasattr(neleval.evaluate, "Evaluate")
    d = Document("1", [Passage(0, "x" * 20, {})],)
    d.add_annotation(Annotation(0, 5, "xxxxx", "T", ["D1"]))
    res = neleval_scores([d], [d], ["strong_all_match", "partial"])
    assert set(res) == {"strong_all_match", "partial"}
    assert res["strong_all_match"]["tp"] == 1 and res["partial"]["fscore"] == 1.0


def test_dnorm_tmchem_baseline_matches_neleval(shared_data, bc5cdr_test_docs):
    base = shared_data / "bc5cdr" / "baselines"
    pred = merge_predictions(read_documents(base / "TestSet.DNorm.PubTator.txt"),
                             read_documents(base / "TestSet.tmChem.PubTator.txt"))
    ref = _assert_same(bc5cdr_test_docs, pred, by_type=True)
    # sanity only (the exact values come from neleval above): the DNorm + tmChem ballpark
    assert 0.75 < ref["strict"]["fscore"] < ref["partial"]["fscore"] < ref["mentions"]["fscore"] < 0.9


def test_bioc_gold_scores_like_pubtator_gold(shared_data, bc5cdr_test_docs):
    bioc_gold = list(read_documents(shared_data / "bc5cdr" / "CDR_TestSet.BioC.xml"))
    pred = list(read_documents(shared_data / "bc5cdr" / "baselines" / "TestSet.DNorm.PubTator.txt"))
    for mode in MODES:
        assert score(bioc_gold, pred, mode).to_dict() == score(bc5cdr_test_docs, pred, mode).to_dict()


def _doc(doc_id, *anns):
    d = Document(doc_id, [Passage(0, "x" * 100, {})])
    for start, end, ids, *typ in anns:
        d.add_annotation(Annotation(start, end, "x" * (end - start), typ[0] if typ else "T", ids))
    return d


EDGE_CASES = {
    "sweep misses nested overlap": ([_doc("a", (0, 11, ["D1"]), (2, 4, ["D1"]))],
                                    [_doc("a", (5, 7, ["D1"]))]),
    "two predictions on one gold": ([_doc("a", (0, 10, ["D1"]))],
                                    [_doc("a", (0, 4, ["D1"]), (2, 10, ["D1"]))]),
    "duplicates": ([_doc("a", (0, 10, ["D1"]), (0, 10, ["D1"]))],
                   [_doc("a", (0, 10, ["D1"]), (0, 10, ["D1"]), (0, 10, ["D1"]))]),
    "NIL clusters": ([_doc("a", (0, 10, ["NIL1"]), (20, 30, ["NIL2"]))],
                     [_doc("a", (0, 10, ["NIL9"]), (22, 25, ["NIL2"]), (40, 45, ["NIL1"]))]),
    "composites and -1": ([_doc("a", (0, 10, ["D1", "D2"]), (20, 30, []))],
                          [_doc("a", (0, 10, ["D2", "D1"]), (20, 30, ["-1"]), (22, 24, []))]),
    "prefixes and spaces": ([_doc("a", (0, 10, ["D1"]))], [_doc("a", (0, 10, [" MESH:D1 "]))]),
    "documents on one side": ([_doc("a", (0, 10, ["D1"])), _doc("b")],
                              [_doc("c", (0, 10, ["D1"]))]),
    "empty prediction": ([_doc("a", (0, 10, ["D1"]))], []),
    "nothing at all": ([], []),
    "types differ": ([_doc("a", (0, 10, ["D1"], "Disease"), (20, 30, ["C1"], "Chemical"))],
                     [_doc("a", (0, 10, ["D1"], "Chemical"), (20, 30, ["C1"], "Chemical"))]),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_edge_cases_match_neleval(case):
    gold, pred = EDGE_CASES[case]
    _assert_same(gold, pred, by_type=True)


IDS = [["D1"], ["D2"], ["MESH:D3"], ["D1", "D2"], [], ["NIL1"], ["NIL2"]]


def _random_docs(rng, n_docs, n_anns):
    docs = []
    for k in range(n_docs):
        d = Document(str(k), [Passage(0, "x" * 120, {})])
        for _ in range(rng.randint(0, n_anns)):
            start = rng.randint(0, 110)
            end = start + rng.randint(1, 10)
            d.add_annotation(Annotation(start, end, "x" * (end - start), rng.choice("AB"),
                                        list(rng.choice(IDS))))
        docs.append(d)
    return docs


@pytest.mark.parametrize("seed", range(40))
def test_random_overlapping_documents_match_neleval(seed):
    rng = random.Random(seed)
    gold = _random_docs(rng, rng.randint(1, 4), 14)
    pred = _random_docs(rng, rng.randint(0, 5), 10)
    # near misses of gold mentions: exact copies, shifted/stretched spans, wrong IDs, duplicates
    for g, p in zip(gold, pred, strict=False):
        for a in g.annotations:
            if rng.random() < 0.4:
                continue
            start = max(0, a.start + rng.choice([0, 0, 0, 1, -1, 3]))
            end = max(start + 1, a.end + rng.choice([0, 0, 2, -1]))
            ids = list(a.concept_ids) if rng.random() < 0.7 else list(rng.choice(IDS))
            for _ in range(rng.choice([1, 1, 1, 2])):
                p.add_annotation(Annotation(start, end, "x", rng.choice([a.type, "A"]), ids))
    _assert_same(gold, pred, by_type=True)
