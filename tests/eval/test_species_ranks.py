"""eval.species_ranks: a corpus's gold organism IDs classed by their place in the taxonomy."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from eval import species_ranks


def test_each_gold_organism_id_is_classed_by_its_place_in_the_tree(monkeypatch):
    doc = Document("d", [Passage(0, "Arabidopsis and human cells and E. coli K-12", {}, [
        Annotation(0, 11, "Arabidopsis", "OrganismTaxon", ["3701"]),
        Annotation(16, 21, "human", "Species", ["NCBITaxon:9606"]),
        Annotation(22, 27, "cells", "CellLine", ["CVCL_0030"]),  # not an organism
        Annotation(32, 44, "E. coli K-12", "Species", ["83333", "999999"])])])
    monkeypatch.setattr(species_ranks, "load_corpus", lambda corpus: [doc])
    counts = species_ranks.rank_counts(
        "any", frozenset({"NCBITaxon:3701"}),
        frozenset({"NCBITaxon:3701", "NCBITaxon:9606", "NCBITaxon:83333"}))
    assert counts == {"above": 1, "species or below": 2, "not in the taxonomy": 1}
