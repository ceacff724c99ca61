"""Our scorer equals neleval itself: on the real BC5CDR baselines and on random documents."""

from __future__ import annotations

import random

import pytest

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats import read_documents
from e2e_linker.neleval_shim import neleval_scores
from e2e_linker.scoring import merge_predictions, score

MODES = ("strict", "partial", "mentions")


def _assert_same(gold, pred):
    ref = neleval_scores(gold, pred, MODES)
    for mode in MODES:
        ours = score(gold, pred, mode)
        theirs = ref[mode]
        assert ours.tp == pytest.approx(theirs["ptp"], abs=1e-9), mode
        assert ours.rtp == pytest.approx(theirs["rtp"], abs=1e-9), mode
        assert ours.fp == pytest.approx(theirs["fp"], abs=1e-9), mode
        assert ours.fn == pytest.approx(theirs["fn"], abs=1e-9), mode
        assert ours.f1 == pytest.approx(theirs["fscore"], abs=1e-12), mode


def test_dnorm_tmchem_baseline_matches_neleval(shared_data, bc5cdr_test_docs):
    base = shared_data / "bc5cdr" / "baselines"
    pred = merge_predictions(read_documents(base / "TestSet.DNorm.PubTator.txt"),
                             read_documents(base / "TestSet.tmChem.PubTator.txt"))
    _assert_same(bc5cdr_test_docs, pred)
    strict = score(bc5cdr_test_docs, pred, "strict")
    assert 0.75 < strict.f1 < 0.85  # sanity only; the exact values come from neleval above


def test_bioc_gold_scores_like_pubtator_gold(shared_data, bc5cdr_test_docs):
    bioc_gold = list(read_documents(shared_data / "bc5cdr" / "CDR_TestSet.BioC.xml"))
    pred = list(read_documents(shared_data / "bc5cdr" / "baselines" / "TestSet.DNorm.PubTator.txt"))
    for mode in MODES:
        assert score(bioc_gold, pred, mode).to_dict() == score(bc5cdr_test_docs, pred, mode).to_dict()


def _random_docs(rng, n_docs, n_anns, ids):
    docs = []
    for k in range(n_docs):
        d = Document(str(k), [Passage(0, "x" * 300, {})])
        for _ in range(rng.randint(0, n_anns)):
            start = rng.randint(0, 280)
            end = start + rng.randint(1, 15)
            d.add_annotation(Annotation(start, end, "x" * (end - start), "T", [rng.choice(ids)]))
        docs.append(d)
    return docs


@pytest.mark.parametrize("seed", range(25))
def test_random_overlapping_documents_match_neleval(seed):
    rng = random.Random(seed)
    ids = ["D1", "D2", "D3"]
    gold = _random_docs(rng, 4, 12, ids)
    pred = _random_docs(rng, 5, 12, ids)
    # make some predictions near-misses of gold mentions
    for g, p in zip(gold, pred, strict=False):
        for a in g.annotations[: len(g.annotations) // 2]:
            shift = rng.choice([0, 0, 1, -1, 3])
            start = max(0, a.start + shift)
            end = max(start + 1, a.end + rng.choice([0, 2]))
            p.add_annotation(Annotation(start, end, "x", "T",
                                        list(a.concept_ids) if rng.random() < 0.7 else ["D9"]))
    _assert_same(gold, pred)
