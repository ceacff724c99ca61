"""Which species a document is about, for choosing among same-named genes of several species.

Why: gene symbols are shared across species (human ``TP53`` / mouse ``Trp53``, ``Pax6`` in human,
mouse and fly), and the gene KB (``genes`` preset) holds human, mouse, fly and yeast genes, each
with its NCBI taxon (``Concept.taxon``). A mention alone rarely says which species is meant;
the document usually does ("in mice", "Drosophila", "yeast").

The rule is deliberately document-level and simple: :func:`document_species` lists the
species the text names (by fixed word patterns, in order of first mention), and
:func:`preferred_taxa` orders them by how often the document names them, human first on a
tie, with human (:data:`DEFAULT_TAXON`) always present (last when the document does not name
it): an abstract that names no species is almost always about human genes, and one that
says "mice" once in passing while talking about patients is still about human genes. A
document that names only a model organism gets that organism first, then human. A linker uses
the order to break ties between candidates of different species; it is not a filter, except
that the linker takes no fly or yeast gene in a document that names neither
(``GeneRanking.of_unnamed_species``: fly genes are named by words).

Why counts, not "any named non-human species first" nor "always human": on the gold gene IDs
of the gene corpora's training splits and BioRED dev, the taxon this rule ranks first is the
gold gene's more often than with either, except on GNormPlus, mostly human genes in papers
that mention model organisms in passing (docs/decisions/0025-gene-ranking.md).

Technique phrases that name an organism without being about its genes ("yeast two-hybrid",
"mouse monoclonal antibody", fission yeast) are not counted.

A mention may say more than its document: a species named right before it ("the human UAP1
cDNA", "mouse Nkx6-2": :func:`species_before`) or a mutant allele written after it ("Shh(-/-)
mutants", "Mk2(+/+)": :func:`mutant_mark_after`, mice being where alleles are written so). The
linker puts such a species first for that mention only
(``GeneRanking.mention_species``; docs/decisions/0025-gene-ranking.md).

Yeast: the gene_info file files S. cerevisiae genes under strain S288C (559292) and a few
mitochondrial ones under the species (4932), so a yeast document yields both, 559292 first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: NCBI taxon IDs of the species the gene KB holds
HUMAN, MOUSE, FLY, YEAST_S288C, YEAST = "9606", "10090", "7227", "559292", "4932"
#: NCBI taxon of the rat (genes from HomoloGene, not a gene_info file)
RAT = "10116"


def gene_taxa(taxon: str) -> tuple[str, ...]:
    """The taxa the gene KB files the genes of species ``taxon`` under, first the one most
    of them are under: yeast's (4932) under strain S288C (559292) and itself (the module
    docstring); any other taxon under itself.

    Why: a text that names yeast means S288C's genes, whether a cue word or a Species
    mention linked to the species names it (:meth:`SpanLinker.species_links
    <e2e_linker.collective.span_linking.SpanLinker.species_links>`)."""
    return (YEAST_S288C, YEAST) if taxon == YEAST else (taxon,)


#: the species of a gene mention in a document that names none
DEFAULT_TAXON = HUMAN

#: technique phrases that name an organism but are not about its genes; removed before matching
_NOT_ABOUT_THE_SPECIES = re.compile(
    r"\byeast[- ](?:one|two|three|1|2|3)[- ]hybrid\b"
    r"|\b(?:mouse|murine|rat|rabbit|goat|human)[- ](?:monoclonal|polyclonal|anti)\w*"
    r"|\bfission yeasts?\b|\bSchizosaccharomyces\b|\bS\.\s*pombe\b",
    re.IGNORECASE)

#: (taxa, pattern) for each species, matched case-insensitively on word boundaries
_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    ((HUMAN,), re.compile(
        r"\b(?:humans?|Homo sapiens|H\.\s*sapiens|patients?|men|women|children|infants?"
        r"|volunteers?|individuals)\b", re.IGNORECASE)),
    ((MOUSE,), re.compile(r"\b(?:mouse|mice|murine|Mus musculus|M\.\s*musculus)\b",
                          re.IGNORECASE)),
    ((FLY,), re.compile(r"\b(?:Drosophila|D\.\s*melanogaster|fruit[- ]?fl(?:y|ies)|fl(?:y|ies))\b",
                        re.IGNORECASE)),
    (gene_taxa(YEAST), re.compile(
        r"\b(?:yeasts?|Saccharomyces|S\.\s*cerevisiae|baker'?s yeast|budding yeast)\b",
        re.IGNORECASE)),
)


def _matches(text: str) -> list[tuple[tuple[str, ...], list[int]]]:
    """Each species' taxa with the start offsets of the words naming it (maybe none)."""
    cleaned = _NOT_ABOUT_THE_SPECIES.sub(" ", text)
    return [(taxa, [m.start() for m in pattern.finditer(cleaned)]) for taxa, pattern in _PATTERNS]


def document_species(text: str) -> list[str]:
    """The NCBI taxon IDs of the species ``text`` names, in order of first mention.

    Human words include "patients" (clinical abstracts); yeast yields 559292 and 4932 (see the
    module docstring). Technique phrases such as "yeast two-hybrid" do not count.
    """
    found = sorted((starts[0], taxa) for taxa, starts in _matches(text) if starts)
    return [taxon for _, taxa in found for taxon in taxa]


def species_mentions(text: str) -> dict[str, int]:
    """How many times ``text`` names each species it names, by taxon ID (yeast under both
    of its taxa); the counts :func:`preferred_taxa` orders by."""
    return {taxon: len(starts) for taxa, starts in _matches(text) if starts for taxon in taxa}


def preferred_taxa(text: str) -> list[str]:
    """The taxa a gene mention in this document should prefer, best first.

    Named species by how often the document names them (human first on a tie, then order of
    first mention), and human always present: ``["9606"]`` for a document naming no species,
    ``["10090", "9606"]`` for one naming only mice. See the module docstring for why.
    """
    found = [(-len(starts), taxa != (HUMAN,), starts[0], taxa)
             for taxa, starts in _matches(text) if starts]
    ordered = [taxon for *_, taxa in sorted(found) for taxon in taxa]
    return ordered if DEFAULT_TAXON in ordered else [*ordered, DEFAULT_TAXON]


def species_cue_offsets(text: str) -> list[tuple[int, str]]:
    """(offset, taxon) of each cue word naming a species in ``text``, in text order (yeast
    under both of its taxa; technique phrases such as "yeast two-hybrid" do not count):
    where the document names which species, for a gene mention's species choice
    (:mod:`e2e_linker.collective.species_choice`)."""
    cleaned = _NOT_ABOUT_THE_SPECIES.sub(lambda m: " " * len(m.group()), text)
    return sorted((m.start(), taxon) for taxa, pattern in _PATTERNS
                  for m in pattern.finditer(cleaned) for taxon in taxa)


def mentioned_taxa_first(mentioned: Sequence[str], cued: Sequence[str]) -> list[str]:
    """A document's species order from the taxa its Species mentions link to (``mentioned``,
    one entry a mention, in text order) and from :func:`preferred_taxa` (``cued``): the
    mentioned taxa by how often they are mentioned (the first mentioned first on a tie), then
    the cued ones not mentioned, in their order.

    Why: the cue words name a handful of species; a model that finds Species mentions and
    links them to NCBI Taxonomy names any species ("zebrafish", "Arabidopsis", "rats"), and
    counts the ones the words miss. With no mention the order is the cues' own."""
    counts: dict[str, int] = {}
    for taxon in mentioned:
        counts[taxon] = counts.get(taxon, 0) + 1
    first = sorted(counts, key=lambda t: -counts[t])  # sorted() is stable: text order on ties
    return [*first, *(t for t in cued if t not in counts)]


# at most one word between a species word and the mention it names ("human UAP1", "mouse
# Nkx6-2", "the human BCM1 locus" is not one: two words)
_UP_TO_ONE_WORD = re.compile(r"\W*(?:[\w-]+\W+)?")
#: a mutant allele written right after a gene: "(-/-)", "+/-", "(fl/fl)", "-deficient", "KO"
_MUTANT_MARK = re.compile(
    r"\s*(?:\(?[-+]/[-+]\)?|\(?(?:fl|flox)/(?:fl|flox|\+)\)?|-?(?:null|deficient|knockout|c?KO)\b)",
    re.IGNORECASE)


def species_before(text: str, start: int) -> tuple[str, ...]:
    """The taxa of a species named at most one word before offset ``start`` of ``text``
    (the nearest one; technique phrases such as "mouse anti-" do not count), else ``()``."""
    window = _NOT_ABOUT_THE_SPECIES.sub(" ", text[max(0, start - 60):start])
    nearest: tuple[int, tuple[str, ...]] = (-1, ())
    for taxa, pattern in _PATTERNS:
        for m in pattern.finditer(window):
            if m.start() > nearest[0] and _UP_TO_ONE_WORD.fullmatch(window, m.end()):
                nearest = (m.start(), taxa)
    return nearest[1]


def mutant_mark_after(text: str, end: int) -> bool:
    """Whether a mutant allele mark follows offset ``end`` of ``text`` ("Shh(-/-)")."""
    return _MUTANT_MARK.match(text, end) is not None
