"""drop_sequence_chemicals (formerly SequenceContextRule): a chemical's name used for a
residue or base of a sequence."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.sequence_context import drop_sequence_chemicals, names_a_residue
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations

TITLE = "Arginine and glycine in a trial"
ABSTRACT = ("The arginine residue at position 150 was lost by a tryptophan to arginine "
            "substitution. Patients took glycine 5 mg daily; glycine levels rose.")
DOC = Document(id="d1", passages=[Passage(offset=0, text=TITLE),
                                  Passage(offset=len(TITLE) + 1, text=ABSTRACT)])


def chemical(text: str, nth: int = 0, type_: str = "Chemical"):
    full = DOC.text
    start = -1
    for _ in range(nth + 1):
        start = full.index(text, start + 1)
    ann = Annotation(start, start + len(text), text, type_, ["D001120"])
    return ann, SpanPrediction(0, ann.start, ann.end, 0.9, type_, np.zeros(2))


def run(pairs) -> list[Annotation | None]:
    anns, spans = zip(*pairs, strict=True)
    return drop_sequence_chemicals(list(anns), list(spans), [DOC],
                                   [DocumentAbbreviations.scan(DOC.text)])


def test_residues_and_exchanges_are_dropped_doses_and_levels_kept():
    pairs = [chemical("arginine", 0), chemical("tryptophan"), chemical("arginine", 1),
             chemical("glycine", 0), chemical("glycine", 1), chemical("Arginine")]
    out = run(pairs)
    assert [a is None for a in out] == [True, True, True, False, False, False]


def test_the_input_and_other_types_are_left_alone():
    """The rule returns a new list: the annotations it was given (what the step disabled
    leaves) still hold the residue; a Disease span is not the rule's."""
    ann, span = chemical("arginine")
    given = [ann]
    assert drop_sequence_chemicals(given, [span], [DOC],
                                   [DocumentAbbreviations.scan(DOC.text)]) == [None]
    assert given == [ann] and given[0] is ann
    assert run([chemical("arginine", type_="Disease")])[0] is not None


def test_the_patterns():
    assert names_a_residue(" (Tyr) codon 67")
    assert names_a_residue("-substitutions were found")
    assert names_a_residue(" polymorphism (c.469C>A)")
    assert names_a_residue(" to cytosine mutation at position 28")
    assert not names_a_residue(" 20 mg per day")
    assert not names_a_residue(" receptor agonists")
    assert not names_a_residue(" to the patients")


class OneConceptKB:
    """The KB's sodium nitroprusside, whose names include the letters SNP."""

    def get(self, concept_id):
        from data_tools.kb import Concept
        if concept_id != "D009599":
            return None
        return Concept(concept_id, "Nitroprusside", ["sodium nitroprusside", "SNP"], "Chemical")


def doc_of(text: str) -> Document:
    return Document(id="d2", passages=[Passage(offset=0, text=text)])


def linked(doc: Document, text: str, concept: str = "D009599"):
    start = doc.text.index(text)
    ann = Annotation(start, start + len(text), text, "Chemical", [concept])
    return ann, SpanPrediction(0, ann.start, ann.end, 0.9, "Chemical", np.zeros(2))


@pytest.mark.parametrize("text, span, kept", [
    ("A premature stop codon in exon 3.", "premature stop codon", False),
    ("Variants in the 5'UTR were rare.", "5'UTR", False),
    ("Patients were screened for SNPs. The SNP at 35322 was rare.", "SNP", False),
    # BC5CDR's guideline: the same letters for the drug the abstract names in full
    ("Infusion of sodium nitroprusside (SNP, n = 7). The SNP group fell.", "SNP", True),
    ("Sodium nitroprusside (SNP) lowered pressure.", "SNP", True),
    ("Glucose levels rose.", "Glucose", True),
])
def test_a_chemical_whose_own_text_names_a_sequence_element(text, span, kept):
    doc = doc_of(text)
    ann, pred = linked(doc, span)
    abbreviations = [DocumentAbbreviations.scan(doc.text)]
    given = [ann]
    out = drop_sequence_chemicals(given, [pred], [doc], abbreviations, OneConceptKB())
    assert (out[0] is not None) == kept
    assert given[0] is ann  # the step disabled: the annotation as it was


def test_without_a_kb_an_undefined_snp_is_a_variant():
    doc = doc_of("Infusion of sodium nitroprusside (SNP, n = 7). The SNP group fell.")
    ann, pred = linked(doc, "SNP")
    assert drop_sequence_chemicals([ann], [pred], [doc],
                                   [DocumentAbbreviations.scan(doc.text)])[0] is None


@pytest.mark.parametrize("text, span, kept", [
    ("The mutation causes the substitution of a conserved arginine at amino acid position 229.",
     "arginine", False),
    ("We described a methionine-->valine change.", "methionine", False),
    ("This leads to deletion of amino acids 809-852 in the protein.", "amino acids", False),
    ("Oral arginine lowered blood pressure in 20 patients.", "arginine", True),
    ("Plasma amino acids rose after the infusion.", "amino acids", True),
    ("Glucose rose in carriers of the mutation.", "Glucose", True),  # not an amino acid
    ("Two were new: substitution of C to T at 33468 in exon 8.", "T", False),
    ("Five of them [c.185C>T (Thr60Met)] were missense.", "T", False),
    ("His gene revealed a 15 nucleotide (nt) deletion of the coding sequence.", "nt", False),
    ("The 2238-9del AG in exon 13 introduced a premature stop.", "AG", False),
    ("A C to T transition resulting in Arg 1306 Trp (R1306W).", "Trp", False),
    ("Serum T fell after orchiectomy in 12 men.", "T", True),  # testosterone: no variant
    ("Plasma K rose to 6.1 mmol/l.", "K", True),  # potassium: not a base
])
def test_an_amino_acid_or_base_in_a_variant_description(text, span, kept):
    doc = doc_of(text)
    ann, pred = linked(doc, span, "D001120")
    out = drop_sequence_chemicals([ann], [pred], [doc], [DocumentAbbreviations.scan(doc.text)])
    assert (out[0] is not None) == kept

