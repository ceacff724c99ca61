"""Schwartz–Hearst detection on real sentences and mention expansion."""

from __future__ import annotations

from data_tools.documents import Document, Passage
from e2e_linker.normalize.abbreviation import (
    abbreviation_expansions,
    document_expansions,
    expand_mention,
)


def test_detects_real_definitions():
    text = ("Chronic use of 3,4-methylenedioxymethamphetamine (MDMA) damages serotonergic "
            "neurons. Patients with temporal lobe epilepsy (TLE) and contrast-induced "
            "nephropathy (CIN) were studied; MDMA users had TLE.")
    assert abbreviation_expansions(text) == {
        "MDMA": "3,4-methylenedioxymethamphetamine",
        "TLE": "temporal lobe epilepsy",
        "CIN": "contrast-induced nephropathy",
    }


def test_no_false_definition_in_statistics():
    assert abbreviation_expansions("blood pressure rose (p < 0.05) in rats (n = 3)") == {}


def test_expand_mention_whole_words_only():
    expansions = {"MDMA": "3,4-methylenedioxymethamphetamine", "CM": "contrast media"}
    assert expand_mention("MDMA", expansions) == "3,4-methylenedioxymethamphetamine"
    assert expand_mention("MDMA-induced toxicity", expansions) == \
        "3,4-methylenedioxymethamphetamine-induced toxicity"
    assert expand_mention("CMV infection", expansions) == "CMV infection"
    assert expand_mention("aspirin", {}) == "aspirin"


def test_document_expansions_span_passages():
    title = "Seizures in temporal lobe epilepsy (TLE)."
    abstract = "TLE is common."
    doc = Document("1", [Passage(0, title, {}), Passage(len(title) + 1, abstract, {})])
    assert document_expansions(doc) == {"TLE": "temporal lobe epilepsy"}


def test_long_forms_reaching_over_another_definition_are_dropped():
    text = "carboplatin's advantages (CBDCA) over cisplatin (CDDP) were small."
    assert "CDDP" not in abbreviation_expansions(text)
