"""eval.false_alarm_fit: the linker's Gene spans labelled against the gold, and the check."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.confidence import ConfidenceModel
from e2e_linker.collective.gene_families import GeneMentionModel
from e2e_linker.collective.gene_ranking import GeneRanking
from eval.false_alarm_fit import check, labelled_spans

TEXT = "LSK cells express JAG1 and Notch1 and PGE2."


def _doc(*found: tuple[str, str]) -> Document:
    anns = [Annotation(TEXT.index(t), TEXT.index(t) + len(t), t, type_, ["1"])
            for t, type_ in found]
    return Document(id="1", passages=[Passage(offset=0, text=TEXT, annotations=anns)])


def test_spans_are_labelled_false_alarm_right_or_left_out():
    gold = _doc(("JAG1", "Gene"), ("Notch1", "Gene"), ("PGE2", "Chemical"))
    pred = _doc(("LSK", "Gene"), ("JAG1", "Gene"), ("Notch", "Gene"), ("PGE2", "Gene"),
                ("cells", "Chemical"))
    rows, labels = labelled_spans([gold], [pred], GeneRanking())
    # LSK overlaps no gold gene: a false alarm; JAG1 has a gold gene's offsets; "Notch" cuts
    # the gold "Notch1" (a boundary error): no row; PGE2 overlaps only a gold chemical: a
    # false alarm; the Chemical prediction is no Gene span
    assert labels == [1.0, 0.0, 1.0]
    assert rows[0]["next=cells"] == 1.0 and rows[1]["last=jag1"] == 1.0


def test_a_document_without_gold_gives_no_rows():
    rows, labels = labelled_spans([], [_doc(("LSK", "Gene"))], GeneRanking())
    assert rows == [] and labels == []


def test_check_counts_what_the_model_drops():
    model = GeneMentionModel(ConfidenceModel({"f": 4.0}, bias=-2.0))
    found = check([{"f": 1.0}, {}, {"f": 1.0}, {}], [1.0, 1.0, 0.0, 0.0], model, 0.5)
    assert found == {"false_alarms": 2, "right": 2, "false_alarms_dropped": 1,
                     "right_dropped": 1}
