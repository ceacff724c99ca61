"""After linking: a chemical's or disease's name used as part of a gene's or protein's name.

Why: in "glucose-6-phosphate dehydrogenase", "creatine kinase", "thyrotropin receptor",
"calcium channel", "selenium binding protein", "melanoma-associated antigen" or "the
retinoblastoma (Rb) gene" the chemical or disease names what the enzyme acts on, what the
receptor binds or what the gene's mutation causes; the mention is the gene or protein, and
corpora that annotate genes do not annotate the name inside it as a chemical or disease. On
the gene corpora's train splits these are most of the gold gene spans still predicted as
Chemical or Disease once the other rules have run (docs/decisions/0023-gene-modifiers.md). A span followed
by a gene or protein head word — an enzyme word ("dehydrogenase", "kinase", "N-methyl-
transferase"), receptor, transporter, channel, antigen, gene, (binding) protein — with at most
two protein-name words between ("-binding", "-associated", "DNA", "zinc-finger", "receptor
tyrosine") and an abbreviation in brackets allowed before them, is dropped
(:func:`drop_gene_modifiers`, the step ``gene_modifiers``): ``types="all"`` Chemical and
Disease spans, ``"chemicals"`` Chemical spans only (NCBI disease annotates a disease named as
a gene's modifier). The words are read from the text after the span
(:func:`~e2e_linker.collective.sequence_context.drop_when_followed`).

Not in the shipped pipeline: BC5CDR's guideline annotates the chemical in "aspartate
aminotransferase", "serotonin receptor antagonist" or "calcium channel blocker", and on the dev
table the rule's loss on BC5CDR outweighs its gain on BioRED (docs/decisions/0023-gene-modifiers.md);
``--set gene_modifiers.types=all`` is for text whose guideline annotates genes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from data_tools.documents import Annotation, Document
from e2e_linker.collective.sequence_context import drop_when_followed
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.lexicon import alternation, ordered

#: the types a name used inside a gene's name is dropped from: every type the rule reads
#: ("all") or chemicals only
DROPPED_TYPES = {"all": frozenset({"Chemical", "Disease"}), "chemicals": frozenset({"Chemical"})}
#: enzyme words by their endings: dehydrogenase, reductase, kinase, synth(et)ase, esterase,
#: phosphatase, methyltransferase, oxidase, monooxygenase, hydroxylase, carboxylase,
#: glycosylase, dehydratase, hydrolase, isomerase, glucosidase, peptidase, deaminase,
#: anhydrase, ...
ENZYME = r"[a-z]*(?:" + alternation(ordered("enzyme_endings")) + r")s?"
#: the other head words of a gene or protein name
PROTEIN_HEAD = (alternation(ordered("gene_name_heads"))
                + r"|necrosis[\s-]+factors?|transmembrane\s+conductance\s+regulators?")
#: words that may stand between the name and its head: hyphenated protein adjectives and
#: the words of longer protein names
BETWEEN = r"(?:" + alternation(ordered("gene_name_between_words")) + ")"
GENE_HEAD = re.compile(
    r"(?:\s*\([^()]{1,15}\))?"           # "(Rb)", "(LTB4)", "(dioxin)"
    r"(?:[\s-]+" + BETWEEN + r"){0,2}"   # "-binding", "-interacting zinc-finger"
    r"[\s-]+(?:[A-Za-z0-9]{1,6}-)?"      # "N-", "S-", "omega-"
    r"(?:" + ENZYME + "|" + PROTEIN_HEAD + r")\b",
    re.IGNORECASE)


def names_a_gene_part(following: str) -> bool:
    """Whether the text right after a name makes it part of a gene's or protein's name."""
    return bool(GENE_HEAD.match(following))


def drop_gene_modifiers(annotations: Sequence[Annotation | None],
                        spans: Sequence[SpanPrediction], docs: Sequence[Document],
                        types: str = "all") -> list[Annotation | None]:
    """``annotations`` (one per span; None: a span dropped) without the names used as part of
    a gene's or protein's name, of the :data:`DROPPED_TYPES` ``types`` names."""
    if types not in DROPPED_TYPES:
        raise ValueError(f"gene_modifiers.types must be one of {', '.join(DROPPED_TYPES)}, "
                         f"not {types!r}")
    return drop_when_followed(annotations, spans, docs, DROPPED_TYPES[types],
                              names_a_gene_part)
