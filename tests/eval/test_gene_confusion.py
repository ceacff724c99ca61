"""eval.gene_confusion counts gold gene spans that a Chemical or Disease prediction overlaps."""

from __future__ import annotations

import copy

from eval.gene_confusion import confusion_row
from eval.ood_dev import gold_of


class RetypingLinker:
    """Predicts every gold Gene span of the first document as a Chemical, nothing else."""

    def annotate(self, docs, replace=True):
        out = copy.deepcopy(docs)
        for n, doc in enumerate(out):
            for passage in doc.passages:
                passage.annotations = [a for a in passage.annotations if a.type == "Gene" and n == 0]
                for ann in passage.annotations:
                    ann.type = "Chemical"
        return out


def test_the_share_counts_only_gene_spans_predicted_as_chemical_or_disease():
    row = confusion_row(RetypingLinker(), "gnormplus:train", max_docs=2)
    first = sum(a.type == "Gene" for a in gold_of("gnormplus:train", 1)[0].annotations)
    assert row["documents"] == 2 and row["gold_gene_spans"] > first > 0
    assert row["chemical"] == row["either"] == first and row["disease"] == 0
    assert row["share"] == round(first / row["gold_gene_spans"], 4)
