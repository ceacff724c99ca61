"""Case/punctuation folding and composite splitting."""

from __future__ import annotations

import pytest

from e2e_linker.lexical.text_forms import (
    TextNormalizer,
    balanced_brackets,
    cuts_an_ion,
    end_before,
    normalize_text,
    split_composite,
)


@pytest.mark.parametrize("text,expected", [
    ("Non-Hodgkin's Lymphoma", "non hodgkin s lymphoma"),
    ("3,4-methylenedioxymethamphetamine", "3 4 methylenedioxymethamphetamine"),
    ("  Breast   Neoplasms ", "breast neoplasms"),
    ("TNF–α", "tnf α"),  # unicode dash is punctuation, Greek letters are not
])
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


def test_normalizer_switches():
    assert TextNormalizer(lowercase=False, punctuation=True)("Non-Small-Cell") == "Non Small Cell"
    assert TextNormalizer(lowercase=True, punctuation=False)("Non-Small-Cell") == "non-small-cell"
    assert TextNormalizer()("(+)") == "(+)"  # all punctuation: kept as written


@pytest.mark.parametrize("text,parts", [
    ("breast and ovarian cancer", ["breast cancer", "ovarian cancer"]),
    ("Duchenne and Becker muscular dystrophy",
     ["Duchenne muscular dystrophy", "Becker muscular dystrophy"]),
    ("brain, breast, and prostate cancer", ["brain cancer", "breast cancer", "prostate cancer"]),
    ("hepatic or renal dysfunction", ["hepatic dysfunction", "renal dysfunction"]),
    ("type 1 and type 2 diabetes", ["type 1 diabetes", "type 2 diabetes"]),
    ("cancers of the breast and ovary", ["cancers of the breast", "cancers of the ovary"]),
    ("nausea and vomiting", ["nausea", "vomiting"]),
    ("breast/ovarian cancer", ["breast cancer", "ovarian cancer"]),
    ("3,4-methylenedioxymethamphetamine", ["3,4-methylenedioxymethamphetamine"]),
    ("cisplatin", ["cisplatin"]),
])
def test_split_composite(text, parts):
    assert split_composite(text) == parts


def test_balanced_brackets():
    assert balanced_brackets("1,25-(OH)2D3") and balanced_brackets("[3H]-(+)-catechin")
    assert not balanced_brackets("G6PD) deficiency") and not balanced_brackets("(SNP, n")
    assert not balanced_brackets(")(")
    assert balanced_brackets("a {b", "([", ")]")  # only the brackets asked about count


def test_an_ion_cut_before_its_charge():
    assert cuts_an_ion("Ca2", "+") and cuts_an_ion("Mg2", "+/") and cuts_an_ion("Fe3", "+")
    assert not cuts_an_ion("Ca2", " ")    # no charge after it: the gene alias stands
    assert not cuts_an_ion("Na", "+")     # BC5CDR annotates "Na" of "Na+"
    assert not cuts_an_ion("CD4", "+")    # a marker ("CD4+ T cells"), NLM-Gene's gene
    assert not cuts_an_ion("Xy2", "+")    # no element


def test_end_before_leaves_trailing_spaces_out():
    text = "heat shock factor \u00a0 (HSF)"
    assert text[:end_before(text, text.index("("))] == "heat shock factor"
    assert end_before("   (x)", 3) == 0 and end_before("a(b)", 1) == 1
