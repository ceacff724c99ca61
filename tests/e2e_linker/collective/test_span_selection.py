"""Selection rules on hand-made spans: overlap resolution makes the plain greedy rule's
choice (and fast on huge documents), kept spans grow to the KB names around them, short forms
are tagged like their long form. (The select steps that call them, in a pipeline's order:
tests/e2e_linker/pipeline/test_selection_steps.py.)"""

from __future__ import annotations

import random
import re

import numpy as np

from e2e_linker.collective.span_selection import (
    CoveredText,
    SpanPrediction,
    extend_to_names,
    free_occurrences,
    keep_repeats,
    named_parts,
    resolve_overlaps,
    spans_by_document,
    tag_short_forms,
)
from e2e_linker.lexical.abbreviations import scan_documents


def test_resolve_overlaps_keeps_most_probable():
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, 0, 10, 0.6, "Disease", v), SpanPrediction(0, 5, 12, 0.9, "Disease", v),
             SpanPrediction(0, 12, 15, 0.5, "Disease", v), SpanPrediction(1, 0, 10, 0.1, "Chemical", v)]
    kept = resolve_overlaps(spans)
    assert [(s.doc_index, s.start, s.end) for s in kept] == [(0, 5, 12), (0, 12, 15), (1, 0, 10)]


def test_spans_by_document_keeps_given_order_within_and_first_met_order_across():
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(2, 9, 12, 0.1, "Gene", v), SpanPrediction(0, 5, 8, 0.2, "Gene", v),
             SpanPrediction(2, 0, 3, 0.3, "Gene", v)]
    grouped = spans_by_document(spans)
    assert list(grouped) == [2, 0]
    assert [s.start for s in grouped[2]] == [9, 0]
    assert grouped[0] == [spans[1]]
    assert spans_by_document([]) == {}


# overlap resolution against its definition

_V = np.zeros(1, np.float32)


def _greedy(spans: list[SpanPrediction]) -> list[tuple[int, int, int]]:
    """The definition: most probable first, kept when it overlaps nothing kept so far."""
    kept = []
    for s in sorted(spans, key=lambda x: (x.doc_index, -x.mention_score, x.start, x.end)):
        if all(k[0] != s.doc_index or s.end <= k[1] or s.start >= k[2] for k in kept):
            kept.append((s.doc_index, s.start, s.end))
    return sorted(kept)


def test_matches_the_greedy_definition_on_random_spans():
    for seed in range(200):
        rng = random.Random(seed)
        spans = []
        for _ in range(rng.randint(0, 50)):
            start = rng.randint(0, 40)
            spans.append(SpanPrediction(rng.randint(0, 2), start, start + rng.randint(1, 8),
                                        round(rng.random(), 2), "", _V))
        got = [(s.doc_index, s.start, s.end) for s in resolve_overlaps(spans)]
        assert got == _greedy(spans), seed


class _CountingSpan(SpanPrediction):
    """A span that counts how often any span's offsets are read: the work overlap resolution
    does, independent of the machine's speed."""

    reads = 0

    def __getattribute__(self, name):
        if name in ("start", "end"):
            _CountingSpan.reads += 1
        return object.__getattribute__(self, name)


def test_overlap_resolution_reads_each_span_a_bounded_number_of_times():
    # a hostile 100k-token document has tens of thousands of overlapping candidates: checking
    # each against every kept span would read offsets ~n²/4 times here (10⁸), not ~10·n
    rng = random.Random(0)
    spans = [_CountingSpan(0, a, a + w, rng.random(), "", _V)
             for a in range(0, 40_000, 4) for w in (3, 7)]
    _CountingSpan.reads = 0
    kept = resolve_overlaps(spans)
    reads = _CountingSpan.reads
    assert all(a.end <= b.start for a, b in zip(kept, kept[1:], strict=False))
    assert len(kept) > 2_000
    assert reads <= 12 * len(spans), reads


def test_short_forms_of_a_detected_long_form_are_tagged_at_every_free_occurrence():
    from data_tools.documents import Document, Passage

    text = "phenobarbital (PB) was given; PB levels rose, PBX did not; serum-PB too. PB"
    doc = Document(id="pb", passages=[Passage(offset=0, text=text)])
    vec = np.ones(4, np.float32)
    long_form = SpanPrediction(0, 0, 13, 0.9, "Chemical", vec)
    occupied = text.index("serum-PB")
    other = SpanPrediction(0, occupied, occupied + 8, 0.8, "Disease", vec)
    tagged = tag_short_forms([long_form, other], [doc], scan_documents([doc]))
    found = [(s.start, s.end, s.type, s.mention_score) for s in tagged]
    pbs = [m.start() for m in re.finditer(r"\bPB\b", text)]
    expected = [(p, p + 2, "Chemical", 0.9) for p in pbs if p != occupied + 6]
    assert sorted(found) == sorted([(0, 13, "Chemical", 0.9),
                                    (occupied, occupied + 8, "Disease", 0.8), *expected])
    assert len(expected) == 3  # "(PB)", "PB levels", the last "PB"; not PBX, not inside serum-PB


def test_a_span_inside_a_long_form_is_a_source_only_when_the_short_form_abbreviates_it():
    from data_tools.documents import Document, Passage

    text = ("The duration of catatonia (DOC) fell. Chronic hepatocellular carcinoma (HCC) "
            "grew; DOC and HCC again.")
    doc = Document(id="s", passages=[Passage(offset=0, text=text)])
    vec = np.ones(4, np.float32)

    def at(phrase):
        start = text.index(phrase)
        return SpanPrediction(0, start, start + len(phrase), 0.9, "Disease", vec)

    catatonia, hcc = at("catatonia"), at("hepatocellular carcinoma")
    tagged = tag_short_forms([catatonia, hcc], [doc], scan_documents([doc]))
    words = [text[s.start:s.end] for s in tagged]
    # "HCC" abbreviates the kept "hepatocellular carcinoma"; "DOC" does not abbreviate "catatonia"
    assert words == ["catatonia", "hepatocellular carcinoma", "HCC", "HCC"]


def test_a_kept_span_grows_to_the_longest_kb_name_around_it():
    from data_tools.documents import Document, Passage

    text = "chronic lymphocytic leukemia and aggressive periodontitis, AT) and lupus"
    doc = Document(id="x", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(1, np.float32)
    names = {"chronic lymphocytic leukemia", "lymphocytic leukemia", "aggressive periodontitis",
             "periodontitis", "AT)", "lupus"}

    def at(phrase, p, type_="Disease", length=None):
        start = text.index(phrase)
        return SpanPrediction(0, start, start + (length or len(phrase)), p, type_, vec)

    def is_name(t, type_):
        return t in names and type_ == "Disease"

    head = at("lymphocytic leukemia", 0.9)
    longer = at("chronic lymphocytic leukemia", 0.3, type_="Chemical")
    period = at("periodontitis", 0.95)
    weak = at("aggressive periodontitis", 0.04)
    short = at("AT)", 0.9, length=2)
    bracket = at("AT)", 0.5)
    lupus = at("lupus", 0.8)
    candidates = [head, longer, period, weak, short, bracket, lupus]
    kept = extend_to_names([head, period, short, lupus], candidates, [doc], is_name, 0.05)
    assert [(text[s.start:s.end], s.type, s.mention_score) for s in kept] == [
        ("chronic lymphocytic leukemia", "Disease", 0.3),  # its score, the kept span's type
        ("periodontitis", "Disease", 0.95),                # the longer name: below the floor
        ("AT", "Disease", 0.9),                            # a bracket is not a name's edge
        ("lupus", "Disease", 0.8)]                         # nothing longer around it
    # a longer name that would overlap another kept span: the kept span stays
    chronic = at("chronic", 0.9)
    kept = extend_to_names([chronic, head], candidates, [doc], is_name, 0.05)
    assert [(s.start, s.end) for s in kept] == [(chronic.start, chronic.end),
                                                (head.start, head.end)]


def test_a_gated_span_gives_way_to_the_longest_run_naming_a_concept_it_links_to():
    from data_tools.documents import Document, Passage

    text = "allergic asthma; cystic fibrosis airway disease; brain iron; allergic asthma"
    doc = Document(id="x", passages=[Passage(offset=0, text=text)])
    vec = np.ones(3, np.float32)

    def at(phrase, p, nth=0):
        start = -1
        for _ in range(nth + 1):
            start = text.index(phrase, start + 1)
        return SpanPrediction(0, start, start + len(phrase), p, "Disease", vec)

    names = {"asthma": ["ASTHMA"], "allergic": ["HYPERSENSITIVITY"], "disease": ["DISEASE"],
             "cystic fibrosis": ["CF"], "allergic asthma": ["ASTHMA"]}
    gated = [at("allergic asthma", 0.97), at("cystic fibrosis airway disease", 0.86),
             at("brain iron", 0.7), at("allergic asthma", 0.97),
             at("allergic asthma", 0.9, nth=1)]
    links = {0: {"ASTHMA"}, 1: {"CF", "DISEASE"}, 3: {"ASTHMA"}, 4: {"HYPERSENSITIVITY"}}
    asked = []

    def linked(spans):
        asked.append([next(k for k, g in enumerate(gated) if g is s) for s in spans])
        return [links[k] for k in asked[-1]]

    parts = named_parts(gated, [doc], lambda t, type_: names.get(t, []), linked)
    assert [(text[s.start:s.end], s.start, s.mention_score, s.type) for s in parts] == [
        ("asthma", 9, 0.97, "Disease"),             # "allergic" names what it does not link to
        ("cystic fibrosis", 17, 0.86, "Disease"),   # longer than the head "disease"
        # "brain iron": no named run, not searched; the repeat of a place returned once
        ("allergic", text.rindex("allergic"), 0.9, "Disease")]  # it links to that one
    assert parts[0].vector is vec and asked == [[0, 1, 3, 4]]
    # of two runs as long, the head (the one that ends the span) wins
    two = Document(id="y", passages=[Passage(offset=0, text="gout gout")])
    both = named_parts([SpanPrediction(0, 0, 9, 0.9, "Disease", vec)], [two],
                       lambda t, type_: ["GOUT"] if t == "gout" else [],
                       lambda spans: [{"GOUT"}] * len(spans))
    assert [(s.start, s.end) for s in both] == [(5, 9)]


def test_covered_text_touches_only_its_characters():
    v = np.zeros(2, np.float32)
    taken = CoveredText(20, [SpanPrediction(0, 5, 8, 0.5, "Gene", v)])
    assert taken.touches(7, 9) and taken.touches(0, 6)
    assert not taken.touches(0, 5) and not taken.touches(8, 20)
    taken.add(10, 12)
    assert taken.touches(11, 15) and not taken.touches(12, 15)


def test_free_occurrences_whole_words_not_taken_and_marks_them():
    text = "PB and PBS; PB, (PB) xPB PB2 PB"
    v = np.zeros(2, np.float32)
    taken = CoveredText(len(text), [SpanPrediction(0, 0, 2, 0.5, "Chemical", v)])
    found = free_occurrences(text, "PB", taken)
    assert [text[a:b] for a, b in found] == ["PB", "PB", "PB"]
    assert [a for a, _ in found] == [12, 17, len(text) - 2]
    assert free_occurrences(text, "PB", taken) == []  # each is taken now


def test_keep_repeats_fills_free_text_with_the_kept_spans_type():
    from data_tools.documents import Document, Passage
    text = "brain iron and Iron chelation; iron overload; iron, TP53 and tp53; gout"
    doc = Document(id="r", passages=[Passage(offset=0, text=text)])
    other = Document(id="o", passages=[Passage(offset=0, text="iron")])
    v = np.zeros(2, np.float32)
    overload = text.index("iron overload")
    third = text.index("iron,")
    tp53 = text.index("TP53")
    low = text.index("tp53")
    kept = [SpanPrediction(0, 6, 10, 0.9, "Chemical", v),                   # "iron", kept
            SpanPrediction(0, overload, overload + 13, 0.9, "Disease", v),  # "iron overload"
            SpanPrediction(0, tp53, tp53 + 4, 0.9, "Gene", v)]
    candidates = [
        SpanPrediction(0, 15, 19, 0.01, "Chemical", v),        # "Iron": case folded, added
        SpanPrediction(0, overload, overload + 4, 0.5, "Chemical", v),  # inside a kept span
        SpanPrediction(0, third, third + 4, 0.004, "Chemical", v),      # below the floor
        SpanPrediction(0, low, low + 4, 0.3, "Chemical", v),            # a Gene's repeat
        SpanPrediction(1, 0, 4, 0.5, "Chemical", v),           # another document's text
    ]
    got = keep_repeats(kept, candidates, [doc, other], 0.005, frozenset({"Chemical", "Disease"}))
    added = [s for s in got if s not in kept]
    assert [(s.start, s.end, s.type) for s in added] == [(15, 19, "Chemical")]
    # every type: the Gene's repeat too, with the Gene type the kept span has
    every = keep_repeats(kept, candidates, [doc, other], 0.005, None)
    assert [(s.start, s.type) for s in every if s not in kept] == [(15, "Chemical"),
                                                                   (low, "Gene")]
    assert keep_repeats(kept, [], [doc, other], 0.005, None) == kept


def test_keep_repeats_leaves_a_text_kept_with_two_types_and_takes_the_likelier_overlap():
    from data_tools.documents import Document, Passage
    text = "MS and MS; MS MS drug; MS drug"
    doc = Document(id="t", passages=[Passage(offset=0, text=text)])
    v = np.zeros(2, np.float32)
    kept = [SpanPrediction(0, 0, 2, 0.9, "Disease", v), SpanPrediction(0, 7, 9, 0.9, "Chemical", v)]
    assert keep_repeats(kept, [SpanPrediction(0, 11, 13, 0.5, "Disease", v)], [doc], 0.0,
                        None) == kept
    drug = text.index("MS drug")
    last = text.rindex("MS drug")
    kept = [SpanPrediction(0, last, last + 7, 0.9, "Chemical", v)]
    candidates = [SpanPrediction(0, drug - 3, drug + 2, 0.2, "Chemical", v),   # "MS MS"
                  SpanPrediction(0, drug, drug + 7, 0.4, "Chemical", v)]       # "MS drug"
    got = keep_repeats(kept, candidates, [doc], 0.0, None)
    assert [(s.start, s.end) for s in got] == [(drug, drug + 7), (last, last + 7)]

