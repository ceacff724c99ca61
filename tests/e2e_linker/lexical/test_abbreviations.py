"""Schwartz–Hearst abbreviation detection on real sentences, inferred short forms, mention
expansion, one scan per document, and the annotator's use of abbreviations in linking."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.lexical.abbreviations import (
    DocumentAbbreviations,
    best_long_form,
    document_mentions,
    expand_mention,
    find_abbreviations,
    initials_in_other_order,
    letter_expansions,
    mention_pair_expansions,
    stands_for,
    written_for,
)


def abbreviation_expansions(text: str) -> dict[str, str]:
    return DocumentAbbreviations.scan(text).defined


def document_expansions(doc: Document, mentions: bool = True) -> dict[str, str]:
    return DocumentAbbreviations.scan(doc.text).expansions(
        document_mentions(doc) if mentions else None)


def mention_expansions(doc: Document, defined: dict[str, str]) -> dict[str, str]:
    return mention_pair_expansions(document_mentions(doc), defined)


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


def test_brackets_inside_a_chemical_name_are_kept():
    text = "dogs receiving 1-(2-chloroethyl)-3-cyclohexyl-1-nitrosourea (CCNU) were studied"
    assert abbreviation_expansions(text) == {
        "CCNU": "1-(2-chloroethyl)-3-cyclohexyl-1-nitrosourea"}


def test_one_letter_definitions_expand_bare_mentions_only():
    text = ("Serum prolactin (PRL) and testosterone (T) fell; saline (C), methylprednisolone (M) "
            "or triamcinolone (X) were given.")
    letters = letter_expansions(text)
    # "saline (C)" and "triamcinolone (X)": the word does not start with the letter
    assert letters == {"T": "testosterone", "M": "methylprednisolone"}
    assert expand_mention("T", letters) == "testosterone"
    assert expand_mention("T cells", letters) == "T cells"
    assert expand_mention("vitamin C", {"C": "carbon"}) == "vitamin C"


def _annotated(text: str, spans: list[tuple[str, str]]) -> Document:
    doc = Document("9", [Passage(0, text, {})])
    for surface, type_ in spans:
        start = text.index(surface)
        doc.add_annotation(Annotation(start, start + len(surface), surface, type_, ["X"]))
    return doc


def test_undefined_short_forms_resolved_from_the_documents_mentions():
    text = ("Phenobarbital and diethylnitrosamine were given. PB enhanced DEN toxicity. "
            "NAD and nicotinic acid amide. Hepatitis B surface antigen and HBsAg.")
    doc = _annotated(text, [("Phenobarbital", "Chemical"), ("diethylnitrosamine", "Chemical"),
                            ("PB", "Chemical"), ("DEN", "Chemical"), ("toxicity", "Disease"),
                            ("NAD", "Disease"), ("nicotinic acid amide", "Chemical"),
                            ("Hepatitis B surface antigen", "Chemical"),
                            ("HBsAg", "Chemical")])
    found = mention_expansions(doc, {})
    assert found["PB"] == "Phenobarbital" and found["DEN"] == "diethylnitrosamine"
    assert found["HBsAg"] == "Hepatitis B surface antigen"
    assert "NAD" not in found  # a Disease mention does not take a Chemical long form
    # a definition in the text wins; two matching long forms are ambiguous
    assert "PB" not in mention_expansions(doc, {"PB": "polybrene"})
    doc2 = _annotated("Propylene butanol and polybutylene; PB.",
                      [("Propylene butanol", "Chemical"), ("polybutylene", "Chemical"),
                       ("PB", "Chemical")])
    assert "PB" not in mention_expansions(doc2, {})
    assert document_expansions(doc)["DEN"] == "diethylnitrosamine"
    assert "DEN" not in document_expansions(doc, mentions=False)


@pytest.mark.parametrize("text,pairs", [
    ("Patients with temporal lobe epilepsy (TLE) were studied.", [("TLE", "temporal lobe epilepsy")]),
    ("after 3,4-methylenedioxymethamphetamine (MDMA) use",
     [("MDMA", "3,4-methylenedioxymethamphetamine")]),
    ("contrast-induced nephropathy (CIN) after contrast media (CM)",
     [("CIN", "contrast-induced nephropathy"), ("CM", "contrast media")]),
    ("blood pressure (BP) rose (p < 0.05) in (n = 3) rats (2)", [("BP", "blood pressure")]),
    ("This is unrelated (XYZ) text.", []),
    # a bracket glued to the word before it; spaces before a bracket; a clause boundary
    ("tumor necrosis factor(TNF) was high", [("TNF", "tumor necrosis factor")]),
    ("we saw that; heat shock factor  (HSF) bound", [("HSF", "heat shock factor")]),
    # the long form must lie within min(|SF| + 5, 2|SF|) words of the bracket
    ("heat shock protein 70 kinase family protein (HSP)", []),
])
def test_find_abbreviations(text, pairs):
    found = find_abbreviations(text)
    assert [(a.short, a.long) for a in found] == pairs
    for a in found:
        assert text[a.long_start:a.long_end] == a.long and text[a.short_start:a.short_end] == a.short


def test_each_bracket_of_a_long_text_reads_only_the_words_before_it():
    # thousands of definitions, each found with its own offsets (the scan once copied the whole
    # text before every bracket)
    text = " ".join(f"word{i} heat shock factor (HSF)" for i in range(3000))
    found = find_abbreviations(text)
    assert len(found) == 3000
    last = found[-1]
    assert (last.short, last.long) == ("HSF", "heat shock factor")
    assert text[last.long_start:last.long_end] == "heat shock factor"
    assert text[last.short_start:last.short_end] == "HSF"


def test_best_long_form_needs_word_start_for_first_letter():
    assert best_long_form("HSF", "heat shock factor") == 0
    assert best_long_form("ABC", "xyz") is None


def test_real_bc5cdr_abbreviations(bc5cdr_test_docs):
    """Most short forms in BC5CDR gold whose definition we detect share the long form's concept."""
    agree = total = 0
    for doc in bc5cdr_test_docs:
        abbrs = DocumentAbbreviations.scan(doc.text).definitions
        by_span = {(a.start, a.end): a for a in doc.annotations}
        for abbr in abbrs.values():
            long_ann = by_span.get((abbr.long_start, abbr.long_end))
            short_ann = by_span.get((abbr.short_start, abbr.short_end))
            if long_ann and short_ann:
                total += 1
                agree += long_ann.concept_ids == short_ann.concept_ids
    assert total > 200 and agree / total > 0.9


def test_annotator_propagates_long_form_concept():
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.model import LinkerConfig
    from e2e_linker.collective.span_selection import SpanPrediction
    from e2e_linker.lexical.sieves import NameDictionary

    class FakeModel:
        config = LinkerConfig(threshold=0.5, resolve_abbreviations=True, exact_match_sieve=True)
        tokenizer = SimpleNamespace(pad_token_id=0)  # the annotator reads its padding id once

        def eval(self):
            return self

    class FakeIndex:
        def link(self, queries, types, k=64):
            return [[("WRONG", 0.9)] for _ in queries]

    text = "We saw temporal lobe epilepsy (TLE) and later TLE again."
    doc = Document("1", [Passage(0, text, {})])
    names = NameDictionary([("temporal lobe epilepsy", "D004833")], {"D004833": "Disease"})
    annotator = Annotator.from_parts(FakeModel(), FakeIndex(), names)
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, text.index("TLE"), text.index("TLE") + 3, 0.9, "Disease", v),
             SpanPrediction(0, text.rindex("TLE"), text.rindex("TLE") + 3, 0.9, "Disease", v)]
    out = annotator.link(spans, [doc])
    assert [a.concept_ids for a in out] == [["D004833"], ["D004833"]]
    assert out[0].infons["link_method"] == "abbreviation"


def test_the_scan_keeps_the_first_definition_that_passes_the_filter():
    text = ("carboplatin's advantages (CBDCA) over cisplatin (CDDP) were small; "
            "cis-diamminedichloroplatinum (CDDP) again.")
    assert [a.long for a in find_abbreviations(text)][0].startswith("carboplatin's")
    found = DocumentAbbreviations.scan(text)
    assert found.definitions["CDDP"].long == "cis-diamminedichloroplatinum"
    assert found.definitions["CDDP"].long_start == text.index("cis-diammine")


def test_an_annotate_call_scans_each_document_once(monkeypatch, tmp_path):
    """Selection (gate, short forms), linking (sieves, short forms) and a text linker all
    read one scan per document per call."""
    from e2e_linker.lexical import abbreviations
    from tests.helpers.tiny_linker import tiny_annotator

    annotator = tiny_annotator(tmp_path)
    # every reader of the scan on: the gate, short-form tagging, short-form linking
    annotator.pipeline = annotator.pipeline.changed(
        enable=("short_forms", "abbreviation_links"), overrides=("lexical_gate.gate=0.5",))
    calls: list[str] = []
    real = abbreviations.find_abbreviations

    def counting(text: str):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(abbreviations, "find_abbreviations", counting)
    texts = ["Cisplatin (CDDP) caused nephrotoxicity; CDDP was stopped.",
             "Temporal lobe epilepsy (TLE) and TLE again with lidocaine."]
    docs = [Document(str(n), [Passage(0, t, {})]) for n, t in enumerate(texts)]
    annotator.annotate(docs)
    assert sorted(calls) == sorted(texts)


def test_a_short_form_stands_for_a_text_whose_first_word_starts_its_letters():
    assert stands_for("HCC", "hepatocellular carcinoma")
    assert stands_for("SOLVD", "studies of left ventricular dysfunction")
    assert not stands_for("SOLVD", "left ventricular dysfunction")
    assert not stands_for("DOC", "catatonia")
    assert not stands_for("TLE", "lobe epilepsy")  # its first letter must start the text


def test_the_mention_a_short_form_stands_for_may_begin_before_its_shortest_long_form():
    text = ("Carriers of attenuated adenomatous polyposis coli (AAPC), of duration of "
            "catatonia (DOC) and of elevated intraocular pressure (IOP).")
    aapc, doc, iop = find_abbreviations(text)
    assert aapc.long == "adenomatous polyposis coli"  # the shortest letter match
    whole = text.index("attenuated")
    assert written_for(aapc, whole, aapc.long_end, text[whole:aapc.long_end])
    assert written_for(aapc, aapc.long_start, aapc.long_end, aapc.long)
    inner = text.index("polyposis")  # inside, the letters no longer abbreviate it
    assert not written_for(aapc, inner, aapc.long_end, text[inner:aapc.long_end])
    assert not written_for(aapc, whole, aapc.long_end - 5, text[whole:aapc.long_end - 5])
    cat = text.index("catatonia")
    assert not written_for(doc, cat, doc.long_end, "catatonia")
    assert written_for(doc, doc.long_start, doc.long_end, doc.long)
    # a modifier before the letters is part of the mention the short form stands for
    elevated = text.index("elevated")
    assert iop.long == "intraocular pressure"
    assert written_for(iop, elevated, iop.long_end, text[elevated:iop.long_end])


def test_a_long_form_whose_initials_are_the_short_forms_letters_in_another_order():
    found = find_abbreviations("Patients with myotonic dystrophy (DM) and DM2 were seen.")
    assert [(a.short, a.long) for a in found] == [("DM", "myotonic dystrophy")]
    assert initials_in_other_order("DM", "with myotonic dystrophy") == 5
    assert initials_in_other_order("DM", "myotonic disorder of muscle") is None  # not the last
    assert initials_in_other_order("DMD", "myotonic dystrophy") is None  # a letter unused
    assert initials_in_other_order("D2", "two dystrophies") is None  # letters only
