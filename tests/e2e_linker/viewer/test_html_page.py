"""The HTML page of `linker view`: escaping, MeSH links, strict verdicts, exact offsets."""

from __future__ import annotations

import re

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.viewer.html_page import Marked, mesh_link, outermost, render_page, verdicts


def doc(text: str, *anns: tuple[int, int, str, list[str]], doc_id: str = "d1") -> Document:
    annotations = [Annotation(start=s, end=e, text=text[s:e], type=t, concept_ids=ids, id=str(k))
                   for k, (s, e, t, ids) in enumerate(anns)]
    return Document(id=doc_id, passages=[Passage(offset=0, text=text, annotations=annotations)])


def test_mesh_ids_link_to_the_mesh_browser_and_other_ids_do_not():
    assert mesh_link("D003920") == "https://meshb.nlm.nih.gov/record/ui?ui=D003920"
    assert mesh_link("MESH:c000601") == "https://meshb.nlm.nih.gov/record/ui?ui=C000601"
    assert mesh_link("OMIM:601665") is None and mesh_link("-1") is None


def test_hostile_text_and_ids_are_escaped():
    text = '<script>alert(1)</script> "x" & <b>'
    page = render_page([doc(text, (0, 8, "Chem<i>", ['D1"><script>']))], title="<t>")
    assert "<script>" not in page and "<i>" not in page and "<t>" not in page
    assert "alert(1)&lt;/script&gt; &quot;x&quot; &amp; &lt;b&gt;" in page


def test_composite_ids_get_a_link_each_and_names_come_from_name_of():
    names = {"D000001": "First", "D000002": "Second"}
    page = render_page([doc("a b", (0, 1, "Disease", ["D000001", "D000002"]))],
                       name_of=names.get)
    assert page.count('href="https://meshb.nlm.nih.gov/record/ui?ui=D00000') == 2
    assert "First" in page and "Second" in page


def test_verdicts_follow_the_strict_criterion():
    gold = doc("aa bb cc", (0, 2, "X", ["D1"]), (3, 5, "X", ["D2"]), (6, 8, "X", ["D3"])).annotations
    pred = doc("aa bb cc", (0, 2, "X", ["D1"]), (3, 5, "X", ["D9"]), (6, 7, "X", ["D3"])).annotations
    assert verdicts(pred, gold) == (["tp", "fp", "fp"], ["tp", "fn", "fn"])


def test_counts_with_gold_match_linker_score():
    from e2e_linker.scoring import score

    gold = [doc("aa bb cc", (0, 2, "X", ["D1"]), (3, 5, "X", ["D2"]))]
    pred = [doc("aa bb cc", (0, 2, "X", ["D1"]), (6, 8, "X", ["D3"]))]
    page = render_page(pred, gold)
    report = score(gold, pred, "strict")
    assert f"all documents: TP {report.tp} · FP {report.fp} · FN {report.fn}" in page
    assert 'class="m fp"' in page and 'class="m fn"' in page and 'class="m tp"' in page


def test_offsets_are_exact_on_non_ascii_text():
    text = "Naïve β-blocker ☃ use: propranolol"
    start = text.index("propranolol")
    page = render_page([doc(text, (start, start + 11, "Chemical", ["D011433"]))])
    highlighted = re.search(r'<span class="m"[^>]*>([^<]*)<span class="tip">', page).group(1)
    assert highlighted == "propranolol"


def test_overlapping_mentions_show_the_outer_one_and_list_the_inner():
    marked = [Marked(a) for a in doc("lung cancer", (0, 11, "Disease", ["D1"]),
                                     (5, 11, "Disease", ["D2"])).annotations]
    kept = outermost(marked)
    assert len(kept) == 1 and kept[0].annotation.end == 11
    assert [a.concept_ids for a in kept[0].hidden] == [["D2"]]
