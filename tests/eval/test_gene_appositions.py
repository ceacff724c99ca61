"""eval.gene_appositions counts gold gene pairs "NAME (SYMBOL)" by whether they share an ID."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from eval.gene_appositions import pair_counts


def test_pairs_are_counted_by_definition_and_agreement():
    text = ("Psoriasin (S100A7) and tumor necrosis factor (TNF) and Mre11 (Rad50) "
            "and p53 (mouse) rose.")

    def gene(phrase, cid, type_="Gene"):
        start = text.index(phrase)
        return Annotation(start, start + len(phrase), phrase, type_, [cid])

    doc = Document("d", [Passage(0, text, {})])
    doc.passages[0].annotations = [
        gene("Psoriasin", "6278"), gene("S100A7", "6278"),
        gene("tumor necrosis factor", "7124"), gene("TNF", "7124"),
        gene("Mre11", "855264"), gene("Rad50", "855431"),
        gene("p53", "7157"), gene("mouse", "10090", "Species")]
    assert pair_counts([doc], "Gene") == {(False, True): 1, (True, True): 1, (False, False): 1}
