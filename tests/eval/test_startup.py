"""eval.startup times whole processes and reads their peak memory and CPU time (no timing
assertions)."""

from __future__ import annotations

import json
import sys

from eval import startup


def test_every_case_is_timed_with_its_peak_memory(tmp_path, monkeypatch):
    fake = {name: [sys.executable, "-c", "b = bytearray(64 << 20)"] for name in startup.CASES}
    monkeypatch.setattr(startup, "CASES", fake)
    assert startup.main(["--repeats", "2", "--out", str(tmp_path)]) == 0
    [(label, cases)] = json.loads((tmp_path / "results.json").read_text())["cases"].items()
    assert set(cases) == set(fake)
    for row in cases.values():
        assert len(row["runs"]) == 2 and row["wall_s_best"] > 0 and row["cpu_s_best"] > 0
        assert row["peak_rss_mb_best"] >= 64  # the child's own peak, not the parent's


def test_each_tree_runs_every_case_in_its_own_directory(tmp_path, monkeypatch):
    # each "checkout" says how much the child allocates: the child must run inside it. (A
    # child's peak counts at least its parent's, which Linux folds in at exec: both sizes are
    # above this process's peak, and the trees are compared with each other.)
    import resource

    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    for label, megabytes in (("before", parent + 100), ("after", parent + 700)):
        (tmp_path / label).mkdir()
        (tmp_path / label / "size").write_text(str(megabytes))
    code = "b = bytearray(int(open('size').read()) << 20)"
    monkeypatch.setattr(startup, "CASES", {name: [sys.executable, "-c", code]
                                           for name in startup.CASES})
    assert startup.main(["--repeats", "1", "--out", str(tmp_path / "out"),
                         "--tree", f"before={tmp_path / 'before'}",
                         "--tree", f"after={tmp_path / 'after'}"]) == 0
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(result["trees"]) == {"before", "after"}
    for name in startup.CASES:
        before, after = (result["cases"][label][name]["peak_rss_mb_best"]
                         for label in ("before", "after"))
        assert before >= parent + 100 and after >= parent + 700 and after - before >= 300
    assert "| before | load_warm |" in (tmp_path / "out" / "results.md").read_text()


def test_a_failing_case_stops_the_run_with_its_error(monkeypatch):
    monkeypatch.setattr(startup, "CASES", {"load_warm": [sys.executable, "-c",
                                                         "raise SystemExit('no model here')"]})
    try:
        startup.run_case("load_warm", {})
    except SystemExit as exc:
        assert "no model here" in str(exc)
    else:
        raise AssertionError("a failing case must stop the run")


def test_cases_runs_only_the_cases_named(tmp_path, monkeypatch):
    fake = {name: [sys.executable, "-c", "pass"] for name in startup.CASES}
    monkeypatch.setattr(startup, "CASES", fake)
    assert startup.main(["--repeats", "1", "--out", str(tmp_path),
                         "--cases", "load_warm"]) == 0
    [(label, cases)] = json.loads((tmp_path / "results.json").read_text())["cases"].items()
    assert set(cases) == {"load_warm"}
    assert "load_cold" not in (tmp_path / "results.md").read_text()
