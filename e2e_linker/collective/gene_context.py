"""After linking: a chemical's or disease's name used as part of a gene's or protein's name.

Why: in "glucose-6-phosphate dehydrogenase", "creatine kinase", "thyrotropin receptor",
"calcium channel", "selenium binding protein", "melanoma-associated antigen" or "the
retinoblastoma (Rb) gene" the chemical or disease names what the enzyme acts on, what the
receptor binds or what the gene's mutation causes; the mention is the gene or protein, and
corpora that annotate genes do not annotate the name inside it as a chemical or disease. On
the gene corpora's train splits these are most of the gold gene spans still predicted as
Chemical or Disease once the other rules have run (eval/results/gene_context). A span followed
by a gene or protein head word — an enzyme word ("dehydrogenase", "kinase", "N-methyl-
transferase"), receptor, transporter, channel, antigen, gene, (binding) protein — with at most
two protein-name words between ("-binding", "-associated", "DNA", "zinc-finger", "receptor
tyrosine") and an abbreviation in brackets allowed before them, is dropped: ``modifiers=
"drop"`` for Chemical and Disease spans, ``"chemicals"`` for Chemical spans only (NCBI
disease annotates a disease named as a gene's modifier), ``"keep"`` for none. The words are
read from the text after the span (:func:`~e2e_linker.collective.sequence_context.drop_when_followed`).

Off by default: BC5CDR's guideline annotates the chemical in "aspartate aminotransferase",
"serotonin receptor antagonist" or "calcium channel blocker", and on the dev table the rule's
loss on BC5CDR outweighs its gain on BioRED (eval/results/gene_context); ``--gene-modifiers
drop`` is for text whose guideline annotates genes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from data_tools.documents import Annotation, Document
from e2e_linker.collective.sequence_context import drop_when_followed
from e2e_linker.collective.span_selection import SpanPrediction

#: what happens to a name used inside a gene's or protein's name
MODIFIER_CHOICES = ("drop", "chemicals", "keep")
#: the types each choice drops
DROPPED_TYPES = {"drop": frozenset({"Chemical", "Disease"}),
                 "chemicals": frozenset({"Chemical"}), "keep": frozenset()}
#: enzyme words by their endings: dehydrogenase, reductase, kinase, synth(et)ase, esterase,
#: phosphatase, methyltransferase, oxidase, monooxygenase, hydroxylase, carboxylase,
#: glycosylase, dehydratase, hydrolase, isomerase, glucosidase, peptidase, deaminase,
#: anhydrase, ...
ENZYME = (r"[a-z]*(?:genase|ductase|kinase|synth(?:et)?ase|sterase|lipase|phatase|ferase"
          r"|oxidase|oxygenase|ylase|dratase|drolase|merase|mutase|sidase|peptidase|protease"
          r"|ligase|lyase|cyclase|aminase|hydrase)s?")
#: the other head words of a gene or protein name
PROTEIN_HEAD = (r"(?:co)?transporters?|receptors?|channels?|antigens?|genes?|proteins?"
                r"|necrosis[\s-]+factors?|transmembrane\s+conductance\s+regulators?")
#: words that may stand between the name and its head: hyphenated protein adjectives and
#: the words of longer protein names
BETWEEN = (r"(?:binding|interacting|associated|responsive|containing|activated|gated"
           r"|DNA|RNA|zinc-finger|finger|receptor|tyrosine|protein)")
GENE_HEAD = re.compile(
    r"(?:\s*\([^()]{1,15}\))?"           # "(Rb)", "(LTB4)", "(dioxin)"
    r"(?:[\s-]+" + BETWEEN + r"){0,2}"   # "-binding", "-interacting zinc-finger"
    r"[\s-]+(?:[A-Za-z0-9]{1,6}-)?"      # "N-", "S-", "omega-"
    r"(?:" + ENZYME + "|" + PROTEIN_HEAD + r")\b",
    re.IGNORECASE)


def names_a_gene_part(following: str) -> bool:
    """Whether the text right after a name makes it part of a gene's or protein's name."""
    return bool(GENE_HEAD.match(following))


@dataclass(frozen=True)
class GeneContextRule:
    """The rule above, as ``linker annotate`` sets it."""

    modifiers: str = "keep"

    def __post_init__(self) -> None:
        if self.modifiers not in MODIFIER_CHOICES:
            raise ValueError(f"gene_modifiers must be one of {MODIFIER_CHOICES}, "
                             f"not {self.modifiers!r}")

    def apply(self, annotations: Sequence[Annotation | None], spans: Sequence[SpanPrediction],
              docs: Sequence[Document]) -> list[Annotation | None]:
        """``annotations`` (one per span; None: a span dropped) with the rule applied."""
        return drop_when_followed(annotations, spans, docs, DROPPED_TYPES[self.modifiers],
                                  names_a_gene_part)
