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


def test_a_name_only_type_is_linked_by_its_names_never_by_dense_search():
    """With ``lexical_types`` a Gene span is linked through the names of its type, ordered by
    the document's species, and without a dense score; a Gene span no name links gets no
    concept, not the chemical the dense ranking offers (the index holds no gene names)."""
    names = NameDictionary([("p53", "7157"), ("p53", "22059"), ("aspirin", "D000001")],
                           {"7157": "Gene", "22059": "Gene", "D000001": "Chemical"})
    linker = SpanLinker(FixedIndex(), names, taxa=TAXA, lexical_types=("Gene",))
    docs = [Document("m", [Passage(0, "p53 and TP99 in knockout mice; the mice died.", {})])]
    spans = [SpanPrediction(0, 0, 3, 0.9, "Gene", np.zeros(2, np.float32)),
             SpanPrediction(0, 8, 12, 0.9, "Gene", np.zeros(2, np.float32)),
             SpanPrediction(0, 8, 12, 0.9, "Chemical", np.zeros(2, np.float32))]
    p53, unnamed, chemical = linker.link(spans, docs, scan_documents(docs), explain=True)
    assert (p53.concept_ids, p53.infons["link_method"], p53.link_score) == (
        ["22059"], "exact", None)
    assert (unnamed.concept_ids, unnamed.infons["link_method"]) == ([], "none")
    assert (chemical.concept_ids, chemical.infons["link_method"]) == (["22059"], "dense")
    dense = SpanLinker(FixedIndex(), names, taxa=TAXA).link(spans[1:2], docs,
                                                            scan_documents(docs))
    assert dense[0].concept_ids == ["22059"]  # without it: the dense ranking's first


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


DISEASES = NameDictionary([("breast cancer", "D001943"), ("ovarian cancer", "D010051"),
                           ("hereditary breast and ovarian cancer", "D061325"),
                           ("leukemia", "D007938"), ("lymphoma", "D008223"),
                           ("renal disease", "D007674"), ("kidney disease", "D007674")],
                          {c: "Disease" for c in ("D001943", "D010051", "D061325", "D007938",
                                                  "D008223", "D007674")})


def test_an_elliptical_coordination_links_to_its_parts_concepts_in_order():
    linker = SpanLinker(FixedIndex(), DISEASES)
    assert linker.composite_ids("breast or ovarian cancer", "Disease") == ["D001943", "D010051"]
    assert linker.composite_ids("ovarian and breast cancer", "Disease") == ["D010051", "D001943"]
    # parts naming one concept give it once
    assert linker.composite_ids("renal and kidney disease", "Disease") == ["D007674"]
    # a part that is no name, a list of whole names, or switched off: none
    assert linker.composite_ids("breast and colon cancer", "Disease") is None
    assert linker.composite_ids("leukemia and lymphoma", "Disease") is None
    assert SpanLinker(FixedIndex(), DISEASES, composites=False).composite_ids(
        "breast or ovarian cancer", "Disease") is None


def test_link_prefers_a_whole_name_and_gates_a_composite_in():
    linker = SpanLinker(FixedIndex(), DISEASES)
    text = "Hereditary breast and ovarian cancer; breast or ovarian cancer."
    docs = [Document("d", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, 0, 36, 0.9, "Disease", np.zeros(2, np.float32)),
             SpanPrediction(0, 38, 62, 0.9, "Disease", np.zeros(2, np.float32))]
    abbreviations = scan_documents(docs)
    out = linker.link(spans, docs, abbreviations)
    assert [a.concept_ids for a in out] == [["D061325"], ["D001943", "D010051"]]
    assert [a.infons["link_method"] for a in out] == ["exact", "composite"]
    # the lexical gate counts a composite whose parts are names as lexically linked
    texts = [docs[0].text_at(s.start, s.end) for s in spans]
    assert linker.lexically_linked(spans, texts, abbreviations) == [True, True]
    off = SpanLinker(FixedIndex(), DISEASES, composites=False)
    assert off.lexically_linked(spans, texts, abbreviations) == [True, False]
    assert off.link(spans, docs, abbreviations)[1].infons["link_method"] == "dense"


def _gene_linker():
    """A name-only Gene linker over a hand-made gene KB with its compact keys (the sieve
    stack's other steps off)."""
    from data_tools.kb import KB, Concept
    from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches

    kb = KB([Concept("23411", "SIRT1", ["sirtuin 1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("93759", "Sirt1", ["Sir2a"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("3439", "IFNA1", ["IFN-alpha"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("6469", "SHH", ["HHG1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("20423", "Shh", ["Hx"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("5599", "MAPK8", ["JNK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("5601", "MAPK9", ["JNK2"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", ["JNK1"], "Gene", "NCBI Gene", taxon="10090")])
    names = NameDictionary.from_kb(kb)
    sieves = SieveStack(kb, names, switches=SieveSwitches(False, False, True, True, False))
    return SpanLinker(FixedIndex(), names, sieves, taxa=kb.taxa(), lexical_types=("Gene",),
                      concepts=kb.concepts, coordinated_genes=True)


def test_a_gene_written_in_a_form_no_name_spells_is_linked_and_kept():
    """"SIRT-1" shares its letters with SIRT1 and Sirt1 (two species: the compact-key sieve,
    which wants one concept, gives up; the species rule chooses); "IFN-a" is "IFN-alpha"
    with its Greek letter written in Latin; "JNK1/2" is two genes; "SIRT-9" none of these."""
    linker = _gene_linker()
    text = "SIRT-1 and IFN-a in patients; JNK1/2 and SIRT-9 too."
    docs = [Document("d", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, text.index(word), text.index(word) + len(word), 0.9, "Gene",
                            np.zeros(2, np.float32))
             for word in ("SIRT-1", "IFN-a", "JNK1/2", "SIRT-9")]
    abbreviations = scan_documents(docs)
    out = linker.link(spans, docs, abbreviations)
    assert [a.concept_ids for a in out] == [["23411"], ["3439"], ["5599", "5601"], []]
    assert [a.infons["link_method"] for a in out] == [
        "name_form", "name_form", "composite", "none"]
    assert linker.genes.name_form_ranking("SIRT-1", "Gene") == [("23411", 0.0), ("93759", 0.0)]
    texts = [a.text for a in out]
    assert linker.lexically_linked(spans, texts, abbreviations) == [True, True, True, False]


def test_a_coordination_another_species_names_whole_links_the_documents_genes():
    """The fly's vocabulary holds "JNK1/2" whole (one fly gene's alias): in a mouse abstract
    the mouse genes it coordinates are linked, each in the order written; in a fly abstract,
    and for a whole name of the document's species, the whole name stays."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("5599", "MAPK8", ["JNK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("5601", "MAPK9", ["JNK2"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", ["Jnk1"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("26420", "Mapk9", ["Jnk2"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("44801", "bsk", ["JNK1/2"], "Gene", "NCBI Gene", taxon="7227"),
             Concept("18226", "Nkx2-5", ["Nkx2", "Nkx3"], "Gene", "NCBI Gene",
                     taxon="10090")])
    names = NameDictionary.from_kb(kb)
    linker = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",),
                        coordinated_genes=True)

    def linked(text: str, word: str) -> tuple[list[str], str]:
        docs = [Document("d", [Passage(0, text, {})])]
        start = text.index(word)
        span = SpanPrediction(0, start, start + len(word), 0.9, "Gene", np.zeros(2, np.float32))
        out = linker.link([span], docs, scan_documents(docs))[0]
        return out.concept_ids, out.infons["link_method"]

    assert linked("JNK1/2 in knockout mice; the mice died.", "JNK1/2") == (
        ["26419", "26420"], "composite")
    assert linked("JNK1/2 in Drosophila flies; the Drosophila larvae died.", "JNK1/2") == (
        ["44801"], "exact")
    assert linked("Nkx2-5 in knockout mice; the mice died.", "Nkx2-5") == (["18226"], "exact")
    off = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",))
    assert off.coordination_of_species("JNK1/2", "Gene", "44801", ["10090"]) is None


def test_a_one_character_gene_span_is_never_named():
    """A gene alias of one letter ("A" is one of a human gene's in the vocabularies) does not
    keep a one-character Gene span through the lexical gate; a one-character span of another
    type is not the gene rule's."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("23411", "SIRT1", ["A"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("D000001", "Adenine", ["A"], "Chemical")])
    names = NameDictionary.from_kb(kb)
    linker = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",),
                        concepts=kb.concepts)
    text = "A and SIRT1 with A."
    docs = [Document("d", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, start, end, 0.9, type_, np.zeros(2, np.float32))
             for start, end, type_ in ((0, 1, "Gene"), (6, 11, "Gene"), (17, 18, "Chemical"))]
    assert linker.is_name("A", "Gene")
    assert linker.lexically_linked(spans, ["A", "SIRT1", "A"], scan_documents(docs)) == [
        False, True, True]


def test_a_chemical_span_a_gene_names_becomes_a_gene():
    """"ectodysplasin" (typed Chemical by the head) names a gene and, as a chemical, only a
    gene product: a Gene span; "cocaine" names a chemical; "SIRT-1" is a gene written in
    another form; "cytokine" names only a class of gene products (no species' gene); a
    Disease span is not this rule's; no name-only Gene type, no change."""
    from data_tools.kb import KB, Concept
    from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches

    kb = KB([Concept("1896", "EDA", ["ectodysplasin"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("C000001", "ectodysplasins", ["ectodysplasin"], "Chemical",
                     gene_product=True),
             Concept("D003042", "Cocaine", ["cocaine"], "Chemical"),
             Concept("23411", "SIRT1", [], "Gene", "NCBI Gene", taxon="9606"),
             Concept("99999", "COC", ["cocaine"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("D016207", "Cytokines", ["cytokine"], "Gene")])
    names = NameDictionary.from_kb(kb)
    sieves = SieveStack(kb, names, switches=SieveSwitches(False, False, True, True, False))
    linker = SpanLinker(FixedIndex(), names, sieves, taxa=kb.taxa(), lexical_types=("Gene",),
                        concepts=kb.concepts)
    texts = ["ectodysplasin", "cocaine", "SIRT-1", "ectodysplasin", "unknown", "cytokine"]
    spans = [SpanPrediction(0, 0, len(t), 0.9, type_, np.zeros(2, np.float32))
             for t, type_ in zip(texts, ("Chemical", "Chemical", "Chemical", "Disease",
                                         "Chemical", "Chemical"), strict=True)]
    assert [s.type for s in linker.gene_named_chemicals(spans, texts)] == [
        "Gene", "Chemical", "Gene", "Disease", "Chemical", "Chemical"]
    assert [s.type for s in spans][0] == "Chemical"  # the input is not changed
    plain = SpanLinker(FixedIndex(), names, concepts=kb.concepts)
    assert [s.type for s in plain.gene_named_chemicals(spans, texts)][0] == "Chemical"


def test_a_span_named_exactly_as_a_species_and_nothing_of_its_type_becomes_species():
    """"Venturia inaequalis" (typed Disease by the head) is only a species' name: Species;
    "tobacco" is a chemical's name too: stays Chemical; "MDV1" names a gene: stays Gene;
    "Bacillus" at or below the floor, or a span already Species, is not this rule's; a linker
    whose name-only types lack Species changes nothing."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("NCBITaxon:5025", "Venturia inaequalis", [], "Species"),
             Concept("NCBITaxon:4097", "Nicotiana tabacum", ["tobacco"], "Species"),
             Concept("D014026", "Tobacco", ["tobacco"], "Chemical"),
             Concept("NCBITaxon:10390", "Gallid alphaherpesvirus 2", ["MDV1"], "Species"),
             Concept("99999", "MDV1", [], "Gene", "NCBI Gene", taxon="9606"),
             Concept("NCBITaxon:1386", "Bacillus", [], "Species")])
    names = NameDictionary.from_kb(kb)
    linker = SpanLinker(FixedIndex(), names, taxa=kb.taxa(),
                        lexical_types=("Gene", "Species"), concepts=kb.concepts)
    texts = ["Venturia inaequalis", "tobacco", "MDV1", "Bacillus", "Venturia inaequalis"]
    rows = [(0.9, "Disease"), (0.9, "Chemical"), (0.9, "Gene"), (0.2, "Chemical"),
            (0.9, "Species")]
    spans = [SpanPrediction(0, 0, len(t), p, type_, np.zeros(2, np.float32))
             for t, (p, type_) in zip(texts, rows, strict=True)]
    assert [s.type for s in linker.species_named_spans(spans, texts, 0.25)] == [
        "Species", "Chemical", "Gene", "Chemical", "Species"]
    assert spans[0].type == "Disease"  # the input is not changed
    plain = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",),
                       concepts=kb.concepts)
    assert [s.type for s in plain.species_named_spans(spans, texts, 0.25)][0] == "Disease"


def test_a_long_form_linked_to_a_gene_product_takes_its_short_forms_gene():
    """"mammalian target of rapamycin (mTOR)": the long form (typed Chemical) names the MeSH
    kinase class, a gene product; the short form, a Gene span, names the MTOR gene. Both end
    up the gene, where the short form used to take the long form's class (and both were then
    dropped as a chemical gene product)."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("D058570", "TOR Serine-Threonine Kinases",
                     ["mammalian target of rapamycin"], "Chemical", gene_product=True),
             Concept("2475", "MTOR", ["mTOR", "FRAP1"], "Gene", "NCBI Gene", taxon="9606")])
    names = NameDictionary.from_kb(kb)
    linker = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",),
                        concepts=kb.concepts)
    text = "Signalling through mammalian target of rapamycin (mTOR) fell; mTOR was low."
    docs = [Document("d", [Passage(0, text, {})])]
    long_start = text.index("mammalian")
    spans = [SpanPrediction(0, long_start, long_start + 29, 0.9, "Chemical",
                            np.zeros(2, np.float32)),
             SpanPrediction(0, text.index("mTOR"), text.index("mTOR") + 4, 0.9, "Gene",
                            np.zeros(2, np.float32)),
             SpanPrediction(0, text.rindex("mTOR"), text.rindex("mTOR") + 4, 0.9, "Gene",
                            np.zeros(2, np.float32))]
    out = linker.link(spans, docs, scan_documents(docs))
    assert [(a.text, a.type, a.concept_ids) for a in out] == [
        ("mammalian target of rapamycin", "Gene", ["2475"]),
        ("mTOR", "Gene", ["2475"]), ("mTOR", "Gene", ["2475"])]


def test_an_alias_of_another_species_gene_links_the_preferred_species_ortholog():
    """"JNK1" names human MAPK8 and mouse Mapk8 here; "SAPK1" only human MAPK8: in a mouse
    paper it links mouse Mapk8, the gene of the mention's species with MAPK8's symbol; a
    gene with no such ortholog keeps its link."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("5599", "MAPK8", ["JNK1", "SAPK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", ["JNK1"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("5601", "MAPK9", ["JNK2"], "Gene", "NCBI Gene", taxon="9606")])
    linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    assert linker.genes.ortholog("5599", "10090") == "26419"
    assert linker.genes.ortholog("26419", "9606") == "5599"
    assert linker.genes.ortholog("5599", "9606") is None  # already that species
    assert linker.genes.ortholog("5601", "10090") is None  # no mouse gene of that symbol
    text = "In knockout mice, SAPK1 and JNK2 and mouse JNK1."
    docs = [Document("m", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, text.index(w), text.index(w) + len(w), 0.9, "Gene",
                            np.zeros(2, np.float32)) for w in ("SAPK1", "JNK2", "JNK1")]
    out = linker.link(spans, docs, scan_documents(docs))
    assert [a.concept_ids for a in out] == [["26419"], ["5601"], ["26419"]]
    assert [a.infons["link_method"] for a in out] == ["ortholog", "exact", "exact"]


def test_a_species_named_beside_a_mention_reaches_a_gene_only_its_ortholog_names():
    """"SAPK1" names human MAPK8 alone: in a paper about patients it links it, and "the mouse
    SAPK1" links mouse Mapk8, though no mouse gene is a candidate of the text."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("5599", "MAPK8", ["SAPK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", [], "Gene", "NCBI Gene", taxon="10090")])
    linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    text = "In patients, SAPK1 is high; the mouse SAPK1 is not."
    docs = [Document("h", [Passage(0, text, {})])]
    starts = [text.index("SAPK1"), text.rindex("SAPK1")]
    spans = [SpanPrediction(0, s, s + 5, 0.9, "Gene", np.zeros(2, np.float32)) for s in starts]
    out = linker.link(spans, docs, scan_documents(docs))
    assert [a.concept_ids for a in out] == [["5599"], ["26419"]]


def test_a_shared_alias_takes_the_gene_the_document_also_names_otherwise():
    """"PAI-1" names human SERPINE1 and SERPINE2 here: a document that also writes
    "plasminogen activator inhibitor 1" links SERPINE1, one that writes "glia-derived nexin"
    SERPINE2; a document naming neither keeps the names order, and a gene of another species
    is never moved before the first one's."""
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.gene_ranking import document_words

    kb = KB([Concept("5055", "SERPINE2", ["PAI-1", "glia-derived nexin", "PN1", "GDN"], "Gene",
                     "NCBI Gene", taxon="9606"),
             Concept("5054", "SERPINE1", ["PAI-1", "plasminogen activator inhibitor 1"],
                     "Gene", "NCBI Gene", taxon="9606"),
             Concept("18787", "Serpine1", ["PAI-1", "plasminogen activator inhibitor 1"],
                     "Gene", "NCBI Gene", taxon="10090")])
    linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    ranked = linker.genes.species_first(linker.genes.name_ranking("PAI-1", "Gene"), ["9606"])
    assert [cid for cid, _ in ranked] == ["5055", "5054", "18787"]  # more names first

    def first(doc: str) -> str:
        return linker.genes.named_in_document_first(ranked, "PAI-1", document_words(doc))[0][0]

    assert first("Plasminogen activator inhibitor 1 (PAI-1) in patients.") == "5054"
    assert first("PAI-1, the glia-derived nexin, in patients.") == "5055"
    assert first("PAI-1 in patients.") == "5055"
    mouse_first = linker.genes.species_first(ranked, ["10090", "9606"])
    assert linker.genes.named_in_document_first(mouse_first, "PAI-1", document_words(
        "Glia-derived nexin and PAI-1 in mice."))[0][0] == "18787"
    text = "Plasminogen activator inhibitor 1 (PAI-1) in patients; PAI-1 again."
    docs = [Document("h", [Passage(0, text, {})])]
    start = text.rindex("PAI-1")
    out = linker.link([SpanPrediction(0, start, start + 5, 0.9, "Gene", np.zeros(2, np.float32))],
                      docs, scan_documents(docs))
    assert out[0].concept_ids == ["5054"]


def test_a_gene_of_a_species_the_document_does_not_name_is_dropped():
    """"filamin" links only a fly gene: dropped from an abstract about patients, kept in one
    about flies; a human gene and a Chemical span (not a name-only type) stay."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("42066", "cher", ["filamin"], "Gene", "NCBI Gene", taxon="7227"),
             Concept("7157", "TP53", ["p53"], "Gene", "NCBI Gene", taxon="9606")])
    linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    docs = [Document("h", [Passage(0, "filamin and p53 in patients.", {})]),
            Document("f", [Passage(0, "filamin and p53 in Drosophila.", {})])]
    vec = np.zeros(2, np.float32)
    spans = [SpanPrediction(d, start, end, 0.9, type_, vec) for d in (0, 1)
             for start, end, type_ in ((0, 7, "Gene"), (12, 15, "Gene"), (0, 7, "Chemical"))]
    linked = linker.link(spans, docs, scan_documents(docs))
    assert linked[0].concept_ids == ["42066"] and linked[2].concept_ids == ["42066"]
    kept = linker.drop_unnamed_species(linked, spans, docs)
    assert [a is not None for a in kept] == [False, True, True, True, True, True]
    assert linked[0] is not None  # the input list is left as it was
    no_taxa = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), lexical_types=("Gene",))
    assert no_taxa.drop_unnamed_species(linked, spans, docs) == linked


def test_the_species_a_document_mentions_order_its_genes_with_species_mentions():
    """"Il6" names the human, mouse and rat genes; the text's only cue word is "patients"
    (human), but its Species spans link to rat twice: with ``species_mentions`` the rat gene
    comes first, without it the cue words' human one."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("3569", "IL6", ["Il6"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("16193", "Il6", [], "Gene", "NCBI Gene", taxon="10090"),
             Concept("24498", "Il6", [], "Gene", "NCBI Gene", taxon="10116"),
             Concept("NCBITaxon:10116", "Rattus norvegicus", ["rats", "rat"], "Species",
                     "NCBI Taxonomy")])
    text = "Rat Il6 rose in rats as in patients."
    docs = [Document("r", [Passage(0, text, {})])]

    def span(word, type_, nth=0):
        start = [k for k in range(len(text)) if text.startswith(word, k)][nth]
        return SpanPrediction(0, start, start + len(word), 0.9, type_, np.zeros(2, np.float32))

    spans = [span("Rat", "Species"), span("Il6", "Gene"), span("rats", "Species")]
    out = {}
    for on in (True, False):
        linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                            lexical_types=("Gene", "Species"), concepts=kb.concepts,
                            species_mentions=on)
        out[on] = [a.concept_ids for a in linker.link(spans, docs, scan_documents(docs))]
    assert out[True] == [["NCBITaxon:10116"], ["24498"], ["NCBITaxon:10116"]]
    assert out[False][1] != ["24498"]


def test_a_fitted_species_choice_decides_a_gene_mentions_species():
    """"Il6" names the human and the mouse gene in an abstract about patients: the rule
    takes the human one; a species choice that weighs how the mention is written (the mouse
    symbol "Il6") takes the mouse one, and the ortholog-free document order stays behind it."""
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.confidence import ConfidenceModel
    from e2e_linker.collective.species_choice import SpeciesChoice

    kb = KB([Concept("3569", "IL6", ["Il6"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("16193", "Il6", [], "Gene", "NCBI Gene", taxon="10090")])
    text = "Il6 rose in patients."
    docs = [Document("r", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, 0, 3, 0.9, "Gene", np.zeros(2, np.float32))]
    choice = SpeciesChoice(ConfidenceModel({"written_symbol": 5.0, "document_first": 1.0}))
    out = {}
    for fitted in (choice, None):
        linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                            lexical_types=("Gene",), concepts=kb.concepts,
                            species_choice=fitted)
        out[fitted is not None] = linker.link(spans, docs, scan_documents(docs))[0].concept_ids
        # the caller's species (linker normalize --species) decides over the fitted choice
        assert linker.link(spans, docs, scan_documents(docs), species={0: ["9606"]}
                           )[0].concept_ids == ["3569"]
    assert out == {True: ["16193"], False: ["3569"]}


def test_an_alias_links_the_gene_training_mentions_link_it_to_with_gene_usage():
    """"TAK1" is an alias of human NR2C2 (more names) and MAP3K7: a model whose mined names
    hold a training mention "TAK1" of MAP3K7 links it there through the sieve stack's pool
    with ``gene_usage``; without the part, or without the pool, the names' order decides."""
    from data_tools.kb import KB, Concept
    from e2e_linker.lexical.sieve_stack import SieveStack

    kb = KB([Concept("7181", "NR2C2", ["TAK1", "TR4", "TR2R1"], "Gene", "NCBI Gene",
                     taxon="9606"),
             Concept("6885", "MAP3K7", ["TAK1"], "Gene", "NCBI Gene", taxon="9606")])
    names = NameDictionary.from_kb(kb)
    stack = SieveStack(kb, names, [("TAK1", "6885", "Gene")])
    text = "TAK1 in patients."
    docs = [Document("t", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, 0, 4, 0.9, "Gene", np.zeros(2, np.float32))]

    def linked(**parts) -> list[str]:
        linker = SpanLinker(FixedIndex(), names, taxa=kb.taxa(), lexical_types=("Gene",),
                            concepts=kb.concepts, **parts)
        return linker.link(spans, docs, scan_documents(docs))[0].concept_ids

    assert linked(sieves=stack) == ["6885"]
    assert linked(sieves=stack, gene_usage=False) == ["7181"]
    assert linked() == ["7181"]


def test_species_usage_puts_the_taxon_training_mentions_annotate_a_word_with_first():
    """"yeast" is a common name of Candida albicans (more names) and of S. cerevisiae: the
    ranking alone takes C. albicans; with the species corpora's usage ("yeast" → 4932) S.
    cerevisiae comes first, and a gene of S288C is then the document's species."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("NCBITaxon:5476", "Candida albicans", ["yeast", "Monilia albicans",
                                                            "C. albicans"], "Species",
                     "NCBI Taxonomy"),
             Concept("NCBITaxon:4932", "Saccharomyces cerevisiae", ["yeast"], "Species",
                     "NCBI Taxonomy"),
             Concept("852485", "GDT1", [], "Gene", "NCBI Gene", taxon="559292"),
             Concept("51444", "TMEM165", ["GDT1"], "Gene", "NCBI Gene", taxon="9606")])
    text = "Yeast GDT1 was deleted in yeast."
    docs = [Document("y", [Passage(0, text, {})])]
    spans = [SpanPrediction(0, 0, 5, 0.9, "Species", np.zeros(2, np.float32)),
             SpanPrediction(0, 6, 10, 0.9, "Gene", np.zeros(2, np.float32)),
             SpanPrediction(0, 26, 31, 0.9, "Species", np.zeros(2, np.float32))]
    out = {}
    for usage in ({"yeast": ["NCBITaxon:4932"]}, None):
        linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                            lexical_types=("Gene", "Species"), concepts=kb.concepts,
                            species_mentions=True, species_usage=usage)
        out[usage is not None] = [a.concept_ids
                                  for a in linker.link(spans, docs, scan_documents(docs))]
    assert out[True] == [["NCBITaxon:4932"], ["852485"], ["NCBITaxon:4932"]]
    assert out[False][0] == ["NCBITaxon:5476"]


def test_a_yeast_mention_counts_for_the_strain_its_genes_are_filed_under():
    spans = [SpanPrediction(0, 0, 5, 0.9, "Species", np.zeros(2, np.float32)),
             SpanPrediction(0, 9, 14, 0.9, "Species", np.zeros(2, np.float32))]
    links = SpanLinker.species_links(spans, [[("NCBITaxon:4932", 0.0)],
                                             [("NCBITaxon:10090", 0.0)]])
    assert links == {0: [(0, "559292"), (0, "4932"), (9, "10090")]}


def test_a_symbol_is_not_linked_through_a_name_kept_beside_it():
    """"signal transducer and activator of transcription 3 (STAT3)": a long form kept beside
    its gene symbol (``ApposedName``) takes the symbol's gene after linking, so the symbol is
    linked as if the name had not been kept, not through the name's link (here the mouse gene
    the name ranks first in a mouse paper); a long form the model kept itself is still the
    short form's source."""
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.gene_appositions import ApposedName

    kb = KB([Concept("6774", "STAT3", ["signal transducer and activator of transcription 3"],
                     "Gene", "NCBI Gene", taxon="9606"),
             Concept("20848", "Stat3", ["signal transducer and activator of transcription 3"],
                     "Gene", "NCBI Gene", taxon="10090")])
    linker = SpanLinker(FixedIndex(), NameDictionary.from_kb(kb), taxa=kb.taxa(),
                        lexical_types=("Gene",), concepts=kb.concepts)
    text = "In knockout mice, signal transducer and activator of transcription 3 (STAT3) in patients."
    docs = [Document("d", [Passage(0, text, {})])]
    long_start, short_start = text.index("signal"), text.index("STAT3")
    long_end = long_start + len("signal transducer and activator of transcription 3")
    v = np.zeros(2, np.float32)

    def linked(long_form):
        short = SpanPrediction(0, short_start, short_start + 5, 0.9, "Gene", v)
        return [a.concept_ids for a in linker.link([long_form, short], docs,
                                                   scan_documents(docs))]

    assert linked(SpanPrediction(0, long_start, long_end, 0.9, "Gene", v)) == [["20848"],
                                                                                 ["20848"]]
    apposed = ApposedName(0, long_start, long_end, 0.1, "Gene", v, short_start, short_start + 5)
    assert linked(apposed)[1] == ["6774"]
