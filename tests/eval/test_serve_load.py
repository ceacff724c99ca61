"""eval.serve_load end to end on the tiny model and a few requests: every phase runs, nothing
fails or is lost, the answers are ``linker annotate``'s bytes, and the record, its table and
NOTES.md are written (no timing assertions: the load test measures, tests do not)."""

from __future__ import annotations

import json

from eval import serve_load
from tests.e2e_linker.serve.server_thread import tiny_settings

TEXTS = ["Aspirin caused a headache.", "Nothing here.", "Cisplatin and renal failure.",
         "Ibuprofen (ä ß é) and nausea 🙂 with café headache.",
         "Treatment with haloperidol caused delirium in two cases."]


def test_sentences_are_split_and_flattened():
    assert serve_load.sentences(["One here. Two\tthere!  (Three) ok.", "x", "Four 4. 5 five"]) \
        == ["One here.", "Two there!", "(Three) ok.", "Four 4.", "5 five"]
    assert serve_load.percentiles([0.1, 0.2, 0.3, 0.4])["p50"] == 300.0


def test_the_load_test_runs_every_phase_on_the_tiny_model(tmp_path):
    settings, directory, kb_file = tiny_settings(tmp_path / "model")
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = serve_load.main(["--model", str(directory), "--kb", f"tsv:{kb_file}",
                              "--index", "exact", "--threshold", "0",
                              "--cache-dir", settings.cache_dir, "--texts", str(texts),
                              "--requests", "30", "--clients", "4", "--latency-requests", "5",
                              "--warmup", "2", "--no-warm", "--out", str(out),
                              "--note", "test run"])
    load = result["load"]
    assert load["requests"] == 30 and load["ok"] == 30
    assert load["errors"] == 0 and load["lost"] == 0
    assert result["identical_to_cli"] and result["documents_differing_from_cli"] == 0
    assert result["time_to_ready_s"] > 0 and result["rss_mb_at_ready"] > 0
    assert load["rss_mb"]["window"] == 6 and load["rss_mb"]["growth_pct"] is not None
    assert result["low_load"]["latency_ms"]["p50"] > 0 and result["low_load"]["failed"] == 0
    assert result["batching"]["documents"] >= 30 + 5
    # the CLI's rate net of its start-up is None when the run is too short to tell it apart
    # from start-up noise (a tiny model on a busy machine); with start-up it is always there
    same = result["cli"]["same_batch_size"]
    assert same["docs_per_s_with_startup"] > 0
    assert (same["docs_per_s"] is None) == (result["ratio_vs_cli_same_batch_size"] is None)
    assert same["docs_per_s"] is None or result["ratio_vs_cli_same_batch_size"] > 0
    # the server batches like annotate (16 by default): no separate default-batch-size run
    assert same["batch_size"] == 16 and "default_batch_size" not in result["cli"]
    assert result["shutdown"]["seconds"] < 60
    assert json.loads((out / "results.json").read_text())["load"]["ok"] == 30
    table = (out / "results.md").read_text()
    assert "| errors / lost | 0 / 0 | 0 / 0 |" in table
    assert "test run" in (out / "NOTES.md").read_text()
