"""SpanLinker: species preference among gene concepts, and output restricted by --types."""

from __future__ import annotations

import numpy as np

from data_tools.documents import Document, Passage
from e2e_linker.collective.span_linking import SpanLinker
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import scan_documents
from e2e_linker.lexical.sieves import NameDictionary

TAXA = {"7157": "9606", "22059": "10090", "2768677": "7227"}


class FixedIndex:
    """Ranks every query the same way: the mouse gene, then human, then a chemical."""

    def link(self, queries, types, k=64):
        return [[("22059", 0.9), ("D000001", 0.85), ("7157", 0.9), ("2768677", 0.5)]
                for _ in queries]


def test_species_first_reorders_gene_concepts_in_their_places():
    linker = SpanLinker(FixedIndex(), taxa=TAXA)
    ranked = [("22059", 0.9), ("D000001", 0.85), ("7157", 0.9), ("2768677", 0.5)]
    assert linker.species_first(ranked, ["9606"]) == [
        ("7157", 0.9), ("D000001", 0.85), ("22059", 0.9), ("2768677", 0.5)]
    assert linker.species_first(ranked, ["10090", "9606"]) == ranked
    assert SpanLinker(FixedIndex()).taxa is None  # no taxa: no preference


def test_an_exact_gene_name_takes_the_documents_species():
    names = NameDictionary([("p53", "7157"), ("p53", "22059")], {"7157": "Gene",
                                                                 "22059": "Gene"})
    linker = SpanLinker(FixedIndex(), names, taxa=TAXA)
    docs = [Document("h", [Passage(0, "p53 in patients with cancer.", {})]),
            Document("m", [Passage(0, "p53 in knockout mice; the mice died.", {})])]
    spans = [SpanPrediction(d, 0, 3, 0.9, "Gene", np.zeros(2, np.float32)) for d in (0, 1)]
    out = linker.link(spans, docs, scan_documents(docs))
    assert [a.concept_ids for a in out] == [["7157"], ["22059"]]
    assert {a.infons["link_method"] for a in out} == {"exact"}


def test_types_restrict_what_annotate_writes(tmp_path):
    from dataclasses import replace

    from tests.helpers.synthetic import synthetic_docs
    from tests.helpers.tiny_linker import tiny_annotator

    annotator = tiny_annotator(tmp_path)
    docs = synthetic_docs(4)
    every = annotator.annotate(docs, replace=True)
    found = {a.type for d in every for a in d.annotations}
    assert len(found) == 2  # threshold 0: both types are predicted
    keep = sorted(found)[0]
    annotator.settings = replace(annotator.settings, types=(keep,))
    only = annotator.annotate(docs, replace=True)
    assert {a.type for d in only for a in d.annotations} == {keep}
    assert [(a.start, a.end) for d in only for a in d.annotations] == [
        (a.start, a.end) for d in every for a in d.annotations if a.type == keep]
