"""Selection rules on hand-made spans: overlap resolution makes the plain greedy rule's
choice (and fast on huge documents), propagation keeps weak repeats, kept spans grow to the KB
names around them, short forms are tagged like their long form, and the floors candidates must
be scored down to."""

from __future__ import annotations

import random
import re

import numpy as np

from e2e_linker.collective.span_selection import (
    SelectionRules,
    SpanPrediction,
    extend_to_names,
    rescue_weak,
    resolve_overlaps,
    tag_short_forms,
)
from e2e_linker.lexical.abbreviations import scan_documents


def test_resolve_overlaps_keeps_most_probable():
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, 0, 10, 0.6, "Disease", v), SpanPrediction(0, 5, 12, 0.9, "Disease", v),
             SpanPrediction(0, 12, 15, 0.5, "Disease", v), SpanPrediction(1, 0, 10, 0.1, "Chemical", v)]
    kept = resolve_overlaps(spans)
    assert [(s.doc_index, s.start, s.end) for s in kept] == [(0, 5, 12), (0, 12, 15), (1, 0, 10)]


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


def test_propagation_keeps_weak_repeats_of_a_detected_surface_form():
    from data_tools.documents import Document, Passage

    text = "cisplatin and aspirin; later Cisplatin again, cisplatin-induced"
    doc = Document(id="p", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(4, np.float32)

    def span(start, end, p):
        return SpanPrediction(0, start, end, p, "Chemical", vec)

    later = text.index("Cisplatin")
    induced = text.index("cisplatin-induced")
    spans = [span(0, 9, 0.9),                      # detected: the surface form
             span(14, 21, 0.3),                    # weak, never detected strongly: dropped
             span(later, later + 9, 0.3),          # weak repeat, other case: kept
             span(induced, induced + 17, 0.95),    # strong, overlaps the weak repeat below
             span(induced, induced + 9, 0.35)]     # weak repeat inside a strong span: loses
    kept = rescue_weak(spans, 0.6, [doc], propagation_threshold=0.2)
    assert [(s.start, s.end) for s in kept] == [(0, 9), (later, later + 9),
                                                (induced, induced + 17)]


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


def test_weak_floors_are_the_thresholds_on_and_below_keep():
    assert SelectionRules(0.5).weak_floors() == []
    assert SelectionRules(0.5, propagation_threshold=0.2,
                          dictionary_threshold=0.1).weak_floors() == [0.2, 0.1]
    assert SelectionRules(0.5, propagation_threshold=0.7,
                          dictionary_threshold=0.5).weak_floors() == []
    assert SelectionRules(0.5, name_extension=0.05).weak_floors() == []
    assert SelectionRules(0.5, 0.99, propagation_threshold=0.2,
                          name_extension=0.05).detection_floor() == 0.05
    assert SelectionRules(0.5, propagation_threshold=0.2).detection_floor() == 0.2
    assert SelectionRules(0.5, name_extension=0.7).detection_floor() == 0.5


def test_the_gate_asks_for_lexical_links_and_spares_the_spans_it_links():
    from data_tools.documents import Document, Passage

    doc = Document(id="g", passages=[Passage(offset=0, text="alpha beta gamma")])
    vec = np.zeros(1, np.float32)
    spans = [SpanPrediction(0, 0, 5, 0.7, "Chemical", vec),
             SpanPrediction(0, 6, 10, 0.7, "Chemical", vec),
             SpanPrediction(0, 11, 16, 0.995, "Chemical", vec)]
    asked = []

    def linked(found):
        asked.append([s.start for s in found])
        return [s.start == 0 for s in found]

    kept = SelectionRules(0.5, lexical_gate=0.99).select(spans, [doc], linked, None, scan_documents([doc]))
    assert [s.start for s in kept] == [0, 11] and asked == [[0, 6, 11]]
    assert [s.start for s in SelectionRules(0.5).select(spans, [doc], linked, None, scan_documents([doc]))] == [0, 6, 11]
    assert len(asked) == 1  # no gate: no lookups


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


def test_a_candidate_with_an_unbalanced_bracket_is_never_kept():
    from data_tools.documents import Document, Passage

    text = "glucose-6-phosphate dehydrogenase (G6PD) deficiency and 1,25-(OH)2D3 levels"
    doc = Document(id="b", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(1, np.float32)

    def at(phrase, p):
        start = text.index(phrase)
        return SpanPrediction(0, start, start + len(phrase), p, "Disease", vec)

    inside = at("G6PD) deficiency", 0.9)
    whole = at("glucose-6-phosphate dehydrogenase (G6PD) deficiency", 0.6)
    chemical = at("1,25-(OH)2D3", 0.8)
    every_one_linked = lambda found: [True] * len(found)  # noqa: E731
    kept = SelectionRules(0.5).select([inside, whole, chemical], [doc], every_one_linked, None,
                                      scan_documents([doc]))
    assert [text[s.start:s.end] for s in kept] == [
        "glucose-6-phosphate dehydrogenase (G6PD) deficiency", "1,25-(OH)2D3"]


def test_an_ion_cut_before_its_charge_is_never_kept():
    from data_tools.documents import Document, Passage

    text = "the Ca2+/calmodulin kinase and CA2 levels"
    doc = Document(id="c", passages=[Passage(offset=4, text=text)])
    vec = np.zeros(1, np.float32)

    def at(phrase, p, type_="Gene"):
        start = text.index(phrase) + 4
        return SpanPrediction(0, start, start + len(phrase), p, type_, vec)

    cut, ion, gene = at("Ca2", 0.9), at("Ca2+", 0.6, "Chemical"), at("CA2", 0.9)
    every_one_linked = lambda found: [True] * len(found)  # noqa: E731
    kept = SelectionRules(0.5).select([cut, ion, gene], [doc], every_one_linked, None,
                                      scan_documents([doc]))
    assert [doc.text_at(s.start, s.end) for s in kept] == ["Ca2+", "CA2"]
