"""eval.family_fit: the labelled rows of a gene corpus's file and the check at a threshold."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.confidence import ConfidenceModel
from e2e_linker.collective.gene_families import GeneMentionModel
from e2e_linker.collective.gene_ranking import GeneRanking
from eval.family_fit import annotated_documents, check, labelled_rows


def test_rows_are_the_family_and_gene_annotations_labelled():
    text = "The Notch family binds JAG1 in T cells."
    doc = Document(id="1", passages=[Passage(offset=0, text=text, annotations=[
        Annotation(4, 9, "Notch", "FamilyName", []),
        Annotation(23, 27, "JAG1", "Gene", ["182"]),
        Annotation(31, 38, "T cells", "Cell", [])])])
    rows, labels = labelled_rows([doc], GeneRanking())
    assert labels == [1.0, 0.0]  # the cell annotation is neither
    assert rows[0]["next=family"] == 1.0 and rows[1]["last=jag1"] == 1.0


def test_check_counts_what_is_called_a_family():
    model = GeneMentionModel(ConfidenceModel({"f": 4.0}, bias=-2.0))
    rows = [{"f": 1.0}, {}, {"f": 1.0}, {}]
    found = check(rows, [1.0, 1.0, 0.0, 0.0], model, 0.5)
    assert (found["families"], found["families_called"]) == (2, 1)
    assert (found["genes"], found["genes_called"]) == (2, 1)
    assert found["family_recall"] == 0.5 and found["gene_kept"] == 0.5


def test_only_the_gene_corpora_are_read():
    with pytest.raises(ValueError, match="gene corpora"):
        annotated_documents("bc5cdr:dev")
