"""AnnotateSettings: one value for every annotate option, resolved against the model once."""

from __future__ import annotations

import pytest

from e2e_linker.collective.model import LinkerConfig
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.errors import UserError


def test_unset_settings_take_the_models_values_and_set_ones_stay():
    config = LinkerConfig(threshold=0.3, lexical_gate=1.01, propagation_threshold=0.2,
                          short_forms=True, types=["Chemical", "Disease", "Gene"])
    resolved = AnnotateSettings(types="Chemical, Disease").for_model(config)
    assert resolved.threshold == 0.3
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
    with pytest.raises(UserError, match="--disable gene_product: no such step"):
        AnnotateSettings(disable="lexical_gate,gene_product")
    with pytest.raises(UserError, match="cannot run without it"):
        AnnotateSettings(disable=("overlaps",))
    with pytest.raises(UserError, match="has no parameter level .its parameters: gate"):
        AnnotateSettings(overrides=("lexical_gate.level=2",))
    with pytest.raises(UserError, match="not a value of type int"):
        AnnotateSettings(overrides=("undefined_short_forms.max_length=2.5",))
    with pytest.raises(UserError, match="gene_modifiers.types must be one of all, chemicals"):
        AnnotateSettings(overrides=("gene_modifiers.types=genes",))
    with pytest.raises(ValueError, match="max_span_len"):
        AnnotateSettings(max_span_len=0)
    with pytest.raises(UserError, match="max-span-len 478"):
        AnnotateSettings(max_span_len=478).for_model(LinkerConfig(max_length=512,
                                                                  chunk_overlap=32))
    assert AnnotateSettings(max_span_len=477).for_model(
        LinkerConfig(max_length=512, chunk_overlap=32)).max_span_len == 477
    with pytest.raises(UserError, match="Gene"):
        AnnotateSettings(types=("Gene",)).for_model(LinkerConfig(types=["Chemical"]))
    with pytest.raises(UserError, match="lexical-types Gene"):
        AnnotateSettings(lexical_types="Gene").for_model(LinkerConfig(types=["Chemical"]))


def test_the_pipeline_is_the_models_with_the_settings_changes(tmp_path):
    config = LinkerConfig(lexical_gate=0.9, propagation_threshold=None, short_forms=False,
                          types=["Chemical"])
    plain = AnnotateSettings().resolved_pipeline(config, None)
    assert plain.get("lexical_gate").gate == 0.9
    assert not plain.has("propagation") and not plain.has("short_forms")
    with pytest.raises(UserError, match="not a value of type float"):
        AnnotateSettings(overrides=("name_extension.floor_score=none",))
    changed = AnnotateSettings(disable="lexical_gate", overrides=(
        "propagation.threshold=0.1",)).resolved_pipeline(config, None)
    assert not changed.has("lexical_gate") and changed.get("propagation").threshold == 0.1
    declared = tmp_path / "pipeline.toml"
    declared.write_text('steps = ["score_floor", "overlaps", "link"]\n')
    assert AnnotateSettings().resolved_pipeline(config, tmp_path).names == [
        "score_floor", "overlaps", "link"]
    assert AnnotateSettings(pipeline=str(declared)).resolved_pipeline(config, None).names == [
        "score_floor", "overlaps", "link"]
