"""How gene names are written in text that no KB name spells: the forms a name-only gene span
is also looked up under.

Why: a gene span is linked by its names only (``lexical_types``), so a span whose text is no
gene name is dropped by the lexical gate even when it is one written differently. The forms
below are the ones that recur among the gold gene mentions of the gene corpora's training
splits and BioRED dev whose text names no gene (how many: docs/decisions/0025-gene-ranking.md):

* Greek letters written as Latin ones (a text converted to ASCII loses them): "TGF-b1",
  "IFN-a", "PGC-1a", "NF-kB", "integrin b2", "b-actin" → "TGF-beta1", "IFN-alpha", ...;
* a yeast protein named by its gene and "p" ("Nas1p" → "Nas1");
* an acronym in the plural ("MAPKs" → "MAPK");
* a name with its short form written inside it ("interleukin (IL)-6" → "interleukin -6",
  "IL-6");
* a species letter before a symbol ("hDaxx", "mRPTP mu", "rhBMP-2");
* numbered genes written together ("JNK1/2", "MMP-2/-9", "TIM-1 and 3", "IL-17A/F") or as
  a range ("Notch1-4"): each gene on its own (:func:`coordinated_genes`), linked as a composite.

Only tried when the text itself is no name: each form is a guess.
"""

from __future__ import annotations

import re

from e2e_linker.lexical.lexicon import character_class, ordered

#: a Latin letter written for a Greek one, and the Greek letter's name
GREEK_STAND_INS = {letter[0]: letter for letter in ordered("greek_stand_ins")}

# a lone stand-in letter: after the start, a space, hyphen or digit, and before the end, a
# space, hyphen, slash, digit or (for kappa) the B of NF-kB; or right after an upper-case
# acronym and before a digit or the end ("TGFb1", "IFNg")
_GREEK = re.compile(
    r"(?:(?<=^)|(?<=[\s\-\d]))(" + character_class(GREEK_STAND_INS)
    + r")(?=$|[\s\-/\d]|(?<=k)B)"
    r"|(?<=[A-Z]{2})(" + character_class(GREEK_STAND_INS) + r")(?=\d|$)")
_YEAST_PROTEIN = re.compile(r"([A-Z][a-z]{2}\d+)p")
# a name with its short form in brackets inside it: "interleukin (IL)-6", "cyclin-dependent
# kinase (CDK) 4", "neurokinin-3 (NK-3) receptor"
_INNER_SHORT_FORM = re.compile(r"(?P<long>.*\w)\s*\((?P<short>[^()\s][^()]*)\)\s*(?P<tail>.*)")
# a species letter before a symbol: "hDaxx", "hFSH-R" (human), "mRPTP" (mouse), "rhBMP-2"
# (recombinant human)
_SPECIES_LETTER = re.compile(r"(?:rh|h|m)(?=[A-Z][A-Za-z]*\d|[A-Z]{2}|[A-Z][a-z]{2,}$)(?P<rest>.+)")
_PLURAL_ACRONYM = re.compile(r"([A-Z][A-Za-z0-9-]*[A-Z0-9])s")
# a stem ending in a number or a letter after a hyphen ("JNK1", "MMP-2", "IL-17A"), then
# further numbers or letters joined by "/", "and" or "or" ("/2", "/-9", " and -4", "/F")
_COORDINATED = re.compile(
    r"(?P<stem>[A-Za-z][A-Za-z0-9]*?[\s-]?(?:[A-Za-z]+-)?)(?P<first>\d+[A-Za-z]?|[A-Z])"
    r"(?P<rest>(?:\s*(?:/|,|\band\b|\bor\b)\s*-?(?:\d+[A-Za-z]?|[A-Z]))+)")
_COORDINATED_PART = re.compile(r"-?(\d+[A-Za-z]?|[A-Z])$")
# a range of numbered genes: a stem ending in a letter, a number, a dash or "to", a higher
# number ("Notch1-4", "Mcm2-7", "Smad1 to 3"); a stem ending in a hyphen ("IL-1-6") is
# not; one gene named so ("Nkx2-5") is a KB name, which the linker tries before the parts
_RANGE = re.compile(
    r"(?P<stem>[A-Za-z]*[A-Za-z])(?P<low>\d+)\s*(?:-|\u2013|\bto\b)\s*(?P<high>\d+)")
#: the most genes a range may name: a longer one ("Ab1-42", a peptide's residues) is no list
MAX_RANGE = 8


def written_variants(text: str) -> list[str]:
    """The other forms ``text`` may be a gene name in, most specific first (none: ``[]``):
    Greek letters spelled out, then the name without a short form written inside it, then
    that short form with the rest ("IL-6"), then the symbol without a species letter, each
    also with its Greek letters spelled out; a yeast protein's gene; an acronym's singular —
    none of fewer than two letters and digits or without a letter."""
    bases = []
    if m := _INNER_SHORT_FORM.fullmatch(text):
        tail = m.group("tail")
        bases += [f"{m.group('long')} {tail}".strip(),
                  f"{m.group('short')}{' ' if tail[:1].isalpha() else ''}{tail}".strip()]
    if m := _SPECIES_LETTER.fullmatch(text):
        bases.append(m.group("rest"))
    forms: list[str] = []
    for base in (text, *bases):
        for form in (base, _GREEK.sub(lambda g: GREEK_STAND_INS[g.group(1) or g.group(2)],
                                      base)):
            if form != text and form not in forms:
                forms.append(form)
    if m := _YEAST_PROTEIN.fullmatch(text):
        forms.append(m.group(1))
    if m := _PLURAL_ACRONYM.fullmatch(text):
        forms.append(m.group(1))
    # no form of one letter or without letters: "t(4;11)", a chromosomal translocation, is
    # no "t" (a gene's symbol) with the short form "4;11" (docs/decisions/0025-gene-ranking.md)
    return [form for form in forms
            if not too_short_for_a_gene(form) and any(ch.isalpha() for ch in form)]


def coordinated_genes(text: str) -> list[str] | None:
    """The genes a coordination of numbered genes writes together, each in full, in the
    order written: "JNK1/2" → ["JNK1", "JNK2"], "MMP-2/-9" → ["MMP-2", "MMP-9"], "TIM-1 and 3"
    → ["TIM-1", "TIM-3"], "IL-17A/F" → ["IL-17A", "IL-17F"], a range "Notch1-4" → ["Notch1",
    "Notch2", "Notch3", "Notch4"] (at most :data:`MAX_RANGE` genes); None for any other text.

    Why the range: the gene corpora link "Mcm2-7" and "Notch1-4" to each gene in the range,
    in order, as they link "JNK1/2" (docs/decisions/0051-coordinated-genes.md)."""
    if m := _RANGE.fullmatch(text.strip()):
        low, high = int(m.group("low")), int(m.group("high"))
        if low < high <= low + MAX_RANGE - 1:
            return [f"{m.group('stem')}{n}" for n in range(low, high + 1)]
        return None
    m = _COORDINATED.fullmatch(text.strip())
    if m is None:
        return None
    stem, first = m.group("stem"), m.group("first")
    # a letter after a digit stem ("IL-17A/F") replaces the letter only
    if first[-1].isalpha() and first[:-1]:
        stem, first = stem + first[:-1], first[-1]
    parts = [stem + first]
    for piece in re.split(r"\s*(?:/|,|\band\b|\bor\b)\s*", m.group("rest").strip()):
        if not piece:
            continue
        tail = _COORDINATED_PART.search(piece)
        if tail is None or tail.group(1).isalpha() != first.isalpha():
            return None
        parts.append(stem + tail.group(1))
    return parts if len(parts) > 1 else None


#: two bases ("AA", "GC", "AT"): a genotype, a dinucleotide or a base pair
_TWO_BASES = re.compile(character_class(ordered("bases")) + "{2}")


def too_short_for_a_gene(text: str) -> bool:
    """Whether ``text`` has fewer than two letters and digits ("A", "G", "U", "5", "c-"), or is
    two bases ("AA", "GC"): such a span is no gene mention, even when a gene alias is that
    letter or a gene's symbol those two ("GC", vitamin D binding protein).

    Why: a gene symbol of one character is an alias of many genes in the vocabularies, and the
    spans of one character the model typed Gene were wrong on every gene dev corpus, while
    their gold gene mentions of one character are a handful in thousands
    (docs/decisions/0021-no-single-gene.md); two bases are a genotype ("AA"), a base pair or GC content,
    and no gold gene of the gene dev corpora is one (docs/decisions/0021-no-single-gene.md)."""
    return sum(ch.isalnum() for ch in text) < 2 or _TWO_BASES.fullmatch(text) is not None
