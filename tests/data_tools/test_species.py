"""The document-level species rule: which taxa a document names, and which a gene mention in
it should prefer."""

from __future__ import annotations

import pytest

from data_tools.species import (
    DEFAULT_TAXON,
    document_species,
    mentioned_taxa_first,
    mutant_mark_after,
    preferred_taxa,
    species_before,
    species_cue_offsets,
    species_mentions,
)


@pytest.mark.parametrize("text, taxa", [
    ("Trp53 knockout mice develop tumours.", ["10090"]),
    ("A murine model of sepsis.", ["10090"]),
    ("The Drosophila gene wingless.", ["7227"]),
    ("In the fruit fly, Pax6 controls eye development.", ["7227"]),
    ("RER1 in Saccharomyces cerevisiae.", ["559292", "4932"]),
    ("Budding yeast cells.", ["559292", "4932"]),
    ("Deletion of SIR2 in S. cerevisiae.", ["559292", "4932"]),
    ("BRCA1 mutations in patients with breast cancer.", ["9606"]),
    ("Human TP53 and mouse Trp53.", ["9606", "10090"]),
    ("Expression of IL-6 was measured.", []),
])
def test_document_species_in_order_of_first_mention(text, taxa):
    assert document_species(text) == taxa


def test_technique_phrases_do_not_name_a_species():
    text = ("A yeast two-hybrid screen found that human BRCA1 binds BARD1; a mouse monoclonal "
            "antibody detected it. In fission yeast the homolog differs.")
    assert document_species(text) == ["9606"]
    assert preferred_taxa(text) == ["9606"]


def test_preferred_taxa_defaults_to_human():
    assert DEFAULT_TAXON == "9606"
    assert preferred_taxa("Expression of IL-6 was measured.") == ["9606"]
    assert preferred_taxa("") == ["9606"]


def test_a_model_organism_alone_comes_before_human():
    assert preferred_taxa("Pax6 in Drosophila eye discs.") == ["7227", "9606"]
    assert preferred_taxa("Knockout mice lacking Rnase10 are infertile; mouse sperm.") == \
        ["10090", "9606"]
    assert preferred_taxa("The yeast gene RER1.") == ["559292", "4932", "9606"]


def test_preferred_taxa_follow_how_often_each_species_is_named():
    mostly_human = ("TP53 in patients with cancer: tumours of 40 patients; human cells; as in "
                    "mice.")
    assert species_mentions(mostly_human) == {"9606": 3, "10090": 1}
    assert preferred_taxa(mostly_human) == ["9606", "10090"]
    mostly_mouse = "In mice, Trp53 loss; mouse embryos; murine cells; unlike human cells."
    assert preferred_taxa(mostly_mouse) == ["10090", "9606"]
    tie = "Mice and humans."  # human first on a tie
    assert preferred_taxa(tie) == ["9606", "10090"]
    assert preferred_taxa("Drosophila and mice, mice, mice; flies.") == ["10090", "7227", "9606"]


@pytest.mark.parametrize("text, mention, taxa", [
    ("The human UAP1 cDNA was cloned.", "UAP1", ("9606",)),
    ("97% identity to mouse Nkx6-2.", "Nkx6-2", ("10090",)),
    ("the murine IL-10 gene", "IL-10", ("10090",)),
    ("the yeast protein Sir2", "Sir2", ("559292", "4932")),
    ("human and mouse TP53", "TP53", ("10090",)),  # the nearest species word
    ("the human BCM1 gene locus", "locus", ()),  # two words between
    ("a mouse anti-TNF antibody", "TNF", ()),  # a technique, not the gene's species
    ("TNF in patients", "TNF", ()),  # named after the mention
])
def test_species_named_right_before_a_mention(text, mention, taxa):
    assert species_before(text, text.index(mention)) == taxa


@pytest.mark.parametrize("text, mention, marked", [
    ("defects in Shh(-/-) mutants", "Shh", True),
    ("Mk2 (+/+) and Mk2", "Mk2", True),
    ("Sirt1-deficient mice", "Sirt1", True),
    ("Pten(fl/fl) mice", "Pten", True),
    ("Ptgs2 knockout mice", "Ptgs2", True),
    ("BRCA1 mutations", "BRCA1", False),
    ("IL-6 (+ 12%)", "IL-6", False),
])
def test_mutant_mark_after_a_mention(text, mention, marked):
    assert mutant_mark_after(text, text.index(mention) + len(mention)) is marked


def test_mentioned_taxa_come_first_by_count_then_the_cues():
    # rat twice, zebrafish once: rat first; the cues' human and mouse after, in their order
    assert mentioned_taxa_first(["7955", "10116", "10116"], ["10090", "9606"]) == [
        "10116", "7955", "10090", "9606"]
    # a tie: text order; a taxon both mentioned and cued appears once
    assert mentioned_taxa_first(["10090", "9606"], ["9606", "10090"]) == ["10090", "9606"]
    assert mentioned_taxa_first([], ["10090", "9606"]) == ["10090", "9606"]


def test_cue_offsets_say_where_each_species_is_named():
    text = "A yeast two-hybrid screen in mice; human patients."
    found = species_cue_offsets(text)
    assert found == [(text.index("mice"), "10090"), (text.index("human"), "9606"),
                     (text.index("patients"), "9606")]  # the technique phrase is no cue
    assert species_cue_offsets("yeast") == [(0, "4932"), (0, "559292")]  # both its taxa


def test_gene_taxa_of_yeast_are_its_strain_then_itself():
    from data_tools.species import YEAST, YEAST_S288C, gene_taxa

    assert gene_taxa(YEAST) == (YEAST_S288C, YEAST)
    assert gene_taxa("10090") == ("10090",)
