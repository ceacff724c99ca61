"""eval.gene_forms: each step adds one of the linker's ways to link a gold gene span."""

from __future__ import annotations

from data_tools.kb import KB, Concept
from e2e_linker.collective.span_linking import SpanLinker
from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches
from e2e_linker.lexical.sieves import NameDictionary
from eval.gene_forms import STEPS, linked_ids


def _linker() -> SpanLinker:
    kb = KB([Concept("23411", "SIRT1", [], "Gene", "NCBI Gene", taxon="9606"),
             Concept("93759", "Sirt1", [], "Gene", "NCBI Gene", taxon="10090"),
             Concept("5599", "MAPK8", ["JNK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("5601", "MAPK9", ["JNK2"], "Gene", "NCBI Gene", taxon="9606")])
    names = NameDictionary.from_kb(kb)
    sieves = SieveStack(kb, names, switches=SieveSwitches(False, False, True, True, False))
    return SpanLinker(None, names, sieves, taxa=kb.taxa(), lexical_types=("Gene",),
                      concepts=kb.concepts)


def test_each_step_links_what_the_one_before_could_not():
    linker = _linker()
    doc = "Patients with cancer, SIRT-1 and JNK1/2; mouse Sirt1."

    def ids(mention: str) -> list[list[str]]:
        start = doc.index(mention)
        return [linked_ids(linker, step, mention, doc, start, start + len(mention), ["9606"])
                for step in range(len(STEPS))]

    assert ids("Sirt1") == [["23411"]] + [["93759"]] * 5  # "mouse Sirt1"
    assert ids("SIRT-1") == [[], []] + [["23411"]] * 4
    assert ids("JNK1/2") == [[], [], []] + [["5599", "5601"]] * 3


def test_the_last_step_links_the_mentions_species_ortholog():
    kb = KB([Concept("5599", "MAPK8", ["SAPK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", [], "Gene", "NCBI Gene", taxon="10090")])
    names = NameDictionary.from_kb(kb)
    linker = SpanLinker(None, names, None, taxa=kb.taxa(), lexical_types=("Gene",),
                        concepts=kb.concepts)
    doc = "In mice, SAPK1."
    start = doc.index("SAPK1")
    assert [linked_ids(linker, step, "SAPK1", doc, start, start + 5, ["10090", "9606"])
            for step in range(len(STEPS))] == [["5599"]] * 4 + [["26419"]] * 2


def test_the_last_step_prefers_the_gene_the_document_names_otherwise():
    kb = KB([Concept("5055", "SERPINE2", ["PAI-1", "glia-derived nexin", "PN1"], "Gene",
                     "NCBI Gene", taxon="9606"),
             Concept("5054", "SERPINE1", ["PAI-1", "plasminogen activator inhibitor 1"],
                     "Gene", "NCBI Gene", taxon="9606")])
    linker = SpanLinker(None, NameDictionary.from_kb(kb), None, taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    doc = "Plasminogen activator inhibitor 1 and PAI-1."
    start = doc.index("PAI-1")
    assert [linked_ids(linker, step, "PAI-1", doc, start, start + 5, ["9606"])
            for step in range(len(STEPS))] == [["5055"]] * 5 + [["5054"]]
