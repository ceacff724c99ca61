"""eval.kb_build on a 300-name sample of the default KB: the build runs as a user runs it, in a
fresh cache, and the record holds what the issue asks for (no timing assertions)."""

from __future__ import annotations

import json

from eval import kb_build


def test_phases_reads_the_final_state_of_each_progress_bar():
    stderr = ("encoding KB names:  40%|####  | 400/1000 [00:10<00:15, 40.0name/s]\r"
              "encoding KB names: 100%|##########| 1,000/1,000 [1:02:05<00:00, 40.0name/s]\n"
              "Loading weights: 100%|##| 103/103 [00:00<00:00, 4.0it/s]\n"
              "building HNSW index: 100%|##| 1000/1000 [00:07<00:00, 140.0it/s]\n")
    assert kb_build.phases(stderr) == {"encoding KB names": 3725.0, "building HNSW index": 7.0}


def test_a_sampled_build_is_recorded_beside_the_bare_forward(tmp_path):
    kb_build.main(["--names", "300", "--bare-sample", "100", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "results.json").read_text())
    build, bare = record["build"], record["bare_forward"]
    # the sample's names plus the names the model mined from its training corpora
    assert build["names"] > 300
    assert build["kb_info"], "kb info lists nothing in the cache the build filled"
    assert build["cache_mb"] > 0 and build["peak_rss_mb"] > 0
    assert "encoding KB names" in build["phases_s"]
    assert bare["names"] == 100 and bare["names_per_s"] > 0
    assert record["build_over_bare"] > 0
    assert (tmp_path / "results.md").read_text().startswith("| KB names |")
