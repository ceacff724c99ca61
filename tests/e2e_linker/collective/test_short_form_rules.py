"""drop_gene_short_forms, drop_undefined_short_forms, drop_disease_symbols and
drop_redefined_short_forms (formerly ShortFormRules): short forms whose link the document does
not support."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Annotation
from data_tools.kb import KB, Concept
from e2e_linker.collective.short_form_rules import (
    GENE_LONG_FORM,
    agrees,
    drop_disease_symbols,
    drop_gene_short_forms,
    drop_redefined_short_forms,
    drop_undefined_short_forms,
)
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations
from e2e_linker.pipeline.declaration import OFF_UNLESS_DECLARED

TEXT = ("Otilonium bromide (OB) was compared with placebo. OB was well tolerated. "
        "Colorectal adenocarcinoma (CRC) cells grew. DM patients and CRC. "
        "The von Hippel-Lindau tumor suppressor gene (VHL) is lost in VHL.")


@pytest.fixture()
def kb() -> KB:
    return KB([Concept("D009765", "Obesity", ["OB"], "Disease"),
               Concept("D015179", "Colorectal Neoplasms", ["CRC"], "Disease"),
               Concept("D003920", "Diabetes Mellitus", ["DM"], "Disease"),
               Concept("D006623", "von Hippel-Lindau Disease", ["VHL"], "Disease")])


def linked(text: str, cid: str, method: str = "exact", nth: int = 0
           ) -> tuple[Annotation, SpanPrediction]:
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(text, start + 1)
    ann = Annotation(start, start + len(text), text, "Disease", [cid],
                     infons={"link_method": method})
    return ann, SpanPrediction(0, ann.start, ann.end, 0.9, "Disease", np.zeros(2))


def lists(pairs) -> tuple[list[Annotation | None], list[SpanPrediction]]:
    anns, spans = zip(*pairs, strict=True)
    return list(anns), list(spans)


ABBREVIATIONS = [DocumentAbbreviations.scan(TEXT)]


def defaults(pairs, kb) -> list[Annotation | None]:
    """The rules the default pipeline runs (the gene, disease-symbol and redefined drops;
    the undefined drop is off), in its order, on the annotations of ``pairs``."""
    anns, spans = lists(pairs)
    drop_gene_short_forms(anns, spans, ABBREVIATIONS)
    drop_disease_symbols(anns, spans, ABBREVIATIONS)
    drop_redefined_short_forms(anns, spans, ABBREVIATIONS, kb)
    return anns


def test_a_short_form_defined_as_something_else_is_dropped(kb):
    """"OB" is defined as otilonium bromide: linked by its letters to Obesity it goes; "CRC"
    linked to Colorectal Neoplasms agrees with "colorectal adenocarcinoma" and stays."""
    anns, spans = lists([linked("OB", "D009765"), linked("CRC", "D015179"),
                         linked("OB", "D009765", "dense")])
    assert drop_redefined_short_forms(anns, spans, ABBREVIATIONS, kb) is None  # in place
    assert anns[0] is None and anns[2] is None
    assert anns[1] is not None and anns[1].concept_ids == ["D015179"]


def test_links_through_the_long_form_and_kept_rules_change_nothing(kb):
    pairs = [linked("OB", "D009765", "abbreviation"), linked("OB", "D009765", "text")]
    assert all(a is not None for a in defaults(pairs, kb))
    # the redefined step disabled: the other default rules keep "OB"
    anns, spans = lists([linked("OB", "D009765")])
    drop_gene_short_forms(anns, spans, ABBREVIATIONS)
    drop_disease_symbols(anns, spans, ABBREVIATIONS)
    assert anns[0] is not None
    anns, spans = lists([linked("OB", "D009765")])
    drop_redefined_short_forms(anns, spans, ABBREVIATIONS, None)
    assert anns[0] is not None


def test_short_undefined_capitals_are_dropped_only_when_asked(kb):
    """"DM" is not defined in the text: kept by default (the step is off unless declared),
    dropped with max_length=2 when the exact-name sieve linked it, kept when longer than the
    limit."""
    assert "undefined_short_forms" in OFF_UNLESS_DECLARED
    assert defaults([linked("DM", "D003920")], kb)[0] is not None

    def undefined(pair, max_length):
        anns, spans = lists([pair])
        assert drop_undefined_short_forms(anns, spans, ABBREVIATIONS, max_length) is None
        return anns[0]

    assert undefined(linked("DM", "D003920"), 2) is None
    assert undefined(linked("DM", "D003920"), 1) is not None
    assert undefined(linked("DM", "D003920", "dense"), 2) is not None


def test_agreement_is_a_shared_content_word():
    assert agrees("deoxycorticosterone acetate", ["Desoxycorticosterone Acetate"])
    assert not agrees("hormone therapy", ["Hashimoto Disease", "Hashimoto Thyroiditis"])
    assert not agrees("wrap and restrain stress", ["Romano-Ward Syndrome", "and"])


def test_a_short_form_the_document_defines_as_a_gene_is_dropped_however_linked(kb):
    """"VHL" is defined as "von Hippel-Lindau tumor suppressor gene": its later mention,
    linked to the disease by exact name or by a long form, is the gene; kept with the gene
    step disabled."""
    pairs = [linked("VHL", "D006623", nth=1), linked("VHL", "D006623", "abbreviation", nth=1),
             linked("CRC", "D015179", nth=1)]
    anns, spans = lists(pairs)
    assert drop_gene_short_forms(anns, spans, ABBREVIATIONS) is None  # in place
    assert anns[0] is None and anns[1] is None and anns[2] is not None
    assert [a is None for a in defaults(pairs, kb)] == [True, True, False]
    # the gene step disabled: the other default rules keep every one
    anns, spans = lists(pairs)
    drop_disease_symbols(anns, spans, ABBREVIATIONS)
    drop_redefined_short_forms(anns, spans, ABBREVIATIONS, kb)
    assert all(a is not None for a in anns)


def test_a_gene_span_the_document_defines_as_a_gene_is_kept(kb):
    """A model that finds genes: "VHL" typed Gene is the gene its long form names."""
    ann, span = linked("VHL", "7428", nth=1)
    ann.type = span.type = "Gene"
    assert defaults([(ann, span)], kb) == [ann]


SYMBOL_TEXT = ("Loss of RB1 in retinoblastoma. "
               "Ataxia with oculomotor apraxia 2 (AOA2) was seen; AOA2 patients. "
               "The IDDM2 locus was mapped.")


def symbol_linked(text: str, type_: str = "Disease", method: str = "exact"):
    start = SYMBOL_TEXT.index(text)
    ann = Annotation(start, start + len(text), text, type_, ["D012175"],
                     infons={"link_method": method})
    return ann, SpanPrediction(0, ann.start, ann.end, 0.9, type_, np.zeros(2))


@pytest.mark.parametrize("text, type_, method, kept", [
    ("RB1", "Disease", "exact", False),        # the gene's symbol, a MEDIC name of retinoblastoma
    ("IDDM2", "Disease", "compact_key", False),
    ("AOA2", "Disease", "abbreviation", True),  # defined: linked through its long form
    ("AOA2", "Disease", "exact", True),         # defined: the redefined rule's to judge
    ("RB1", "Chemical", "exact", True),        # chemicals are written so too: "PGE2", "CCl4"
    ("retinoblastoma", "Disease", "exact", True),
])
def test_an_undefined_disease_written_like_a_gene_symbol(text, type_, method, kept):
    ann, span = symbol_linked(text, type_, method)
    abbreviations = [DocumentAbbreviations.scan(SYMBOL_TEXT)]
    assert "AOA2" in abbreviations[0].definitions
    # the default rules but the redefined drop, with no KB at hand
    out = [ann]
    drop_gene_short_forms(out, [span], abbreviations)
    assert drop_disease_symbols(out, [span], abbreviations) is None  # in place
    assert (out[0] is not None) == kept
    # the disease-symbol step disabled too: the gene rule alone keeps every one
    out = [ann]
    drop_gene_short_forms(out, [span], abbreviations)
    assert out[0] is ann


@pytest.mark.parametrize("long_form, gene", [
    ("glucose-6-phosphate dehydrogenase", True),
    ("hypoxanthine-guanine phosphoribosyltransferase", True),
    ("matrix metalloproteinases", True),
    ("von Hippel-Lindau tumor suppressor gene", True),
    ("Alzheimer disease", False),
    ("inflammatory bowel diseases", False),
    ("sustained release", False),
    ("blood pressure increase", False),
    ("acute phase", False),
])
def test_a_long_form_naming_an_enzyme_defines_a_gene(long_form, gene):
    assert bool(GENE_LONG_FORM.search(long_form)) == gene
