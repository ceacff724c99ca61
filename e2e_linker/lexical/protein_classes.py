"""Names of a class of proteins ("protein kinase", "tyrosine phosphatase", "GTPase",
"DNA-binding protein", "cytokines"), a subunit named by its Greek letter alone ("zeta",
"beta subunit") and a protein domain's name ("SH3", "HMG"): such a name is no mention of one
gene (:func:`names_no_single_gene`).

Why: NCBI gene_info lists a gene's other designations and descriptions as its names, and many
are the name of the gene's class — "protease" is a name of several endogenous retrovirus
genes (ERVK-8, ERVK-9, ...), "protein kinase" of WEE1, "GTPase" of mouse Racgap1, "cytokines"
of mouse Il10 — so the exact-name step links the class word in "a protein kinase
phosphorylates" to one gene. The corpora that annotate genes annotate such a name as a family
or not at all; on the gene dev rows these spans were false positives almost without exception
(docs/decisions/0021-no-single-gene.md).

A class name here is made only of protein-class head words (protein, kinase, phosphatase,
receptor, polymerase, GTPase, cytokine, ...) and words that say what such a protein binds,
where it sits or which residue it acts on (binding, DNA, GTP, calcium, tyrosine, serine,
threonine, cell surface, nuclear, heavy chain, ...), with at least one head word. A letter,
number or Greek letter makes a name specific ("protein kinase C", "DNA polymerase delta",
"RNA polymerase II"), as does any other word ("growth hormone receptor").

A Greek letter alone, or with only "subunit", "chain" or "isoform" ("zeta", "the beta
subunit"), names a part of a protein the sentence names elsewhere ("the T cell receptor zeta
chain ... zeta"); gene_info lists such letters as aliases ("delta" of several genes), and on
the gene dev rows the spans were false positives only (docs/decisions/0021-no-single-gene.md). Not tau,
rho or pi: each is a protein's own name (tau protein, Rho GTPases, protease inhibitor).

A protein domain's name alone ("SH3 domain", "the SH2 and SH3 of Src", "HMG box") names a part
shared by many proteins; gene_info lists some as aliases, and on the gene dev rows these spans
were false positives only (docs/decisions/0021-no-single-gene.md).
"""

from __future__ import annotations

import re

from e2e_linker.lexical.lexicon import ordered, words

#: the head words of a protein-class name, singular and plural
CLASS_HEADS = frozenset(
    f"{word}{suffix}" for word in ordered("protein_class_heads") for suffix in ("", "s"))
#: the words that may stand beside a head word in a class name: what the protein binds or
#: carries, where it sits, which residue it acts on
CLASS_MODIFIERS = words("protein_class_modifiers")
#: Greek letters that name a subunit when alone; tau, rho and pi are proteins' own names
SUBUNIT_LETTERS = words("greek_letters") - words("greek_protein_names")
#: the words a subunit's letter may stand with
SUBUNIT_WORDS = words("subunit_words")
#: protein domains named by an abbreviation (Src homology 2 and 3, high-mobility group box,
#: pleckstrin homology, PDZ, WD40, ...), lower-cased
DOMAIN_NAMES = words("domain_names")
_WORD_BREAK = re.compile(r"[\s\-/]+")


def _made_of(text: str, heads: frozenset[str], others: frozenset[str]) -> bool:
    """Whether ``text``'s words (lower-cased, split at spaces, hyphens and slashes) are all
    in ``heads`` or ``others``, with at least one in ``heads``."""
    words = [w for w in _WORD_BREAK.split(text.lower()) if w]
    return any(w in heads for w in words) and all(w in heads or w in others for w in words)


def names_a_protein_class(text: str) -> bool:
    """Whether ``text`` is the name of a class of proteins, not of one gene (the module's
    docstring says which words make one): such a span typed Gene is dropped after linking."""
    return _made_of(text, CLASS_HEADS, CLASS_MODIFIERS)


def names_a_subunit_alone(text: str) -> bool:
    """Whether ``text`` is a Greek letter alone, or with only subunit, chain or isoform ("zeta",
    "beta subunit"): a part of a protein named elsewhere, dropped like a class name."""
    return _made_of(text, SUBUNIT_LETTERS, SUBUNIT_WORDS)


def names_a_domain(text: str) -> bool:
    """Whether ``text`` is a protein domain's abbreviation alone ("SH3", "HMG"), dropped like a
    class name."""
    return text.strip().lower() in DOMAIN_NAMES


def names_no_single_gene(text: str) -> bool:
    """Whether ``text`` names a class of proteins, a subunit by its letter alone or a domain:
    a span that ends up Gene with such a text is dropped after linking
    (:func:`~e2e_linker.collective.concept_types.drop_no_single_gene`)."""
    return names_a_protein_class(text) or names_a_subunit_alone(text) or names_a_domain(text)
