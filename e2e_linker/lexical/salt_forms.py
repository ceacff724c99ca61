"""Salt-free and anion forms of chemical names: "Tiapride Hydrochloride" also answers to
"tiapride", "Metrizoic Acid" to "metrizoate".

Why: MeSH files many drugs under their salt ("Tiapride Hydrochloride", "Vecuronium Bromide")
or acid ("Metrizoic Acid") while abstracts name the base or the anion ("tiapride",
"metrizoate"), and the dense encoder then prefers another chemical that shares the stem
("tiaramide", "Metrizamide"). Such a derived form is added as a synonym of the concept, as
long as it is not already a KB name ("Sodium Chloride" gives no "sodium") and only one concept
would claim it; the normalizer uses these forms in its exact (lexical) sieve only. Measured on
BC5CDR dev with D = train (``linker normalize ... --train-mentions bc5cdr:train`` with and
without ``--no-salt-free``): Chemical Acc@1 up, Disease unchanged (docs/results.md, "What moved
the figures").
"""

from __future__ import annotations

from collections.abc import Iterable

from e2e_linker.lexical.lexicon import words

#: counter-ions and salt words that end a MeSH chemical name ("X hydrochloride", "X sodium")
SALT_WORDS = words("salt_words")

MIN_BASE_LENGTH = 4


def salt_free_synonyms(concepts: Iterable, type_: str = "Chemical") -> list[tuple[str, str]]:
    """``(concept_id, derived name)`` for names of ``type_`` concepts that end in salt words
    (the name without them) or are "X-ic acid" (also "X-ate")."""
    concepts = list(concepts)
    known = {name.lower() for c in concepts for name in c.all_names()}
    claims: dict[str, set[str]] = {}
    spelled: dict[str, str] = {}
    for concept in concepts:
        if type_ not in concept.types():
            continue
        for name in concept.all_names():
            words = name.split()
            while len(words) > 1 and words[-1].lower().strip(",") in SALT_WORDS:
                words = words[:-1]
            base = " ".join(words).rstrip(",")
            derived = [base]
            if len(words) == 2 and words[0].lower().endswith("ic") and \
                    words[1].lower() == "acid":  # "Metrizoic Acid" -> "metrizoate"
                derived.append(words[0][:-2] + "ate")
            for form in derived:
                key = form.lower()
                if form == name or len(key) < MIN_BASE_LENGTH or key in known:
                    continue
                claims.setdefault(key, set()).add(concept.id)
                spelled.setdefault(key, form)
    return sorted((ids.pop(), spelled[key]) for key, ids in claims.items() if len(ids) == 1)
