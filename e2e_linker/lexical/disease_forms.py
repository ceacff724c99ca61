"""How disease names are written in text that no KB name spells: the forms a Disease span
the exact-name sieve misses is also looked up under (the sieve stack's ``written_forms`` step).

Why: the lexical gate keeps only spans a name links, so a correct disease span written in a
form no KB name spells is dropped. Among the gold Disease mentions of NCBI disease dev and
BioRED dev whose text is no KB name, these forms recur, after the sieves of D'Souza & Ng (2015)
(docs/decisions/0022-disease-written-forms.md); British spellings ("phaeochromocytoma") are the compact key's
(:func:`~e2e_linker.lexical.sieves.compact_key`), which each form is also looked up by:

* the head noun of a neoplasm in another of its usual words ("prostate carcinoma" → "prostate
  cancer", "pancreatic tumors" → "pancreatic cancer"; "prostate adenocarcinoma" too: the
  corpora link an organ's adenocarcinoma to the organ's neoplasm, docs/decisions/0022-disease-written-forms.md);
* the last word in the singular ("renal oncocytomas", "fatty livers");
* a leading "sporadic", which leaves the disease the same ("sporadic lymphoid malignancies").
  Not "primary", "idiopathic" or "progressive": BC5CDR and NCBI disease leave those words out
  of the mention ("idiopathic [dystonia]"), so the longer span lost the right shorter one; not
  "hereditary", "inherited" or "familial": they name other concepts (hereditary breast and
  ovarian cancer).
* a leading subtype or stage named by a level ("type IID von Willebrand disease", "stage II and
  III colorectal carcinomas"): the corpora keep it in the mention ("type" always, "stage"
  mostly: docs/decisions/0022-disease-written-forms.md), and the vocabularies have no concept for most such
  subtypes, so the mention is linked to the level without its letter ("type II von Willebrand
  disease", a MEDIC name) or else to the disease itself.

Each form is a guess: the step takes a form only when exactly one concept of the span's type
bears it (as the abbreviation and compact-key steps do).
"""

from __future__ import annotations

import re

from e2e_linker.lexical.lexicon import ordered, words

#: the words a neoplasm's name ends with, interchangeably in text and in MeSH/MEDIC names
NEOPLASM_HEADS = ordered("neoplasm_heads")
_NEOPLASM_WORDS = frozenset(NEOPLASM_HEADS) | words("neoplasm_other_words")

#: leading words that leave the disease the same and that the corpora keep in the mention
NEUTRAL_MODIFIERS = words("neutral_modifiers")

#: a level: a Roman or Arabic number, maybe with a letter ("IID", "2A"), or a letter alone
_LEVEL = r"(?:[IVX]+[A-Da-d]?|\d+[A-Da-d]?|[A-D])"
#: a leading subtype or stage and its level, several levels joined ("stage II and III",
#: "stage II or stage III", "type I/II")
LEVEL_QUALIFIER = re.compile(
    rf"(?:type|stage)\s+{_LEVEL}(?:\s*(?:,|/|and|or)\s*(?:(?:type|stage)\s+)?{_LEVEL})*\s+",
    re.IGNORECASE)
#: a single leading level with a letter after it ("type IID", "type 2A")
_LETTERED_LEVEL = re.compile(r"((?:type|stage)\s+(?:[IVX]+|\d+))[A-Da-d]\s", re.IGNORECASE)


def singular(word: str) -> str:
    """An English plural's singular ("epilepsies" → "epilepsy", "tumors" → "tumor"); the word
    itself when it does not look plural ("virus", "sclerosis", "illness")."""
    low = word.lower()
    if len(low) > 4 and low.endswith("ies"):
        return word[:-3] + "y"
    if low.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(low) > 3 and low.endswith("s") and not low.endswith(("ss", "is", "us")):
        return word[:-1]
    return word


def disease_forms(text: str) -> list[str]:
    """The last word in the singular, then the neoplasm head swapped, then each of those
    without a neutral leading word, then with a leading subtype's letter dropped ("type IID" →
    "type II") and without the subtype or stage; in that order (repeats possible)."""
    words = text.split()
    if not words:
        return []
    last = singular(words[-1])
    forms = [" ".join([*words[:-1], last])]
    if last.lower() in _NEOPLASM_WORDS:
        forms += [" ".join([*words[:-1], head]) for head in NEOPLASM_HEADS]
    if len(words) > 1 and words[0].lower() in NEUTRAL_MODIFIERS:
        rest = " ".join(words[1:])
        forms += [rest, *disease_forms(rest)]
    if (level := LEVEL_QUALIFIER.match(text)) and (rest := text[level.end():].strip()):
        if lettered := _LETTERED_LEVEL.match(text):
            forms.append(f"{lettered.group(1)} {rest}")
        forms += [rest, *disease_forms(rest)]
    return forms
