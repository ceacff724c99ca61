"""The hostile-scan benchmark writes one row per size, each scan finding every definition."""

from __future__ import annotations

import json

from eval.hostile_scan import hostile_text, main


def test_hostile_text_holds_the_asked_number_of_definitions():
    assert hostile_text(3).count("(HSF)") == 3


def test_main_writes_a_row_per_size(tmp_path):
    main(["--sizes", "10", "20", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert [(r["definitions"], r["found"]) for r in rows] == [(10, 10), (20, 20)]
    assert (tmp_path / "results.md").read_text().count("\n| ") == 3  # header + two rows
