"""eval.bench on a tiny model: every stage runs, the record has the issue's keys (no timing
assertions: speed is measured by the benchmark itself, not by tests)."""

from __future__ import annotations

import argparse
import contextlib
import json

import pytest

from eval import bench
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_annotator

KEYS = ("encoder_tokens_per_s", "annotate_tokens_per_s", "annotate_mentions_per_s",
        "per_mention_mentions_per_s", "ratio_annotate_vs_encoder",
        "ratio_collective_vs_per_mention", "peak_rss_mb", "device", "cpu_threads")


@pytest.fixture(scope="module")
def annotator(tmp_path_factory):
    return tiny_annotator(tmp_path_factory.mktemp("tiny"))


class FirstCandidate:
    """A text linker that links every span to one concept (stands in for the normalizer)."""

    def normalize(self, docs, abbreviations=None):
        for doc in docs:
            for ann in doc.annotations:
                ann.concept_ids, ann.link_score = ["T1"], 1.0
        return docs


def test_bench_runs_all_stages_and_writes_the_record(annotator, tmp_path):
    docs = synthetic_docs(7)
    pipeline, settings = annotator.pipeline, annotator.settings
    totals = bench.run_bench(annotator, docs, slice_docs=3, warmup_docs=2,
                             text_linker=FirstCandidate(), compare_plain=True,
                             baseline=annotator)
    # the stages run pipelines of their own: the annotator's is as it was
    assert annotator.pipeline is pipeline and annotator.settings is settings
    assert set(totals) == set(bench.STAGES)
    assert totals["baseline"].mentions == totals["annotate"].mentions  # the same model here
    assert totals["annotate_text"].mentions == totals["annotate"].mentions
    assert annotator.linker.text_linker is None  # the text stage leaves the annotator as it found it
    assert all(t.documents == 7 for t in totals.values())
    # annotate counts the chunk tokens the bare encoder ran over, so the ratio compares like
    # with like
    assert totals["annotate"].tokens == totals["encoder"].tokens > 0
    assert totals["annotate"].mentions == totals["per_mention"].mentions > 0
    args = argparse.Namespace(corpus="synthetic", slice_docs=3)
    result = bench.summarise(totals, annotator, args, (0.0, 0.0, 0.0), 1.0, "test")
    for key in KEYS:
        assert result[key] is not None, key
    assert result["stages"]["annotate"]["peak_rss_mb"] > 0
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(result))
    assert "| annotate, file → file |" in bench.markdown(result)
    assert result["ratio_text_vs_collective_linking"] > 0
    assert result["ratio_annotate_vs_plain_docs"] > 0
    assert result["ratio_annotate_vs_baseline_docs"] > 0
    pytest.importorskip("matplotlib")
    assert bench.plot(result, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").stat().st_size > 0
    assert annotator.settings.mode == "collective"  # the per-mention stage leaves it as it found it


def test_rss_sampler_sees_the_current_process():
    with bench.RssSampler() as rss:
        pass
    assert rss.peak > 1


def test_each_stage_runs_its_own_pipeline_and_linker(annotator):
    text_linker = FirstCandidate()
    runners = bench.stage_runners(annotator, text_linker, baseline=annotator)
    assert set(runners) == set(bench.STAGE_SETTINGS)
    assert runners["annotate"] is annotator and runners["per_mention"] is annotator
    # the plain stage: every rule step of the declaration off, only the required steps left
    assert runners["annotate_plain"].pipeline.names == ["score_floor", "overlaps", "link"]
    assert runners["annotate_plain"].linker.names is None
    assert runners["annotate_plain"].linker.sieves is None
    assert runners["annotate_plain"].linker.text_linker is None
    # the baseline: another model as it declares itself
    assert runners["baseline"] is annotator
    # the text stage: the declared pipeline, every span linked by the text linker
    assert runners["annotate_text"].pipeline.names == annotator.pipeline.names
    assert runners["annotate_text"].linker.text_linker is text_linker
    assert annotator.linker.text_linker is None
    # an annotator loaded with a text linker (--text-linking) runs annotate without it
    with_text = annotator.with_pipeline(annotator.pipeline, text_linker=text_linker)
    plain_runners = bench.stage_runners(with_text)
    assert plain_runners["annotate"].linker.text_linker is None
    assert set(plain_runners) == {"annotate", "annotate_plain", "per_mention"}


def test_trees_take_turns_on_the_same_slices_and_report_against_the_first(tmp_path,
                                                                          monkeypatch):
    """Two checkouts (here this one twice) annotate every slice once each, after an untimed
    warm-up slice, in worker processes that loaded the linker once (their KB cache a folder
    of the test's, not the user's: the workers inherit the environment)."""
    from pathlib import Path

    from tests.helpers.tiny_linker import tiny_linker_dir

    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))

    model, _ = tiny_linker_dir(tmp_path / "tiny", threshold=0.3)
    repo = Path(__file__).resolve().parents[2]
    docs = synthetic_docs(5)
    totals = bench.run_trees({"before": repo, "after": repo}, docs, slice_docs=2, threads=1,
                             model=str(model))
    assert set(totals) == {"before", "after"}
    assert all(t.documents == 5 and t.seconds > 0 for t in totals.values())
    assert totals["before"].mentions == totals["after"].mentions  # the same code and model
    assert (tmp_path / "cache" / "compiled_kb").is_dir()  # the workers' cache was the test's
    table = bench.trees_markdown(totals, "python -m eval.bench --tree before=. --tree after=.")
    assert "| before |" in table and table.count("| 1.000 |") >= 1


def test_host_time_splits_annotate_into_parts_that_add_up(annotator, tmp_path):
    """The annotate stage runs with the timing wrappers: every part the tiny pipeline reaches
    is timed, the host figure is annotate less the encoder forward and the KB search, the
    stages add up to it, the profile is written, and the wrappers are gone afterwards."""
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.span_linking import SpanLinker
    from e2e_linker.pipeline.linking_steps import ExactName, Link

    originals = (Annotator.score_chunks, CollectiveLinker.token_states, Link.run,
                 vars(SpanLinker)["mentioned_taxa"])
    profile = tmp_path / "bench.profile.txt"
    totals = bench.run_bench(annotator, synthetic_docs(5), slice_docs=3, warmup_docs=0,
                             per_mention=False, profile_to=profile)
    parts = totals["annotate"].parts
    for part in ("read input", "chunking", "encoder forward", "span heads", "span objects",
                 "KB search", "dense ranking", "link step link", "select step overlaps",
                 "annotate step type_from_concept", "copy documents", "write output"):
        assert parts.get(part, 0) > 0, part
    assert sum(parts.values()) <= totals["annotate"].seconds
    args = argparse.Namespace(corpus="synthetic", slice_docs=3)
    result = bench.summarise(totals, annotator, args, (0.0, 0.0, 0.0), 1.0, "test")
    per_doc = 1000 / 5
    expected = (totals["annotate"].seconds - parts["encoder forward"] - parts["KB search"])
    assert result["host_ms_per_doc"] == pytest.approx(expected * per_doc)
    assert sum(result["host_stages_ms_per_doc"].values()) == pytest.approx(
        result["host_ms_per_doc"])
    assert "encoder forward" not in result["host_parts_ms_per_doc"]
    assert result["host_stages_ms_per_doc"]["selection steps"] > 0
    assert result["machine"]
    table = bench.markdown(result)
    assert "Host time: **" in table and "| linking |" in table and "| other |" in table
    report = profile.read_text()
    assert "== by cumulative time" in report and "annotator.py" in report
    assert "== the project's functions by own time" in report
    # the library as it was: the originals back, an inherited method not left on its class
    assert (Annotator.score_chunks, CollectiveLinker.token_states, Link.run,
            vars(SpanLinker)["mentioned_taxa"]) == originals
    assert "run" not in vars(ExactName)
    assert isinstance(vars(SpanLinker)["mentioned_taxa"], staticmethod)


def test_host_clock_counts_each_part_once(monkeypatch):
    """A part's seconds are its own: the parts timed inside it are taken out, so nested
    parts add up to the outer one's time (a fake clock: no timing in tests)."""
    now = [0.0]
    monkeypatch.setattr(bench.time, "perf_counter", lambda: now[0])
    clock = bench.HostClock()

    def inner():
        now[0] += 2.0
        yield 1
        now[0] += 1.0
        yield 2

    timed_inner = clock.wrap("inner", inner)
    with clock.part("outer"):
        now[0] += 5.0
        assert list(timed_inner()) == [1, 2]  # a generator runs inside its timing
        now[0] += 1.0
    assert clock.seconds == {"outer": 6.0, "inner": 3.0}


def test_host_clock_times_each_threads_parts_on_their_own(monkeypatch):
    """Under the engine's overlap a second thread runs timed parts: a part open in one
    thread is not charged with the parts another thread runs meanwhile."""
    import threading

    clock = bench.HostClock()
    inner = clock.wrap("inner", lambda: bench.time.sleep(0.02))
    opened, done = threading.Event(), threading.Event()

    def worker():
        with clock.part("worker"):
            opened.set()
            done.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    opened.wait()
    with clock.part("main"):
        inner()
    done.set()
    thread.join()
    # the worker's part spans the whole of main's: none of it was taken out of the worker's
    assert clock.seconds["worker"] >= clock.seconds["inner"] + clock.seconds["main"]
    assert clock.seconds["inner"] >= 0.02


def test_host_clock_names_a_target_that_moved(monkeypatch):
    """A function the table names that the library no longer has is an error naming it, and
    the wrappers installed before it are taken out again."""
    from e2e_linker.collective.annotator import Annotator

    original = Annotator.score_chunks
    parts = dict(bench.HOST_PARTS)
    parts["gone"] = ("linking", ("e2e_linker.collective.annotator:Annotator.no_such_method",))
    monkeypatch.setattr(bench, "HOST_PARTS", parts)
    with pytest.raises(RuntimeError, match="Annotator.no_such_method does not exist"):
        with bench.HostClock().installed():
            pass
    assert Annotator.score_chunks is original


def test_the_bare_encoder_runs_annotates_batches(annotator, monkeypatch):
    """The encoder stage's forwards have the shapes of annotate's own (same chunks, same
    length batches, the same padding), so the limit it measures is annotate's forward."""
    from e2e_linker.collective.model import CollectiveLinker

    shapes: list[tuple[int, ...]] = []
    original = CollectiveLinker.token_states

    def recording(self, batch):
        shapes.append(tuple(batch["input_ids"].shape))
        return original(self, batch)

    monkeypatch.setattr(CollectiveLinker, "token_states", recording)
    docs = synthetic_docs(6)
    bench.encoder_only(annotator, docs)[1]()
    bare, shapes[:] = list(shapes), []
    annotator.detect(docs)
    assert bare == shapes and bare


def test_every_slice_is_annotated_once_before_any_stage_is_timed(annotator, monkeypatch):
    """The warm-up sees every slice (so its KB names are cached before timing; on a cold
    cache the first stage to see a slice paid for them): annotate and the baseline (another
    model: its names are cached apart) each run each slice twice, once untimed."""
    seen: list[tuple[str, bool]] = []
    timing: list[bool] = [False]
    real_annotate, real_timed = bench.annotate_file, bench.StageTotals.timed

    def counted(runner, source, target, *args):
        seen.append((source.name, timing[0]))
        return real_annotate(runner, source, target, *args)

    @contextlib.contextmanager
    def timed(self):
        timing[0] = True
        with real_timed(self):
            yield
        timing[0] = False

    monkeypatch.setattr(bench, "annotate_file", counted)
    monkeypatch.setattr(bench.StageTotals, "timed", timed)
    bench.run_bench(annotator, synthetic_docs(6), slice_docs=3, warmup_docs=0,
                    per_mention=False, baseline=annotator)
    slices = sorted({name for name, _ in seen})
    assert len(slices) == 2
    for name in slices:
        untimed = [n for n, t in seen if n == name and not t]
        assert len(untimed) == 2  # the warm-up's passes: annotate's and the baseline's
    first_timed = next(k for k, (_, t) in enumerate(seen) if t)
    assert {n for n, t in seen[:first_timed]} == set(slices)
    seen.clear()
    bench.run_bench(annotator, synthetic_docs(6), slice_docs=3, warmup_docs=0,
                    per_mention=False)
    assert sum(not t for _, t in seen) == 2  # without a baseline, annotate's pass alone
