"""Names written beside a bracketed gene symbol: kept (select) and linked to the symbol's gene
(annotate), on hand-made spans and annotations."""

from __future__ import annotations

import numpy as np

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from e2e_linker.collective.gene_appositions import (
    APPOSITION,
    ApposedName,
    bracketed,
    keep_gene_appositions,
    link_gene_appositions,
    named_by,
    words,
)
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import scan_documents

TEXT = ("Psoriasin (S100A7) is a small protein. Aberrant Psoriasin expression is common; "
        "anti-Psoriasin ribozymes and Psoriasins were used.")
V = np.zeros(2, np.float32)
KB_ = KB([Concept("C000001", "S100 calcium binding protein A7", ["Psoriasin"], "Chemical",
                  gene_product=True),
          Concept("D000002", "Aspirin", ["Psoriasin"], "Chemical"),
          Concept("6278", "S100A7", ["PSOR1", "psoriasin 1"], "Gene", "NCBI Gene",
                  taxon="9606"),
          Concept("7157", "TP53", ["tumor protein p53"], "Gene", "NCBI Gene", taxon="9606")])


def doc(text: str = TEXT) -> Document:
    return Document(id="d", passages=[Passage(offset=0, text=text)])


def span(text: str, phrase: str, score: float, type_: str = "Gene", nth: int = 0
         ) -> SpanPrediction:
    start = -1
    for _ in range(nth + 1):
        start = text.index(phrase, start + 1)
    return SpanPrediction(0, start, start + len(phrase), score, type_, V)


def keep(kept, candidates, text=TEXT, floor=0.02):
    docs = [doc(text)]
    return keep_gene_appositions(kept, candidates, docs, scan_documents(docs), floor, "Gene")


def places(spans, text=TEXT):
    return [(text[s.start:s.end], s.type) for s in spans]


def test_bracketed_needs_the_span_to_fill_the_brackets():
    assert bracketed(TEXT, 11, 17) == len("Psoriasin")
    assert bracketed(TEXT, 11, 16) is None  # "S100A" does not reach the ")"
    assert bracketed("(S100A7)", 1, 7) is None  # nothing before the brackets


def test_the_name_before_the_symbol_is_kept_with_its_whole_word_repeats():
    symbol = span(TEXT, "S100A7", 0.9)
    candidates = [span(TEXT, "Psoriasin", 0.1), span(TEXT, "soriasin", 0.3),
                  span(TEXT, "Psoriasin", 0.01, nth=1)]
    # the highest-scored candidate ending at the bracket wins
    assert places(keep([symbol], candidates)) == [("soriasin", "Gene"), ("S100A7", "Gene")]
    candidates = [span(TEXT, "Psoriasin", 0.1), span(TEXT, "soriasin", 0.01)]
    kept = keep([symbol], candidates)
    # repeats are tagged where a whole word ("anti-Psoriasin" too), not inside "Psoriasins"
    assert places(kept) == [("Psoriasin", "Gene"), ("S100A7", "Gene"), ("Psoriasin", "Gene"),
                            ("Psoriasin", "Gene")]
    assert [s.mention_score for s in kept] == [0.1, 0.9, 0.1, 0.1]
    names = [s for s in kept if s is not symbol]
    assert all(isinstance(s, ApposedName) and (s.symbol_start, s.symbol_end)
               == (symbol.start, symbol.end) for s in names)
    assert not isinstance(symbol, ApposedName)


def test_a_defined_symbol_takes_only_a_name_written_for_its_long_form():
    text = "Levels of murine double minute 2 (MDM2) rose."
    symbol = span(text, "MDM2", 0.9)
    cut = span(text, "double minute 2", 0.6)  # the model's best, but shorter than the long form
    assert keep([symbol], [cut], text) == [symbol]
    whole = span(text, "murine double minute 2", 0.3)
    assert places(keep([symbol], [cut, whole], text), text) == [
        ("murine double minute 2", "Gene"), ("MDM2", "Gene")]


def test_nothing_is_added_below_the_floor_beside_a_kept_span_or_a_non_gene():
    candidates = [span(TEXT, "Psoriasin", 0.1)]
    symbol = span(TEXT, "S100A7", 0.9)
    assert keep([symbol], candidates, floor=0.2) == [symbol]
    # a name the type head calls a disease is not made a gene; a Chemical may be a protein's
    assert keep([symbol], [span(TEXT, "Psoriasin", 0.1, "Disease")]) == [symbol]
    assert places(keep([symbol], [span(TEXT, "Psoriasin", 0.1, "Chemical")]))[0] == (
        "Psoriasin", "Gene")
    chemical = span(TEXT, "S100A7", 0.9, "Chemical")
    assert keep([chemical], candidates) == [chemical]
    before = span(TEXT, "Psoriasin", 0.8, "Disease")  # the model kept the name itself
    assert keep([before, symbol], candidates) == [before, symbol]


def annotation(text: str, phrase: str, ids: list[str], nth: int = 0) -> Annotation:
    start = -1
    for _ in range(nth + 1):
        start = text.index(phrase, start + 1)
    return Annotation(start, start + len(phrase), phrase, "Gene", ids,
                      infons={"link_method": "name_form"}, link_score=None)


def linked(anns, names=(0, 2)):
    """``anns`` linked as the steps link them, the annotations at ``names`` kept beside the
    symbol (the second annotation)."""
    symbol = anns[1]
    spans = [ApposedName(0, a.start, a.end, 0.5, "Gene", V, symbol.start, symbol.end)
             if k in names else SpanPrediction(0, a.start, a.end, 0.5, "Gene", V)
             for k, a in enumerate(anns)]
    link_gene_appositions(anns, spans, [doc()], KB_, "Gene")
    return anns


def test_the_kept_names_take_the_symbols_gene():
    anns = linked([annotation(TEXT, "Psoriasin", ["999"]), annotation(TEXT, "S100A7", ["6278"]),
                   annotation(TEXT, "Psoriasin", ["999"], nth=1),
                   annotation(TEXT, "Psoriasin", ["999"], nth=2)], names=(0, 2))
    assert [a.concept_ids for a in anns] == [["6278"], ["6278"], ["6278"], ["999"]]
    assert [a.infons["link_method"] for a in anns] == [APPOSITION, "name_form", APPOSITION,
                                                       "name_form"]


def test_a_name_sharing_no_word_with_the_genes_names_is_dropped():
    """"Lipid droplets (LD)": a short form the model took for a gene; the name before it
    shares no word with the gene's names, so it is not made that gene (a name the model kept
    itself keeps its own link)."""
    anns = [annotation(TEXT, "Psoriasin", ["999"]), annotation(TEXT, "S100A7", ["7157"])]
    assert linked(anns, names=(0,))[0] is None
    assert words("Na-Cl co-transporter 88") == {"transporter"}
    assert named_by("Psoriasin", KB_.get("6278")) and not named_by("Psoriasin", KB_.get("7157"))


def test_a_name_whose_symbol_has_no_concept_another_type_or_was_dropped_is_dropped():
    anns = linked([annotation(TEXT, "Psoriasin", ["999"]), annotation(TEXT, "S100A7", [])])
    assert anns[0] is None
    other = annotation(TEXT, "S100A7", ["D1"])
    other.type = "Chemical"
    anns = linked([annotation(TEXT, "Psoriasin", ["999"]), other])
    assert anns[0] is None and anns[1] is other
    chemical = annotation(TEXT, "S100A7", ["D000002"])  # a Gene span linked to no gene
    anns = linked([annotation(TEXT, "Psoriasin", ["999"]), chemical])
    assert anns[0] is None and anns[1].concept_ids == ["D000002"]
    name = annotation(TEXT, "Psoriasin", ["999"])
    symbol = annotation(TEXT, "S100A7", ["6278"])
    spans = [ApposedName(0, name.start, name.end, 0.5, "Gene", V, symbol.start, symbol.end),
             SpanPrediction(0, symbol.start, symbol.end, 0.9, "Gene", V)]
    anns = [name, None]  # the symbol was dropped
    link_gene_appositions(anns, spans, [doc()], KB_, "Gene")
    assert anns == [None, None]


def test_a_kept_name_linked_to_a_gene_product_takes_the_bracketed_gene():
    """The model kept "Psoriasin" itself, typed Chemical and linked to the MeSH protein (which
    the BC5CDR-guideline step would drop): it and its repeats linked to that protein become
    the bracketed gene; a repeat linked otherwise, and a name linked to a plain chemical, stay."""
    def chemical(nth, cid):
        ann = annotation(TEXT, "Psoriasin", [cid], nth=nth)
        ann.type = "Chemical"
        return ann

    anns = [chemical(0, "C000001"), annotation(TEXT, "S100A7", ["6278"]),
            chemical(1, "C000001"), chemical(2, "D000002")]
    spans = [SpanPrediction(0, a.start, a.end, 0.9, a.type, V) for a in anns]
    link_gene_appositions(anns, spans, [doc()], KB_, "Gene")
    assert [(a.type, a.concept_ids) for a in anns] == [
        ("Gene", ["6278"]), ("Gene", ["6278"]), ("Gene", ["6278"]), ("Chemical", ["D000002"])]
    assert anns[0].infons["link_method"] == APPOSITION
    plain = [chemical(0, "D000002"), annotation(TEXT, "S100A7", ["6278"])]
    link_gene_appositions(plain, spans[:2], [doc()], KB_, "Gene")
    assert plain[0].type == "Chemical" and plain[0].concept_ids == ["D000002"]
