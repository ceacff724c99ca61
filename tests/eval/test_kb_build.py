"""eval.kb_build on a 300-name sample of the default KB: the build runs as a user runs it, on a
fresh cache, encodes exactly the sampled names, and the record holds what issue 18 asks for
(no timing assertions: speed is what the module measures, not what tests check)."""

from __future__ import annotations

import json
import os
import sys

from eval import kb_build

BAR = "{label}: {pct:>3}%|#####     | {n}/{total} [{elapsed}<00:15, 40.0name/s]"


def bar(label: str, pct: int, elapsed: str) -> str:
    return BAR.format(label=label, pct=pct, n=pct * 10, total=1000, elapsed=elapsed)


def test_phases_are_the_spans_between_progress_bars_and_add_up_to_the_wall_time():
    segments = [
        (1.0, bar("Loading weights", 100, "00:00")),  # the towers loading: start-up
        (5.0, "KB index: encoding 1,000 names not cached yet (about 2 min on this machine)"),
        (6.0, bar("encoding KB names", 0, "00:00")),
        (50.0, bar("encoding KB names", 40, "00:44")),
        (116.0, bar("encoding KB names", 100, "01:50")),
        (120.0, bar("building the hnsw index", 0, "00:00")),
        (130.0, bar("building the hnsw index", 100, "00:10")),
    ]
    found = kb_build.phases(segments, wall=131.5)
    assert found == {"until encoding KB names": 6.0, "encoding KB names": 110.0,
                     "between encoding KB names and building the hnsw index": 4.0,
                     "building the hnsw index": 10.0, "after building the hnsw index": 1.5}
    assert sum(found.values()) == 131.5
    assert kb_build.phases([(2.0, "no bars at all")], wall=3.0) == {"start to exit": 3.0}
    assert kb_build.estimate_seconds(segments[1][1]) == 120.0
    assert kb_build.estimate_seconds("nothing") is None


def test_stderr_segments_are_stamped_when_they_start_not_when_the_next_one_does():
    # tqdm writes "\r" + state: a bar's 0 % state is only terminated by its next state
    script = ("import sys, time\n"
              "sys.stderr.write('\\rencoding KB names:   0%|  | 0/2 [00:00<?, ?name/s]')\n"
              "sys.stderr.flush(); time.sleep(1.0)\n"
              "sys.stderr.write('\\rencoding KB names: 100%|##| 2/2 [00:01<00:00, 2name/s]\\n')\n"
              "print('done')\n")
    done = kb_build.run_streaming([sys.executable, "-c", script], dict(os.environ), echo=False)
    assert done["returncode"] == 0 and done["stdout"] == "done\n"
    (start, first), (end, last) = done["segments"]
    assert first.startswith("encoding KB names:   0%") and last.startswith("encoding KB names: 100%")
    assert end - start >= 0.9
    assert kb_build.phases(done["segments"], done["wall_s"])["encoding KB names"] >= 0.9
    assert done["peak_rss_mb"] > 0


def test_a_sampled_build_is_recorded_beside_the_bare_forward(tmp_path):
    assert kb_build.main(["--names", "300", "--bare-sample", "100", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    build, bare = record["build"], record["bare_forward"]
    # exactly the sample: the model's mined names are not merged into the sampled KB
    assert build["names"] == build["names_encoded"] == 300
    assert "--model" in build["command"] and build["command"].startswith("linker kb build kb:")
    assert build["index_kind"] == "exact"  # 300 names: auto picks exact search
    assert build["cache_mb"] > 0 and build["peak_rss_mb"] > 100  # two towers are loaded
    assert build["phases_s"]["encoding KB names"] > 0
    assert abs(sum(build["phases_s"].values()) - build["wall_s"]) < 0.5
    # rates and times are each rounded to 0.1 in the record: compare within that rounding
    assert 300 / (build["wall_s"] + 0.05) - 0.05 <= build["names_per_s"] \
        <= 300 / (build["wall_s"] - 0.05) + 0.05
    assert bare["names"] == 100 and bare["extrapolated"] and bare["names_per_s"] > 0
    assert 300 / (bare["names_per_s"] + 0.05) - 0.05 <= bare["all_names_s"] \
        <= 300 / (bare["names_per_s"] - 0.05) + 0.05
    assert record["build_over_bare"] > 0 and record["encoding_phase_over_bare"] > 0
    # the same sample again, in a child under the CLI's glibc heap settings
    bounded = record["bare_forward_cli_heap"]
    assert bounded["names"] == 100 and bounded["heap_bounded"] and bounded["names_per_s"] > 0
    assert record["encoding_phase_over_bare_cli_heap"] > 0
    assert "cores" in record["machine"]
    markdown = (tmp_path / "results.md").read_text()
    assert markdown.startswith("| KB names |") and "| 300 |" in markdown
    assert "(extrapolated)" in markdown
