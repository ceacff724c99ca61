"""The word lists in e2e_linker/lexical/lexicons/: every file's format, every rule's list held
to its file (so a list cannot drift back into code), and the regexes built from them."""

from __future__ import annotations

import re

import pytest

from e2e_linker.collective import gene_context, sequence_context, short_form_rules
from e2e_linker.lexical import (
    disease_forms,
    gene_forms,
    lexicon,
    protein_classes,
    salt_forms,
    text_forms,
)
from e2e_linker.lexical.lexicon import alternation, character_class, names, ordered, words

# ---- the files ---------------------------------------------------------------------------

#: every lexicon and the rule constants built from it (checked below); a file not listed here
#: is a file no test holds a rule to
READ_BY = {
    "protein_class_heads": "protein_classes.CLASS_HEADS",
    "protein_class_modifiers": "protein_classes.CLASS_MODIFIERS",
    "greek_letters": "protein_classes.SUBUNIT_LETTERS",
    "greek_protein_names": "protein_classes.SUBUNIT_LETTERS",
    "greek_stand_ins": "gene_forms.GREEK_STAND_INS",
    "subunit_words": "protein_classes.SUBUNIT_WORDS",
    "domain_names": "protein_classes.DOMAIN_NAMES",
    "neoplasm_heads": "disease_forms.NEOPLASM_HEADS",
    "neoplasm_other_words": "disease_forms.disease_forms",
    "neutral_modifiers": "disease_forms.NEUTRAL_MODIFIERS",
    "salt_words": "salt_forms.SALT_WORDS",
    "ion_elements": "text_forms.cuts_an_ion",
    "bases": "gene_forms.too_short_for_a_gene, sequence_context.NUCLEOTIDE, VARIANT_CUE",
    "gene_long_form_heads": "short_form_rules.GENE_LONG_FORM",
    "function_words": "short_form_rules.FUNCTION_WORDS",
    "sequence_words": "sequence_context.SEQUENCE_WORD",
    "exchange_prepositions": "sequence_context.EXCHANGE",
    "exchange_nouns": "sequence_context.EXCHANGE",
    "sequence_elements": "sequence_context.SEQUENCE_ELEMENT",
    "amino_acids": "sequence_context.AMINO_ACID",
    "nucleotide_words": "sequence_context.NUCLEOTIDE",
    "variant_cue_stems": "sequence_context.VARIANT_CUE",
    "variant_cue_words": "sequence_context.VARIANT_CUE",
    "enzyme_endings": "gene_context.ENZYME",
    "gene_name_heads": "gene_context.PROTEIN_HEAD",
    "gene_name_between_words": "gene_context.BETWEEN",
}


def test_every_file_is_read_by_a_rule():
    assert names() == sorted(READ_BY)


@pytest.mark.parametrize("name", sorted(READ_BY))
def test_a_file_says_where_its_entries_come_from(name):
    first = lexicon.lines(name)[0]
    assert first.startswith("# ") and len(first) > 40
    # the comment names the rule that reads the file
    module = READ_BY[name].split(".")[0]
    assert module in " ".join(line for line in lexicon.lines(name) if line.startswith("#"))


@pytest.mark.parametrize("name", sorted(READ_BY))
def test_a_file_has_no_blank_or_repeated_entries(name):
    entries = [line for line in lexicon.lines(name) if not line.startswith("#")]
    assert entries and all(entry.strip() == entry and entry for entry in entries)
    assert len(set(entries)) == len(entries)
    assert len({entry.lower() for entry in entries}) == len(entries)
    assert ordered(name) == tuple(entries)


def test_the_subsets_of_the_greek_letters_are_greek_letters():
    assert len(ordered("greek_letters")) == 24
    assert words("greek_protein_names") <= words("greek_letters")
    assert words("greek_stand_ins") <= words("greek_letters")


def test_a_repeated_entry_is_refused(monkeypatch):
    monkeypatch.setattr(lexicon, "lines", lambda name: ["# test", "a", "b", "a"])
    ordered.cache_clear()
    try:
        with pytest.raises(ValueError, match="repeats a"):
            ordered("repeats")
    finally:
        ordered.cache_clear()


def test_alternation_and_character_class_escape_their_entries():
    assert alternation(["zinc-finger", "a.b"]) == r"zinc\-finger|a\.b"
    assert character_class("ACGTU") == "[ACGTU]"
    with pytest.raises(ValueError):
        character_class(["AC"])


# ---- each rule's list is its file's --------------------------------------------------------

def test_protein_class_lists_are_the_files():
    assert protein_classes.CLASS_HEADS == {
        f"{word}{suffix}" for word in ordered("protein_class_heads") for suffix in ("", "s")}
    assert protein_classes.CLASS_MODIFIERS == words("protein_class_modifiers")
    assert protein_classes.SUBUNIT_LETTERS == words("greek_letters") - {"tau", "rho", "pi"}
    assert protein_classes.SUBUNIT_WORDS == words("subunit_words")
    assert protein_classes.DOMAIN_NAMES == words("domain_names")
    assert len(protein_classes.CLASS_HEADS) == 40 and len(protein_classes.SUBUNIT_LETTERS) == 21


def test_greek_stand_ins_are_the_file():
    assert gene_forms.GREEK_STAND_INS == {
        "a": "alpha", "b": "beta", "g": "gamma", "d": "delta", "k": "kappa"}
    assert list(gene_forms.GREEK_STAND_INS.values()) == list(ordered("greek_stand_ins"))


def test_disease_salt_and_function_word_lists_are_the_files():
    assert disease_forms.NEOPLASM_HEADS == ordered("neoplasm_heads")
    assert disease_forms.NEUTRAL_MODIFIERS == words("neutral_modifiers")
    assert salt_forms.SALT_WORDS == words("salt_words")
    assert short_form_rules.FUNCTION_WORDS == words("function_words")


def test_regex_parts_are_built_from_the_files():
    assert alternation(ordered("enzyme_endings")) in gene_context.ENZYME
    assert gene_context.PROTEIN_HEAD.startswith(alternation(ordered("gene_name_heads")) + "|")
    assert gene_context.BETWEEN == f"(?:{alternation(ordered('gene_name_between_words'))})"
    for built in (gene_context.ENZYME, gene_context.BETWEEN, gene_context.PROTEIN_HEAD):
        assert built in gene_context.GENE_HEAD.pattern
    assert alternation(ordered("gene_long_form_heads")) in short_form_rules.GENE_LONG_FORM.pattern
    for name, pattern in [("sequence_words", sequence_context.SEQUENCE_WORD),
                          ("exchange_prepositions", sequence_context.EXCHANGE),
                          ("exchange_nouns", sequence_context.EXCHANGE),
                          ("sequence_elements", sequence_context.SEQUENCE_ELEMENT),
                          ("amino_acids", sequence_context.AMINO_ACID),
                          ("nucleotide_words", sequence_context.NUCLEOTIDE),
                          ("variant_cue_stems", sequence_context.VARIANT_CUE),
                          ("variant_cue_words", sequence_context.VARIANT_CUE)]:
        assert alternation(ordered(name)) in pattern.pattern, name
    bases = character_class(ordered("bases"))
    assert sequence_context.NUCLEOTIDE.pattern.startswith(bases + "{1,2}|")
    assert f"{bases}\\s?>\\s?{bases}" in sequence_context.VARIANT_CUE.pattern


def test_every_entry_reaches_its_rule():
    for word in ordered("protein_class_heads"):
        assert protein_classes.names_a_protein_class(f"{word}s")
    for word in words("domain_names"):
        assert protein_classes.names_a_domain(word.upper())
    for element in ordered("ion_elements"):
        assert text_forms.cuts_an_ion(f"{element}2", "+ channel")
    for word in ordered("neoplasm_other_words"):
        assert "pancreatic cancer" in disease_forms.disease_forms(f"pancreatic {word}")
    for letter, name in gene_forms.GREEK_STAND_INS.items():
        assert f"TGF-{name}1" in gene_forms.written_variants(f"TGF-{letter}1")
    for first in ordered("bases"):
        for second in ordered("bases"):
            assert gene_forms.too_short_for_a_gene(first + second)


# ---- the regexes still match what they matched ---------------------------------------------

@pytest.mark.parametrize("long_form, gene", [
    ("von Hippel-Lindau tumor suppressor gene", True),
    ("alkaptonuria genes", True),
    ("HLA locus", True),
    ("susceptibility loci", True),
    ("insulin receptor", True),
    ("glucose-6-phosphate dehydrogenase", True),
    ("Protein Kinases", True),
    ("Parkinson disease", False),
    ("Crohn's diseases", False),
    ("growth hormone release", False),
    ("gene expression", False),
    ("drug-induced liver injury", False),
])
def test_gene_long_form(long_form, gene):
    assert bool(short_form_rules.GENE_LONG_FORM.search(long_form)) is gene


@pytest.mark.parametrize("following, part", [
    (" dehydrogenase deficiency", True),
    ("-binding protein 1", True),
    (" (Rb) gene", True),
    (" receptor tyrosine kinase", True),
    (" zinc-finger protein", True),
    (" cotransporter NKCC1", True),
    (" necrosis factor alpha", True),
    (" N-methyltransferase", True),
    (" synthase activity", True),
    (" channel blockers", True),
    (" levels in plasma", False),
    (" was given orally", False),
    (" receptors-like", True),
    (" proteinuria", False),
])
def test_gene_head(following, part):
    assert gene_context.names_a_gene_part(following) is part


@pytest.mark.parametrize("text, amino, nucleotide", [
    ("arginine", True, False), ("Aspartic acid", True, False), ("GLU", True, False),
    ("amino acids", True, False), ("amino-acid", True, False), ("argininosuccinate", False, False),
    ("T", False, True), ("AG", False, True), ("ag", False, False), ("nt", False, True),
    ("Nucleotides", False, True), ("ACG", False, False), ("X", False, False),
])
def test_amino_acid_and_nucleotide(text, amino, nucleotide):
    assert bool(sequence_context.AMINO_ACID.fullmatch(text)) is amino
    assert bool(sequence_context.NUCLEOTIDE.fullmatch(text)) is nucleotide


@pytest.mark.parametrize("following, residue", [
    (" residue at position 150", True), (" (Tyr) codon", True), ("-substitutions", True),
    (" polymorphism in", True), (" to arginine substitution", True),
    (" by a glycine replacement", True), (" residual activity", False),
    (" treatment", False), (" into cells", False),
])
def test_names_a_residue(following, residue):
    assert sequence_context.names_a_residue(following) is residue


@pytest.mark.parametrize("text, element", [
    ("stop codon", True), ("5'UTR", True), ("3' untranslated region", True),
    ("polymorphisms", True), ("codonopsis", False), ("glutamate", False),
])
def test_sequence_element(text, element):
    assert bool(sequence_context.SEQUENCE_ELEMENT.search(text)) is element


@pytest.mark.parametrize("text, cue", [
    ("a C to T transition", True), ("c.185C>T", True), ("A > G", True), ("delAG", True),
    ("deletion of amino acids 809-852", True), ("at amino acid position 229", True),
    ("a rare variant", True), ("methionine-->valine", True), ("in the Substituted form", True),
    ("the enzyme was purified", False), ("prepositional", False), ("invariant", False),
    ("delayed onset", False), ("A>B", False),
])
def test_variant_cue(text, cue):
    assert bool(sequence_context.VARIANT_CUE.search(text)) is cue


@pytest.mark.parametrize("text, variants", [
    ("TGF-b1", ["TGF-beta1"]), ("NF-kB", ["NF-kappaB"]), ("IFNg", ["IFNgamma"]),
    ("b-actin", ["beta-actin"]), ("PGC-1a", ["PGC-1alpha"]), ("Tb-1", []),
])
def test_greek_stand_ins_still_spelled_out(text, variants):
    assert [v for v in gene_forms.written_variants(text) if re.search("[a-z]{4}", v)
            and v != text] == variants
