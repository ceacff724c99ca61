"""eval.startup times whole processes and reads their peak memory (no timing assertions)."""

from __future__ import annotations

import json
import sys

from eval import startup


def test_every_case_is_timed_with_its_peak_memory(tmp_path, monkeypatch):
    fake = {name: [sys.executable, "-c", "b = bytearray(64 << 20)"] for name in startup.CASES}
    monkeypatch.setattr(startup, "CASES", fake)
    assert startup.main(["--repeats", "2", "--out", str(tmp_path)]) == 0
    cases = json.loads((tmp_path / "results.json").read_text())["cases"]
    assert set(cases) == set(fake)
    for row in cases.values():
        assert len(row["runs"]) == 2 and row["wall_s_best"] > 0
        assert row["peak_rss_mb_best"] >= 64  # the child's own peak, not the parent's


def test_a_failing_case_stops_the_run_with_its_error(monkeypatch):
    monkeypatch.setattr(startup, "CASES", {"load_warm": [sys.executable, "-c",
                                                         "raise SystemExit('no model here')"]})
    try:
        startup.run_case("load_warm", {})
    except SystemExit as exc:
        assert "no model here" in str(exc)
    else:
        raise AssertionError("a failing case must stop the run")
