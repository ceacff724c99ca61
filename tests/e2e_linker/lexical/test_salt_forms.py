"""Derived salt-free and anion names: only unambiguous forms that the KB does not have."""

from __future__ import annotations

from data_tools.kb import KB, Concept
from e2e_linker.lexical.salt_forms import salt_free_synonyms


def test_salt_free_and_anion_forms():
    kb = KB([Concept("D1", "Tiapride Hydrochloride", ["tiapride HCl"], "Chemical"),
             Concept("D2", "Sodium Chloride", [], "Chemical"),
             Concept("D3", "Sodium", [], "Chemical"),
             Concept("D4", "Vecuronium Bromide", [], "Chemical"),
             Concept("D5", "vecuronium sodium", [], "Chemical"),  # a second claim on the base
             Concept("D6", "Kainic Acid", [], "Chemical"),
             Concept("D7", "Pyruvic Acid", [], "Chemical"),
             Concept("D8", "Pyruvate", [], "Chemical"),  # the anion is already a KB name
             Concept("D9", "Lead Acetate", [], "Disease"),  # not a chemical: no forms
             Concept("D10", "Ion Sulfate", [], "Chemical")])  # base shorter than 4 letters
    assert salt_free_synonyms(kb) == [("D1", "Tiapride"), ("D6", "Kainate")]
