"""gene_forms: the written forms of a gene name looked up when its text is no KB name."""

from __future__ import annotations

import pytest

from e2e_linker.lexical.gene_forms import coordinated_genes, written_variants


@pytest.mark.parametrize("text, forms", [
    ("TGF-b1", ["TGF-beta1"]),
    ("IFN-a", ["IFN-alpha"]),
    ("PGC-1a", ["PGC-1alpha"]),
    ("NF-kB", ["NF-kappaB"]),
    ("integrin b2", ["integrin beta2"]),
    ("b-actin", ["beta-actin"]),
    ("Thyroid hormone receptor a", ["Thyroid hormone receptor alpha"]),
    ("IFNg", ["IFNgamma"]),
    ("Nas1p", ["Nas1"]),  # a yeast protein: its gene and "p"
    ("MAPKs", ["MAPK"]),
    # a short form inside the name: the name without it, then the short form with the rest
    ("interleukin (IL)-6", ["interleukin -6", "IL-6"]),
    ("cyclin-dependent kinase (CDK) 4", ["cyclin-dependent kinase 4", "CDK4"]),
    ("neurokinin-3 (NK-3) receptor", ["neurokinin-3 receptor", "NK-3 receptor"]),
    ("tumor necrosis factor (TNF)-a", ["tumor necrosis factor (TNF)-alpha",
                                       "tumor necrosis factor -a", "tumor necrosis factor -alpha",
                                       "TNF-a", "TNF-alpha"]),
    # a species letter before a symbol
    ("hDaxx", ["Daxx"]), ("hFSH-R", ["FSH-R"]), ("mRPTP mu", ["RPTP mu"]),
    ("rhBMP-2", ["BMP-2"]), ("htau", []), ("hnRNP", []), ("mAb", []),
    # letters that are part of a name stay
    ("Thra", []), ("IL-1B", []), ("HLA-G", []), ("type-B", []), ("p53", []), ("Brca1", []),
    # no form of one letter, none without letters: a translocation is no gene "t"
    ("t(4;11)", []), ("IL (4)", ["IL"]),
])
def test_written_variants(text, forms):
    assert written_variants(text) == forms


@pytest.mark.parametrize("text, genes", [
    ("JNK1/2", ["JNK1", "JNK2"]),
    ("ALK1/2/3/6", ["ALK1", "ALK2", "ALK3", "ALK6"]),
    ("MMP-2/-9", ["MMP-2", "MMP-9"]),
    ("caspase-3/7", ["caspase-3", "caspase-7"]),
    ("TIM-1 and 3", ["TIM-1", "TIM-3"]),
    ("hMAD-3 and -4", ["hMAD-3", "hMAD-4"]),
    ("IL-17A/F", ["IL-17A", "IL-17F"]),
    ("VEGF A and C", ["VEGF A", "VEGF C"]),
    ("Notch1-4", ["Notch1", "Notch2", "Notch3", "Notch4"]),
    ("Smad1 to 3", ["Smad1", "Smad2", "Smad3"]),
    ("Mcm2-9", ["Mcm2", "Mcm3", "Mcm4", "Mcm5", "Mcm6", "Mcm7", "Mcm8", "Mcm9"]),
    # a range of more than eight numbers, a falling one, or one after a hyphen: no list
    ("Ab1-42", None), ("Mcm2-10", None), ("Nkx6-2", None), ("IL-1-6", None),
    # one gene, or genes written in full: no coordination of numbers
    ("IL-6", None), ("PD-1", None), ("Rap1/Rac1", None), ("CD4/CD8", None), ("p38/ERK", None),
    ("IL-17A/2", None),  # a letter and a number do not coordinate
])
def test_coordinated_genes(text, genes):
    assert coordinated_genes(text) == genes


def test_a_text_of_one_letter_or_digit_is_too_short_for_a_gene():
    from e2e_linker.lexical.gene_forms import too_short_for_a_gene

    for text in ("A", "g", "5", "c-", "(U)", "AA", "GC", "TT"):  # two bases: a genotype
        assert too_short_for_a_gene(text)
    for text in ("Hx", "p53", "L1", "ob", "CAT", "Ga", "AR", "GC1"):
        assert not too_short_for_a_gene(text)
