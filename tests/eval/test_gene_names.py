"""eval.gene_names: the orders of a name's genes it compares, on a hand-made KB."""

from __future__ import annotations

from data_tools.kb import KB, Concept
from data_tools.kb_loaders import CORPUS_SOURCE
from e2e_linker.collective.span_linking import SpanLinker
from e2e_linker.lexical.sieves import NameDictionary
from eval.gene_names import orders


def _kb() -> KB:
    return KB([Concept("2965", "GTF2H1", ["p62", "BTF2"], "Gene", "NCBI Gene", taxon="9606"),
               Concept("8878", "SQSTM1", ["p62", "A170", "ZIP3", "OSIL"], "Gene", "NCBI Gene",
                       taxon="9606"),
               Concept("4361", "MRE11", ["NBS1", "a", "b", "c"], "Gene", "NCBI Gene",
                       taxon="9606"),
               Concept("4683", "NBS1", ["NBN"], "Gene", "NCBI Gene", taxon="9606"),
               Concept("99", "NBS1", [], "Gene", CORPUS_SOURCE)])


def test_each_order_ranks_a_names_genes_and_the_linkers_is_span_linkings_own():
    kb = _kb()
    rules = orders(kb, NameDictionary.from_kb(kb))
    p62, nbs1 = ["2965", "8878"], ["4361", "4683", "99"]
    assert rules["KB order"]("p62", p62) == p62
    assert rules["most names first"]("p62", p62) == ["8878", "2965"]
    assert rules["primary name first"]("NBS1", nbs1) == ["4683", "4361", "99"]
    linker = SpanLinker(None, NameDictionary.from_kb(kb), concepts=kb.concepts)
    for text, found in (("p62", p62), ("NBS1", nbs1)):
        mine = [cid for cid, _ in linker.genes.name_ranking(text, "Gene")]
        assert rules["primary name, then most names"](text, found) == mine
        assert mine == sorted(found, key=lambda cid: (
            kb.concepts[cid].source == CORPUS_SOURCE or kb.concepts[cid].name != text,
            -len(kb.concepts[cid].all_names())))
    assert [cid for cid, _ in linker.genes.name_ranking("NBS1", "Gene")] == ["4683", "4361", "99"]
