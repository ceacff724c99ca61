"""After linking: a chemical's name used for a residue or a base of a sequence.

Why: amino acids and nucleotides are chemicals, but in "an arginine residue at position 150",
"a tryptophan to arginine substitution", "the tyrosine codon", "an amino acid substitution" or
"a single nucleotide polymorphism" the name denotes a position in a protein or DNA sequence:
part of a sequence variant, which curation guidelines annotate as a variant or not at all,
never as the chemical. On BioRED dev every one of these Chemical spans was a false positive,
and BC5CDR dev has none (docs/decisions/0016-sequence-chemicals.md). A Chemical followed by a sequence word
("residue", "codon", "substitution", "polymorphism", "position", "mutation", "variant",
"sequence"; a three-letter code in brackets may come between), or by "to <name>
substitution" (change, replacement, mutation), is dropped (:func:`drop_sequence_chemicals`, the
step ``sequence_chemicals``). The words are read from the text after the span.

A Chemical whose own text names a sequence element is dropped the same way: its text ends in
codon, UTR, untranslated region or polymorphism ("stop codon", "5'UTR"; MeSH files terminator
codons under nucleic acids), or it is "SNP"/"SNV" and the document neither defines it nor
names the chemical it was linked to otherwise — "SNP" is also sodium nitroprusside, which
BC5CDR's abstracts name in full ("sodium nitroprusside (SNP, n = 7)"). On BioRED dev every such
span was a false positive (docs/decisions/0016-sequence-chemicals.md).

An amino acid's name or three-letter code (or "amino acid" itself), and a base ("T", "AG") or
"nucleotide"/"nt", is dropped when the text around it describes a sequence variant —
"substitution of a conserved arginine at amino acid position 229 by glycine",
"methionine-->valine substitution at codon 404", "deletion of amino acids 809-852", "a C to T
transition", "c.185C>T", "a 15 nucleotide (nt) deletion": a substitution, replacement,
mutation, deletion, insertion, duplication, frameshift, transition, transversion, codon,
position, variant or variation, an arrow, a protein or DNA change ("p.R229G", "c.185C>T",
"A>G") within :data:`AROUND_BEFORE` characters
before or :data:`AROUND_AFTER` after it in the same sentence. In BC5CDR train and dev almost no
amino acid's name has such words near it (one, not annotated); in BioRED dev 35 do, none
annotated (docs/decisions/0016-sequence-chemicals.md). Of the gold chemicals these patterns name, 2 of 69 in
BC5CDR train stand in such a sentence ("nucleotide analogues" beside "resistance mutations"),
none in BC5CDR or BioRED dev (docs/decisions/0016-sequence-chemicals.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from data_tools.documents import Annotation, Document
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations
from e2e_linker.lexical.lexicon import alternation, character_class, ordered

#: characters after a span that the patterns read
LOOK_AHEAD = 60
#: "arginine residue", "tyrosine (Tyr) codon", "amino acid substitutions", "nucleotide
#: polymorphism"
SEQUENCE_WORD = re.compile(r"[\s-]*(?:\(\w{3}\)\s*)?"
                           r"(?:" + alternation(ordered("sequence_words")) + r")\b",
                           re.IGNORECASE)
#: "tryptophan to arginine substitution", "thymidine to cytosine mutation"
EXCHANGE = re.compile(r"\s+(?:" + alternation(ordered("exchange_prepositions"))
                      + r")\s+(?:an?\s+)?[A-Za-z]+\s+"
                      r"(?:" + alternation(ordered("exchange_nouns")) + ")", re.IGNORECASE)

#: a span that itself names a sequence element: "stop codon", "5'UTR", "polymorphisms"
SEQUENCE_ELEMENT = re.compile(r"\b(?:" + alternation(ordered("sequence_elements")) + ")$",
                              re.IGNORECASE)
#: the twenty amino acids and the words for them
AMINO_ACID = re.compile(alternation(ordered("amino_acids")) + r"|amino[ -]acids?",
                        re.IGNORECASE)
#: a base of a DNA or RNA sequence and the words for one: "T", "AG", "nucleotide", "nt"
NUCLEOTIDE = re.compile(character_class(ordered("bases")) + r"{1,2}"
                        r"|(?i:" + alternation(ordered("nucleotide_words")) + ")")
#: words that make a sentence describe a change in a protein's or a gene's sequence
VARIANT_CUE = re.compile(alternation(ordered("variant_cue_stems"))
                         + r"|\b(?:" + alternation(ordered("variant_cue_words")) + ")"
                         r"|(?<![a-z])del(?:"
                         + character_class(base.lower() for base in ordered("bases")) + r"+)?\b"
                         r"|-->|→|\bp\.\s?[A-Z]|\bc\.\s?-?\d|"
                         + character_class(ordered("bases")) + r"\s?>\s?"
                         + character_class(ordered("bases"))
                         + r"|\bamino[ -]acids?\s+\d",
                         re.IGNORECASE)
#: characters before and after a residue's or base's name that :data:`VARIANT_CUE` is looked for in
AROUND_BEFORE = 80
AROUND_AFTER = 60
#: the short forms of a sequence variant, which are also the letters of other things
VARIANT_SHORT_FORM = re.compile(r"(?:SNP|SNV)s?")


def names_a_residue(following: str) -> bool:
    """Whether the text right after a chemical's name makes it a residue or base of a
    sequence."""
    return bool(SEQUENCE_WORD.match(following) or EXCHANGE.match(following))


def text_after(annotation: Annotation, doc: Document, length: int = LOOK_AHEAD) -> str | None:
    """The ``length`` characters of ``doc`` right after ``annotation`` within its passage
    (None: the span lies in no passage). The rules that read a span's following words share
    it, so each reads the same text."""
    passage = doc.passage_at(annotation.start)
    if passage is None:
        return None
    at = annotation.end - passage.offset
    return passage.text[at:at + length]


def drop_sequence_chemicals(annotations: Sequence[Annotation | None],
                            spans: Sequence[SpanPrediction], docs: Sequence[Document],
                            abbreviations: Sequence[DocumentAbbreviations],
                            kb=None) -> list[Annotation | None]:
    """``annotations`` (one per span; None: a span dropped) without the Chemical spans named
    as a residue or base of a sequence or naming a sequence element.

    ``abbreviations``: each document's scan, by the spans' ``doc_index``; ``kb`` answers
    ``get(concept_id)`` with a :class:`~data_tools.kb.Concept` (None: a "SNP" is judged
    by the document's definitions only).
    """
    out = drop_when_followed(annotations, spans, docs, frozenset({"Chemical"}),
                             names_a_residue)
    for k, (ann, span) in enumerate(zip(out, spans, strict=True)):
        if ann is None or ann.type != "Chemical":
            continue
        doc = docs[span.doc_index]
        if SEQUENCE_ELEMENT.search(ann.text) or (
                VARIANT_SHORT_FORM.fullmatch(ann.text)
                and ann.text not in abbreviations[span.doc_index].definitions
                and not names_linked_concept(ann, doc, kb)) or (
                (AMINO_ACID.fullmatch(ann.text) or NUCLEOTIDE.fullmatch(ann.text))
                and in_variant_context(ann, doc)):
            out[k] = None
    return out


def in_variant_context(annotation: Annotation, doc: Document) -> bool:
    """Whether the text around ``annotation`` (within its passage) describes a sequence
    variant (:data:`VARIANT_CUE`)."""
    passage = doc.passage_at(annotation.start)
    if passage is None:
        return False
    start, end = annotation.start - passage.offset, annotation.end - passage.offset
    before = passage.text[max(0, start - AROUND_BEFORE):start].rsplit(". ", 1)[-1]
    after = passage.text[end:end + AROUND_AFTER].split(". ", 1)[0]
    return bool(VARIANT_CUE.search(before) or VARIANT_CUE.search(after))


def names_linked_concept(annotation: Annotation, doc: Document, kb) -> bool:
    """Whether ``doc`` names ``annotation``'s first concept by a name longer than the
    annotation's own text (a whole-word match, any case): the document's support for reading a
    short form as that concept."""
    concept = kb.get(annotation.concept_ids[0]) if kb is not None and annotation.concept_ids \
        else None
    if concept is None:
        return False
    text = doc.text.lower()
    return any(re.search(r"(?<![a-z0-9])" + re.escape(name.lower()) + r"(?![a-z0-9])", text)
               for name in concept.all_names() if len(name) > len(annotation.text))


def drop_when_followed(annotations: Sequence[Annotation | None],
                       spans: Sequence[SpanPrediction], docs: Sequence[Document],
                       types: frozenset[str], reads: Callable[[str], bool]
                       ) -> list[Annotation | None]:
    """``annotations`` with each one of ``types`` dropped whose following text (:func:`text_after`)
    ``reads`` accepts: the one loop of the rules that judge a span by the words after it."""
    out = list(annotations)
    for k, (ann, span) in enumerate(zip(out, spans, strict=True)):
        if ann is None or ann.type not in types:
            continue
        following = text_after(ann, docs[span.doc_index])
        if following is not None and reads(following):
            out[k] = None
    return out
