"""Schwartz–Hearst abbreviation detection and its use in linking."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Document, Passage
from e2e_linker.kb_search.abbreviations import abbreviation_map, best_long_form, find_abbreviations


@pytest.mark.parametrize("text,pairs", [
    ("Patients with temporal lobe epilepsy (TLE) were studied.", [("TLE", "temporal lobe epilepsy")]),
    ("after 3,4-methylenedioxymethamphetamine (MDMA) use",
     [("MDMA", "3,4-methylenedioxymethamphetamine")]),
    ("contrast-induced nephropathy (CIN) after contrast media (CM)",
     [("CIN", "contrast-induced nephropathy"), ("CM", "contrast media")]),
    ("blood pressure (BP) rose (p < 0.05) in (n = 3) rats (2)", [("BP", "blood pressure")]),
    ("This is unrelated (XYZ) text.", []),
])
def test_find_abbreviations(text, pairs):
    found = find_abbreviations(text)
    assert [(a.short, a.long) for a in found] == pairs
    for a in found:
        assert text[a.long_start:a.long_end] == a.long and text[a.short_start:a.short_end] == a.short


def test_best_long_form_needs_word_start_for_first_letter():
    assert best_long_form("HSF", "heat shock factor") == 0
    assert best_long_form("ABC", "xyz") is None


def test_real_bc5cdr_abbreviations(bc5cdr_test_docs):
    """Most short forms in BC5CDR gold whose definition we detect share the long form's concept."""
    agree = total = 0
    for doc in bc5cdr_test_docs:
        abbrs = abbreviation_map(doc.text)
        by_span = {(a.start, a.end): a for a in doc.annotations}
        for abbr in abbrs.values():
            long_ann = by_span.get((abbr.long_start, abbr.long_end))
            short_ann = by_span.get((abbr.short_start, abbr.short_end))
            if long_ann and short_ann:
                total += 1
                agree += long_ann.concept_ids == short_ann.concept_ids
    assert total > 200 and agree / total > 0.9


def test_annotator_propagates_long_form_concept():
    from e2e_linker.collective.annotator import Annotator, SpanPrediction
    from e2e_linker.kb_search.sieves import NameDictionary

    class Config:
        resolve_abbreviations = True
        exact_match_sieve = True
        threshold = 0.5

    class FakeModel:
        config = Config()

        def eval(self):
            return self

    class FakeIndex:
        def link(self, queries, types, k=64):
            return [[("WRONG", 0.9)] for _ in queries]

    text = "We saw temporal lobe epilepsy (TLE) and later TLE again."
    doc = Document("1", [Passage(0, text, {})])
    names = NameDictionary([("temporal lobe epilepsy", "D004833")], {"D004833": "Disease"})
    annotator = Annotator(FakeModel(), FakeIndex(), names)
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, text.index("TLE"), text.index("TLE") + 3, 0.9, "Disease", v),
             SpanPrediction(0, text.rindex("TLE"), text.rindex("TLE") + 3, 0.9, "Disease", v)]
    out = annotator.link(spans, [doc])
    assert [a.concept_ids for a in out] == [["D004833"], ["D004833"]]
    assert out[0].infons["link_method"] == "abbreviation"
