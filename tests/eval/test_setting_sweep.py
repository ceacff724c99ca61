"""eval.setting_sweep: the grid a user writes is every combination, in order."""

from __future__ import annotations

import pytest

from eval.setting_sweep import parse_grid


def test_grid_is_the_product_of_the_axes_with_typed_values():
    grid = parse_grid(["threshold=0.4,0.5", "short_forms=true",
                       "propagation_threshold=none,0.2"])
    assert grid == [
        {"threshold": 0.4, "short_forms": True, "propagation_threshold": None},
        {"threshold": 0.4, "short_forms": True, "propagation_threshold": 0.2},
        {"threshold": 0.5, "short_forms": True, "propagation_threshold": None},
        {"threshold": 0.5, "short_forms": True, "propagation_threshold": 0.2},
    ]


@pytest.mark.parametrize("item", ["gamma=0.4", "threshold=", "threshold"])
def test_unknown_or_empty_axes_are_refused(item):
    with pytest.raises(SystemExit, match="KEY=V1,V2"):
        parse_grid([item])


def test_words_stay_words_for_the_type_rule_axes():
    grid = parse_grid(["gene_products=drop,keep", "type_from_concept=false"])
    assert grid == [{"gene_products": "drop", "type_from_concept": False},
                    {"gene_products": "keep", "type_from_concept": False}]


def test_the_short_form_and_residue_rule_axes_are_settable():
    grid = parse_grid(["redefined_short_forms=drop,keep", "undefined_short_max=0,2",
                       "sequence_residues=keep"])
    assert [(g["redefined_short_forms"], g["undefined_short_max"]) for g in grid] == [
        ("drop", 0.0), ("drop", 2.0), ("keep", 0.0), ("keep", 2.0)]
    assert {g["sequence_residues"] for g in grid} == {"keep"}
