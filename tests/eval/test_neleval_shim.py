"""eval.neleval_shim: neleval 3.1.1 imported and fed our documents (the full comparison is
tests/e2e_linker/test_scoring_neleval.py)."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from eval import neleval_shim

TEXT = "Aspirin causes asthma."


def _doc(*anns):
    return Document("d", [Passage(0, TEXT, annotations=list(anns))])


def test_neleval_imports_on_this_python():
    assert hasattr(neleval_shim.import_neleval(), "evaluate")


def test_scores_of_a_half_right_prediction():
    gold = [_doc(Annotation(0, 7, "Aspirin", "Chemical", ["D001241"]),
                 Annotation(15, 21, "asthma", "Disease", ["D001249"]))]
    pred = [_doc(Annotation(0, 7, "Aspirin", "Chemical", ["D001241"]))]
    scores = neleval_shim.neleval_scores(gold, pred, ("strict",))
    assert scores["strict"]["precision"] == 1.0
    assert scores["strict"]["recall"] == 0.5
    by_type = neleval_shim.neleval_scores_by_type(gold, pred, ("strict",))
    assert by_type["strict"]["Chemical"]["fscore"] == 1.0
