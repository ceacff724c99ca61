"""AnnotateSettings: one value for every annotate option, resolved against the model once."""

from __future__ import annotations

import pytest

from e2e_linker.collective.model import LinkerConfig
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.collective.short_form_rules import ShortFormRules
from e2e_linker.errors import UserError


def test_unset_settings_take_the_models_values_and_set_ones_stay():
    config = LinkerConfig(threshold=0.3, lexical_gate=1.01, propagation_threshold=0.2,
                          short_forms=True, types=["Chemical", "Disease", "Gene"])
    resolved = AnnotateSettings(lexical_gate=0.0, types="Chemical, Disease").for_model(config)
    assert (resolved.threshold, resolved.lexical_gate, resolved.propagation_threshold,
            resolved.short_forms, resolved.dictionary_threshold) == (0.3, 0.0, 0.2, True, None)
    assert resolved.types == ("Chemical", "Disease")
    assert resolved.max_span_len == config.max_span_len
    assert AnnotateSettings(max_span_len=16).for_model(config).max_span_len == 16
    assert resolved.for_model(config) == resolved  # resolving twice changes nothing
    assert resolved.lexical_types == ()  # the model names none
    genes = LinkerConfig(types=["Chemical", "Gene"], lexical_types=["Gene"])
    assert AnnotateSettings().for_model(genes).lexical_types == ("Gene",)
    assert AnnotateSettings(lexical_types="").for_model(genes).lexical_types == ()
    assert AnnotateSettings(lexical_types="Chemical, Gene").lexical_types == ("Chemical",
                                                                           "Gene")


def test_bad_settings_fail_before_anything_loads():
    with pytest.raises(ValueError, match="linking"):
        AnnotateSettings(linking="normalizer")
    with pytest.raises(ValueError, match="mode"):
        AnnotateSettings(mode="fast")
    with pytest.raises(ValueError, match="gene_products"):
        AnnotateSettings(gene_products="retype")
    with pytest.raises(ValueError, match="redefined_short_forms"):
        AnnotateSettings(redefined_short_forms="retype")
    with pytest.raises(ValueError, match="whole number"):
        AnnotateSettings(undefined_short_max=2.5)
    with pytest.raises(ValueError, match="max_span_len"):
        AnnotateSettings(max_span_len=0)
    with pytest.raises(ValueError, match="sequence_residues"):
        AnnotateSettings(sequence_residues="retype")
    with pytest.raises(ValueError, match="unnamed_species"):
        AnnotateSettings(unnamed_species="human")
    with pytest.raises(UserError, match="max-span-len 478"):
        AnnotateSettings(max_span_len=478).for_model(LinkerConfig(max_length=512,
                                                                  chunk_overlap=32))
    assert AnnotateSettings(max_span_len=477).for_model(
        LinkerConfig(max_length=512, chunk_overlap=32)).max_span_len == 477
    with pytest.raises(UserError, match="Gene"):
        AnnotateSettings(types=("Gene",)).for_model(LinkerConfig(types=["Chemical"]))
    with pytest.raises(UserError, match="lexical-types Gene"):
        AnnotateSettings(lexical_types="Gene").for_model(LinkerConfig(types=["Chemical"]))


def test_selection_rules_carry_the_settings():
    rules = AnnotateSettings(threshold=0.4, lexical_gate=0.9, short_forms=True,
                             propagation_threshold=0.2).selection_rules()
    assert (rules.keep, rules.lexical_gate, rules.short_forms,
            rules.propagation_threshold) == (0.4, 0.9, True, 0.2)
    assert AnnotateSettings(threshold=0.4).selection_rules(0.7).keep == 0.7


def test_short_form_rules_carry_the_settings():
    """The sweep's ``undefined_short_max=2`` arrives as 2.0 and is held as 2."""
    settings = AnnotateSettings(redefined_short_forms="keep", undefined_short_max=2.0)
    assert settings.undefined_short_max == 2 and isinstance(settings.undefined_short_max, int)
    assert settings.short_form_rules() == ShortFormRules("keep", 2, "drop")
    assert AnnotateSettings(gene_short_forms="keep").short_form_rules() == ShortFormRules(
        "drop", 0, "keep")
    assert AnnotateSettings(sequence_residues="keep").sequence_rule().residues == "keep"
