"""drop_gene_modifiers (formerly GeneContextRule): a chemical's or disease's name used as
part of a gene's name."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.gene_context import (
    DROPPED_TYPES,
    drop_gene_modifiers,
    names_a_gene_part,
)
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.pipeline.declaration import OFF_UNLESS_DECLARED

TITLE = "Creatine kinase and the retinoblastoma (Rb) gene"
ABSTRACT = ("Serum creatine kinase rose in retinoblastoma patients given creatine 5 g daily. "
            "Dopamine release and the thyrotropin receptor were measured.")
DOC = Document(id="d1", passages=[Passage(offset=0, text=TITLE),
                                  Passage(offset=len(TITLE) + 1, text=ABSTRACT)])


def span(text: str, type_: str, nth: int = 0):
    full = DOC.text
    start = -1
    for _ in range(nth + 1):
        start = full.index(text, start + 1)
    ann = Annotation(start, start + len(text), text, type_, ["D000001"])
    return ann, SpanPrediction(0, ann.start, ann.end, 0.9, type_, np.zeros(2))


PAIRS = [span("Creatine", "Chemical"), span("retinoblastoma", "Disease", 0),
         span("creatine", "Chemical", 0), span("retinoblastoma", "Disease", 1),
         span("creatine", "Chemical", 1), span("Dopamine", "Chemical"),
         span("thyrotropin", "Chemical")]


def run(**types) -> list[bool]:
    anns, spans = zip(*PAIRS, strict=True)
    return [a is None for a in drop_gene_modifiers(list(anns), list(spans), [DOC], **types)]


def test_names_inside_gene_names_are_dropped_the_rest_kept():
    assert run(types="all") == [True, True, True, False, False, False, True]
    assert run() == run(types="all")  # "all" is the default


def test_chemicals_only_keeps_diseases_and_the_step_disabled_keeps_all():
    assert run(types="chemicals") == [True, False, True, False, False, False, True]
    assert set(DROPPED_TYPES) == {"all", "chemicals"}
    # the step disabled: the rule returns a new list and the annotations it was given (what
    # the pipeline hands on without it) hold every span
    anns, spans = (list(x) for x in zip(*PAIRS, strict=True))
    drop_gene_modifiers(anns, spans, [DOC])
    assert anns == [a for a, _ in PAIRS] and all(a is not None for a in anns)
    assert "gene_modifiers" in OFF_UNLESS_DECLARED  # off by default


def test_the_patterns():
    for following in (" dehydrogenase deficiency", "-DNA glycosylase", " N-methyltransferase",
                      " (LTB4) omega-hydroxylase", " receptor tyrosine kinase",
                      "-binding protein", "-interacting zinc-finger protein",
                      "-associated antigen p97", " channel gene", " necrosis factor (TNF)",
                      " transmembrane conductance regulator", " cotransporter."):
        assert names_a_gene_part(following), following
    for following in (" release", " increase", " phase", " base pairs", " levels rose",
                      " in the gene", " genesis", " proteinuria", "-induced nephrotoxicity",
                      " and disease"):
        assert not names_a_gene_part(following), following


def test_a_bad_setting_fails():
    anns, spans = zip(*PAIRS, strict=True)
    with pytest.raises(ValueError, match="gene_modifiers"):
        drop_gene_modifiers(list(anns), list(spans), [DOC], types="retype")
    with pytest.raises(ValueError, match="gene_modifiers"):
        drop_gene_modifiers(list(anns), list(spans), [DOC], types="keep")
