"""SequenceContextRule: a chemical's name used for a residue or base of a sequence."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.sequence_context import SequenceContextRule, names_a_residue
from e2e_linker.collective.span_selection import SpanPrediction

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


def run(rule: SequenceContextRule, pairs) -> list[Annotation | None]:
    anns, spans = zip(*pairs, strict=True)
    return rule.apply(list(anns), list(spans), [DOC])


def test_residues_and_exchanges_are_dropped_doses_and_levels_kept():
    pairs = [chemical("arginine", 0), chemical("tryptophan"), chemical("arginine", 1),
             chemical("glycine", 0), chemical("glycine", 1), chemical("Arginine")]
    out = run(SequenceContextRule(), pairs)
    assert [a is None for a in out] == [True, True, True, False, False, False]


def test_keep_and_other_types_change_nothing():
    assert run(SequenceContextRule("keep"), [chemical("arginine")])[0] is not None
    assert run(SequenceContextRule(), [chemical("arginine", type_="Disease")])[0] is not None


def test_the_patterns():
    assert names_a_residue(" (Tyr) codon 67")
    assert names_a_residue("-substitutions were found")
    assert names_a_residue(" polymorphism (c.469C>A)")
    assert names_a_residue(" to cytosine mutation at position 28")
    assert not names_a_residue(" 20 mg per day")
    assert not names_a_residue(" receptor agonists")
    assert not names_a_residue(" to the patients")


def test_a_bad_setting_fails():
    with pytest.raises(ValueError, match="sequence_residues"):
        SequenceContextRule("retype")
