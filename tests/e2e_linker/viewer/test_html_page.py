"""The HTML page of `linker view`: escaping, MeSH, NCBI Gene and Taxonomy links, the linker's
record (name, species), strict verdicts as `linker score` counts them (namespaced predictions
against bare gold too), overlaps, exact offsets."""

from __future__ import annotations

import re

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats.mentions_jsonl import CONCEPT_NAME, CONFIDENCE, SPECIES, SPECIES_NAME
from e2e_linker.scoring import score
from e2e_linker.viewer.html_page import Marked, compare, concept_link, outermost, render_page


def doc(text: str, *anns: tuple[int, int, str, list[str]], doc_id: str = "d1") -> Document:
    annotations = [Annotation(start=s, end=e, text=text[s:e], type=t, concept_ids=ids, id=str(k))
                   for k, (s, e, t, ids) in enumerate(anns)]
    return Document(id=doc_id, passages=[Passage(offset=0, text=text, annotations=annotations)])


def totals(page: str) -> str:
    return re.search(r"documents: (TP \d+ · FP \d+ · FN \d+)", page).group(1)


def test_mesh_gene_and_taxon_ids_link_to_their_pages_and_other_ids_do_not():
    assert concept_link("D003920") == "https://meshb.nlm.nih.gov/record/ui?ui=D003920"
    assert concept_link("MESH:D003920") == "https://meshb.nlm.nih.gov/record/ui?ui=D003920"
    assert concept_link("MESH:c000601") == "https://meshb.nlm.nih.gov/record/ui?ui=C000601"
    assert concept_link("NCBIGene:672") == "https://www.ncbi.nlm.nih.gov/gene/672"
    assert concept_link("NCBITaxon:10116") == \
        "https://www.ncbi.nlm.nih.gov/Taxonomy/Browser/wwwtax.cgi?id=10116"
    assert concept_link("OMIM:601665") is None and concept_link("-1") is None
    assert concept_link("672") is None  # a bare number could be a gene or a taxon
    assert concept_link('D003920"><script>') is None
    assert concept_link('NCBIGene:672"><script>') is None


def test_the_linkers_record_shows_its_name_and_a_genes_species():
    gene = Annotation(0, 5, "BRCA1", "Gene", ["NCBIGene:672"], id="0",
                      infons={CONCEPT_NAME: "BRCA1 DNA repair", SPECIES: "NCBITaxon:9606",
                              SPECIES_NAME: "Homo <sapiens>"})
    page = render_page([Document("d1", [Passage(0, "BRCA1 here", annotations=[gene])])],
                       name_of=lambda cid: "from the KB")
    assert ('href="https://www.ncbi.nlm.nih.gov/gene/672">NCBIGene:672</a> BRCA1 DNA repair'
            in page)  # the record's name, not name_of's
    assert "from the KB" not in page
    assert ('<i>species:</i> <a href="https://www.ncbi.nlm.nih.gov/Taxonomy/Browser/'
            'wwwtax.cgi?id=9606">NCBITaxon:9606</a> Homo &lt;sapiens&gt;') in page


def test_the_hover_shows_the_confidence_before_the_scores():
    ann = Annotation(0, 7, "aspirin", "Chemical", ["MESH:D001241"], id="0",
                     infons={CONFIDENCE: "0.8731"}, mention_score=0.95, link_score=31.2)
    page = render_page([Document("d1", [Passage(0, "aspirin", annotations=[ann])])])
    assert "confidence 0.873, mention 0.950, link 31.200" in page
    ann.infons.pop(CONFIDENCE)  # an annotation no linker wrote: no confidence line
    page = render_page([Document("d1", [Passage(0, "aspirin", annotations=[ann])])])
    assert "confidence" not in page and "mention 0.950, link 31.200" in page


def test_namespaced_predictions_count_against_bare_gold_as_linker_score_does():
    text = "aspirin and BRCA1"
    gold = doc(text, (0, 7, "Chemical", ["D001241"]), (12, 17, "Gene", ["672"]))
    pred = doc(text, (0, 7, "Chemical", ["MESH:D001241"]), (12, 17, "Gene", ["NCBIGene:672"]))
    page = render_page([pred], [gold])
    assert totals(page) == "TP 2 · FP 0 · FN 0"


def test_hostile_text_types_ids_and_names_are_escaped():
    text = '<script>alert(1)</script> "x" & <b>'
    page = render_page([doc(text, (0, 8, "Chem<i>", ['D1"><script>']))],
                       name_of=lambda cid: "<img src=x onerror=alert(2)>", title="<t>")
    assert "<script>" not in page and "<i>" not in page and "<t>" not in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "alert(1)&lt;/script&gt; &quot;x&quot; &amp; &lt;b&gt;" in page
    assert "D1&quot;&gt;&lt;script&gt;" in page


def test_hostile_document_ids_are_escaped_in_headers_and_the_list():
    page = render_page([doc("a", doc_id="<svg onload=alert(1)>")])
    assert "<svg" not in page and page.count("&lt;svg onload=alert(1)&gt;") == 2


def test_composite_ids_get_a_link_each_and_names_come_from_name_of():
    names = {"D000001": "First", "D000002": "Second"}
    page = render_page([doc("a b", (0, 1, "Disease", ["D000001", "MESH:D000002"]))],
                       name_of=names.get)
    assert 'href="https://meshb.nlm.nih.gov/record/ui?ui=D000001">D000001</a> First' in page
    assert 'href="https://meshb.nlm.nih.gov/record/ui?ui=D000002">MESH:D000002</a>' in page


def test_every_type_gets_a_colour_and_a_legend_entry():
    page = render_page([doc("a b c", (0, 1, "Chemical", ["D1"]), (2, 3, "Gene", ["G1"]),
                            (4, 5, "Species", ["S1"]))])
    backgrounds = set(re.findall(r'class="m"[^>]*background:(#[0-9a-f]{6})', page))
    assert len(backgrounds) == 3
    assert all(f">{t}</span>" in page for t in ("Chemical", "Gene", "Species"))


def test_verdicts_follow_the_strict_criterion():
    gold = doc("aa bb cc", (0, 2, "X", ["D1"]), (3, 5, "X", ["D2"]), (6, 8, "X", ["D3"])).annotations
    pred = doc("aa bb cc", (0, 2, "Y", ["MESH:D1"]), (3, 5, "X", ["D9"]),
               (6, 7, "X", ["D3"])).annotations
    pred_marks, gold_marks, counts = compare("d1", pred, gold)
    # the type is not compared and MESH: is dropped, as in `linker score --strict`
    assert (pred_marks, gold_marks) == (["tp", "fp", "fp"], ["tp", "fn", "fn"])
    assert counts == {"tp": 1, "fp": 2, "fn": 2}


def test_counts_with_gold_equal_linker_score_duplicates_and_missing_documents_included():
    gold = [doc("aa bb cc", (0, 2, "X", ["D1"]), (3, 5, "X", ["D2"])),
            doc("only gold", (0, 4, "X", ["D7"]), doc_id="d2")]
    pred = [doc("aa bb cc", (0, 2, "X", ["D1"]), (0, 2, "X", ["D1"]), (6, 8, "X", ["D3"])),
            doc("only predicted", (0, 4, "X", ["D8"]), doc_id="d3")]
    page = render_page(pred, gold)
    report = score(gold, pred, "strict")
    assert totals(page) == f"TP {report.tp} · FP {report.fp} · FN {report.fn}" == \
        "TP 1 · FP 2 · FN 2"
    assert "not in the predictions" in page and "not in the gold file" in page
    assert 'class="m fp"' in page and 'class="m fn"' in page and 'class="m tp"' in page


def test_offsets_are_exact_on_non_ascii_text():
    text = "Naïve β-blocker ☃ 😀 use: propranolol"
    start = text.index("propranolol")
    page = render_page([doc(text, (start, start + 11, "Chemical", ["D011433"]),
                            (6, 15, "Chemical", ["D000319"]))])
    highlighted = re.findall(r'<span class="m"[^>]*>([^<]*)<span class="tip">', page)
    assert highlighted == ["β-blocker", "propranolol"]


def test_passages_at_offsets_keep_their_mentions():
    title, abstract = "Ca²⁺ in rats.", "Lidocaine caused hypotension."
    passages = [Passage(offset=0, text=title), Passage(offset=len(title) + 1, text=abstract)]
    start = len(title) + 1 + abstract.index("hypotension")
    passages[1].annotations = [Annotation(start, start + 11, "hypotension", "Disease", ["D1"])]
    page = render_page([Document(id="p", passages=passages)])
    assert re.search(r'<span class="m"[^>]*>hypotension<span class="tip">', page)


def test_overlapping_mentions_show_the_outer_one_and_list_the_inner():
    marked = [Marked(a) for a in doc("lung cancer", (0, 11, "Disease", ["D1"]),
                                     (5, 11, "Disease", ["D2"])).annotations]
    kept = outermost(marked)
    assert len(kept) == 1 and kept[0].annotation.end == 11
    assert [m.annotation.concept_ids for m in kept[0].hidden] == [["D2"]]


def test_an_error_hidden_under_an_outer_mention_is_flagged():
    gold = [doc("lung cancer", (0, 11, "Disease", ["D1"]), (5, 11, "Disease", ["D2"]))]
    pred = [doc("lung cancer", (0, 11, "Disease", ["D1"]))]
    page = render_page(pred, gold)
    assert 'class="m tp hid"' in page and "also: <b class=\"err\">false negative</b>" in page
    assert page.count("lung cancer<span") == 2  # each column draws the text once
