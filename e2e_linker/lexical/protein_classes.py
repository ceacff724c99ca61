"""Names of a class of proteins ("protein kinase", "tyrosine phosphatase", "GTPase",
"DNA-binding protein", "cytokines"), and a subunit named by its Greek letter alone ("zeta",
"beta subunit"): such a name is no mention of one gene.

Why: NCBI gene_info lists a gene's other designations and descriptions as its names, and many
are the name of the gene's class — "protease" is a name of several endogenous retrovirus
genes (ERVK-8, ERVK-9, ...), "protein kinase" of WEE1, "GTPase" of mouse Racgap1, "cytokines"
of mouse Il10 — so the exact-name step links the class word in "a protein kinase
phosphorylates" to one gene. The corpora that annotate genes annotate such a name as a family
or not at all; on the gene dev rows these spans were false positives almost without exception
(eval/results/protein_classes).

A class name here is made only of protein-class head words (protein, kinase, phosphatase,
receptor, polymerase, GTPase, cytokine, ...) and words that say what such a protein binds,
where it sits or which residue it acts on (binding, DNA, GTP, calcium, tyrosine, serine,
threonine, cell surface, nuclear, heavy chain, ...), with at least one head word. A letter,
number or Greek letter makes a name specific ("protein kinase C", "DNA polymerase delta",
"RNA polymerase II"), as does any other word ("growth hormone receptor").

A Greek letter alone, or with only "subunit", "chain" or "isoform" ("zeta", "the beta
subunit"), names a part of a protein the sentence names elsewhere ("the T cell receptor zeta
chain ... zeta"); gene_info lists such letters as aliases ("delta" of several genes), and on
the gene dev rows the spans were false positives only (eval/results/greek_subunits). Not tau,
rho or pi: each is a protein's own name (tau protein, Rho GTPases, protease inhibitor).
"""

from __future__ import annotations

import re

#: the head words of a protein-class name, singular and plural
CLASS_HEADS = frozenset(
    f"{word}{suffix}" for word in (
        "protein", "glycoprotein", "kinase", "phosphatase", "protease", "proteinase",
        "receptor", "subunit", "enzyme", "factor", "ligase", "polymerase", "helicase",
        "atpase", "gtpase", "channel", "transporter", "antigen", "cytokine", "lymphokine")
    for suffix in ("", "s"))
#: the words that may stand beside a head word in a class name: what the protein binds or
#: carries, where it sits, which residue it acts on
CLASS_MODIFIERS = frozenset((
    "binding", "tyrosine", "serine", "threonine", "calcium", "dna", "rna", "gtp", "atp",
    "actin", "ubiquitin", "small", "cell", "surface", "membrane", "nuclear", "peroxisomal",
    "transcription", "heavy", "light", "chain"))
#: Greek letters that name a subunit when alone; tau, rho and pi are proteins' own names
SUBUNIT_LETTERS = frozenset((
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "sigma", "upsilon", "phi", "chi", "psi", "omega"))
#: the words a subunit's letter may stand with
SUBUNIT_WORDS = frozenset(("subunit", "subunits", "chain", "chains", "isoform", "isoforms"))
_WORD_BREAK = re.compile(r"[\s\-/]+")


def _words(text: str) -> list[str]:
    """``text``'s words, lower-cased, split at spaces, hyphens and slashes."""
    return [w for w in _WORD_BREAK.split(text.lower()) if w]


def names_a_protein_class(text: str) -> bool:
    """Whether ``text`` is the name of a class of proteins, not of one gene (the module's
    docstring says which words make one): such a span typed Gene is dropped after linking."""
    words = _words(text)
    return bool(words) and any(w in CLASS_HEADS for w in words) \
        and all(w in CLASS_HEADS or w in CLASS_MODIFIERS for w in words)


def names_a_subunit_alone(text: str) -> bool:
    """Whether ``text`` is a Greek letter alone, or with only subunit, chain or isoform ("zeta",
    "beta subunit"): a part of a protein named elsewhere, dropped like a class name."""
    words = _words(text)
    return bool(words) and any(w in SUBUNIT_LETTERS for w in words) \
        and all(w in SUBUNIT_LETTERS or w in SUBUNIT_WORDS for w in words)
