"""Throughput of the collective pipeline against its own limit, side by side, in one process.

    python -m eval.bench [--corpus PATH] [--model DIR] [--device cpu|cuda] [--max-docs N]
                         [--json eval/results/bench/bench.json]

Why one process and interleaved: on a shared machine the speed drifts by tens of percent from
minute to minute, so three separate runs would mostly measure the drift. Here the corpus is cut
into slices, and for every slice the three stages run back to back:

(a) ``encoder``: the bare encoder forward over exactly the chunks ``annotate`` builds for the
    slice (same chunker, same length batches, same batch size) — the physical limit;
(b) ``annotate``: the full collective pipeline, file in → file out (read, chunk, encode, score
    spans, pool, search the KB, sieve, write the output file);
(c) ``per_mention``: the paper's per-mention dual-encoder baseline, also file in → file out
    (the same detection, then one ``context_window``-token forward per mention);
(d) with ``--text-linking``, ``annotate_text``: annotate with ``--linking text`` (the same
    detection, every span linked by the normalizer's text encoder and sieves);
(e) with ``--compare-plain``, ``annotate_plain``: the same model with every rule step of its
    declared pipeline off (``--disable`` of all but the required steps:
    :func:`eval.setting_rows.plain_row`; detection, overlap resolution and dense search
    alone), so the cost of those steps is measured side by side;
(f) with ``--baseline git:REV`` (or a model directory), ``baseline``: that model annotating
    with its own declared pipeline — "today's" annotate as a user runs it, for the speed
    bound of a change that replaced the model.

``--tree LABEL=DIR`` (repeatable) times code rather than models: one worker process per
checkout (its working directory and ``PYTHONPATH``, so it imports that tree's ``e2e_linker``)
loads the linker once, then annotates slice after slice, file in → file out, the trees taking
turns on each slice (:func:`run_trees`): the speed bound of a change to the code, measured in
one interleaved run.

Each stage's seconds are summed over slices, so drift hits all three alike and the ratios stay
meaningful even when the absolute numbers do not. Peak RSS is sampled per stage by a
background thread; the 1-, 5- and 15-minute load averages are recorded before and after.
Writes the JSON, a Markdown table (same stem, ``.md``) and a PNG plot (``.png``) side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch

from e2e_linker.encoder.precision import PRECISIONS

STAGES = ("encoder", "annotate", "annotate_plain", "baseline", "annotate_text", "per_mention")
STAGE_COLOURS = {"encoder": "#888888", "annotate": "#1f77b4", "annotate_plain": "#9467bd",
                 "baseline": "#8c564b", "annotate_text": "#2ca02c", "per_mention": "#d62728"}
#: how each annotating stage runs: annotate's mode, whether spans are linked by their text,
#: and whether every rule step of the declared pipeline is off (eval.setting_rows.plain_row)
STAGE_SETTINGS = {"annotate": ("collective", False, False),
                  "annotate_plain": ("collective", False, True),
                  "baseline": ("collective", False, False),
                  "annotate_text": ("collective", True, False),
                  "per_mention": ("per-mention", False, False)}

#: The paper's GPU figures (Bhowmik et al. 2021, mentions/s at batch size 1), for orientation.
PAPER_GPU_MENTIONS_PER_S = {"collective BC5CDR": 192.4, "per-mention BC5CDR": 65.0,
                            "collective MedMentions": 402.5, "per-mention MedMentions": 87.0}


def current_rss_mb() -> float:
    """Resident set size of this process now (Linux ``/proc``; falls back to the peak)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssSampler:
    """Tracks the highest RSS seen while a stage runs (the process peak cannot be reset)."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, current_rss_mb())
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self.peak = current_rss_mb()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, current_rss_mb())


class StageTotals:
    """Seconds, documents, tokens, mentions and peak RSS accumulated for one stage."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.documents = 0
        self.tokens = 0
        self.mentions = 0
        self.peak_rss_mb = 0.0

    @contextmanager
    def timed(self):
        with RssSampler() as rss:
            start = time.perf_counter()
            yield
            self.seconds += time.perf_counter() - start
        self.peak_rss_mb = max(self.peak_rss_mb, rss.peak)

    def rates(self) -> dict[str, float]:
        s = self.seconds or float("nan")
        return {"seconds": self.seconds, "documents": self.documents, "tokens": self.tokens,
                "mentions": self.mentions, "docs_per_s": self.documents / s,
                "tokens_per_s": self.tokens / s, "mentions_per_s": self.mentions / s,
                "peak_rss_mb": self.peak_rss_mb}


def encoder_only(annotator, docs: Sequence) -> tuple[int, Callable[[], None]]:
    """Real tokens in the chunks ``annotate`` builds for ``docs``, and a closure that runs
    the bare encoder over them in annotate's own length batches (chunking is not timed)."""
    from e2e_linker.collective.batches import collate_chunks, length_batches
    from e2e_linker.collective.chunking import chunk_documents

    model = annotator.model
    cfg = model.config
    chunks = chunk_documents(docs, model.tokenizer, cfg.max_length, cfg.max_span_len,
                             cfg.chunk_overlap)
    groups = list(length_batches(chunks, annotator.settings.batch_size, annotator.settings.max_batch_tokens))
    pad = model.tokenizer.pad_token_id or 0

    @torch.inference_mode()
    def run() -> None:
        for group in groups:
            batch = collate_chunks([chunks[i] for i in group], pad, model.device)
            model.token_states(batch)
        if model.device.type == "cuda":
            torch.cuda.synchronize()

    return sum(len(c) for c in chunks), run


def annotate_file(annotator, source: Path, target: Path, mode: str) -> tuple[int, int, int]:
    """File in → file out in ``mode`` (the annotator's settings put back afterwards); returns
    (documents, tokens, mentions) of the run."""
    from data_tools.formats import read_documents, write_documents

    saved = annotator.settings
    annotator.settings = replace(saved, mode=mode)
    try:
        before = dict(annotator.stats)
        docs = list(read_documents(source))
        write_documents(annotator.annotate(docs, replace=True), target)
        if annotator.model.device.type == "cuda":
            torch.cuda.synchronize()
    finally:
        annotator.settings = saved
    return (len(docs), annotator.stats["tokens"] - before["tokens"],
            annotator.stats["mentions"] - before["mentions"])


def plain(annotator):
    """``annotator`` with every rule step of its pipeline off
    (:func:`eval.setting_rows.plain_row`), its linker rebuilt without the parts those steps
    switch on and without a text linker."""
    from eval.setting_rows import plain_row

    pipeline = annotator.pipeline.changed(plain_row(annotator.pipeline).disable)
    return annotator.with_pipeline(pipeline, text_linker=None)


def stage_runners(annotator, text_linker=None, baseline=None) -> dict:
    """The annotator each annotating stage runs (see :data:`STAGE_SETTINGS`), built once
    before any timing: ``annotator`` itself for ``annotate`` and ``per_mention`` (its mode is
    set per call), its plain pipeline, the baseline as it declares itself, and ``annotator`` with
    ``text_linker`` (``linker annotate --linking text``); a stage without its input is left
    out. ``annotator`` itself is not changed."""
    if annotator.linker.text_linker is not None:  # only the text stage links by the text
        annotator = annotator.with_pipeline(annotator.pipeline, text_linker=None)
    runners = {"annotate": annotator, "per_mention": annotator,
               "annotate_plain": plain(annotator)}
    if baseline is not None:
        runners["baseline"] = baseline
    if text_linker is not None:
        runners["annotate_text"] = annotator.with_pipeline(annotator.pipeline,
                                                           text_linker=text_linker)
    return runners


def write_slices(docs: Sequence, folder: Path, slice_docs: int) -> list[Path]:
    """The corpus, annotations stripped, as BioC XML files of ``slice_docs`` documents."""
    from copy import deepcopy

    from data_tools.formats import write_documents

    paths = []
    for n, start in enumerate(range(0, len(docs), slice_docs)):
        part = deepcopy(list(docs[start:start + slice_docs]))
        for doc in part:
            doc.relations = []
            for passage in doc.passages:
                passage.annotations = []
        path = folder / f"slice{n:04d}.bioc.xml"
        write_documents(part, path)
        paths.append(path)
    return paths


def run_bench(annotator, docs: Sequence, slice_docs: int = 50, per_mention: bool = True,
              warmup_docs: int = 4, text_linker=None,
              compare_plain: bool = False, baseline=None) -> dict[str, StageTotals]:
    """The stages, interleaved slice by slice (see the module docstring); ``annotate_text``
    (spans linked by ``text_linker``, ``linker annotate --linking text``) when one is given,
    ``annotate_plain`` with ``compare_plain``, ``baseline`` with another annotator."""
    from data_tools.formats import read_documents

    totals = {stage: StageTotals() for stage in STAGES
              if (per_mention or stage != "per_mention")
              and (text_linker is not None or stage != "annotate_text")
              and (compare_plain or stage != "annotate_plain")
              and (baseline is not None or stage != "baseline")}
    runners = stage_runners(annotator, text_linker, baseline)

    def annotate_stage(stage: str, source: Path, target: Path) -> tuple[int, int, int]:
        return annotate_file(runners[stage], source, target, STAGE_SETTINGS[stage][0])

    with tempfile.TemporaryDirectory(prefix="e2e_bench_") as tmp:
        folder = Path(tmp)
        warm = write_slices(docs[:warmup_docs], folder / "warm", warmup_docs) if warmup_docs \
            else []
        (folder / "warm").mkdir(exist_ok=True)
        slices = write_slices(docs, folder, slice_docs)
        for path in slices:  # every batch shape once, untimed: kernels set up per shape
            encoder_only(annotator, list(read_documents(path)))[1]()  # (int8 ones especially)
        for path in warm:  # first-call allocations and lazy imports, not timed
            for stage in totals:
                if stage != "encoder":
                    annotate_stage(stage, path, folder / "warm" / "out.bioc.xml")
        for n, path in enumerate(slices):
            slice_docs_list = list(read_documents(path))
            tokens, run = encoder_only(annotator, slice_docs_list)
            enc = totals["encoder"]
            with enc.timed():
                run()
            enc.documents += len(slice_docs_list)
            enc.tokens += tokens
            for stage in STAGE_SETTINGS:
                if stage not in totals:
                    continue
                out = folder / f"out{n:04d}.{stage}.bioc.xml"
                with totals[stage].timed():
                    d, t, m = annotate_stage(stage, path, out)
                totals[stage].documents += d
                totals[stage].tokens += t
                totals[stage].mentions += m
            # the bare encoder finds no mentions; it is credited with annotate's, so that its
            # mentions/s is the ceiling annotate's mentions/s can approach
            enc.mentions = totals["annotate"].mentions
            print(f"slice {n + 1}/{len(slices)}: " + ", ".join(
                f"{s} {t.seconds:.1f}s" for s, t in totals.items()), file=sys.stderr, flush=True)
    return totals


#: a ``--tree`` worker, run in its checkout: load the linker once (argv: torch threads, model
#: directory or ""), say "ready", then for each "SOURCE<TAB>TARGET" line on stdin annotate
#: SOURCE into TARGET and answer "seconds documents mentions" (the API every tree since the
#: declared pipeline has: Linker.load, Linker.annotate, read_documents, write_documents)
TREE_WORKER = """
import sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
from data_tools.formats import read_documents, write_documents
from e2e_linker.api import Linker
linker = Linker.load(sys.argv[2] or None)
print("ready", flush=True)
for line in sys.stdin:
    source, target = line.rstrip("\\n").split("\\t")
    start = time.perf_counter()
    docs = linker.annotate(list(read_documents(source)), replace=True)
    write_documents(docs, target)
    seconds = time.perf_counter() - start
    print(seconds, len(docs), sum(len(d.annotations) for d in docs), flush=True)
"""


def run_trees(trees: dict[str, Path], docs: Sequence, slice_docs: int, threads: int,
              model: str | None = None) -> dict[str, StageTotals]:
    """Each checkout of ``trees`` annotating the same slices, file → file, in worker processes
    that take turns slice by slice (the first slice, untimed, warms each up; the order of the
    turns alternates, so neither tree always runs on a machine the other just warmed).

    Why: a change to the code is timed against the code before it on the same load; a worker
    per tree loads once, as ``linker annotate`` does, and its slices are the in-process stage's
    slices."""
    import subprocess

    totals = {label: StageTotals() for label in trees}
    workers = {}
    try:
        for label, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            workers[label] = subprocess.Popen(
                [sys.executable, "-c", TREE_WORKER, str(threads), model or ""], cwd=tree,
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for label, worker in workers.items():
            if worker.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {label} tree's worker did not start")
        with tempfile.TemporaryDirectory(prefix="e2e_trees_") as tmp:
            folder = Path(tmp)
            slices = write_slices(docs, folder, slice_docs)
            for n, path in enumerate([slices[0], *slices]):
                order = list(workers) if n % 2 else list(reversed(workers))
                for label in order:
                    worker = workers[label]
                    worker.stdin.write(f"{path}\t{folder / f'out{n}.{label}.bioc.xml'}\n")
                    worker.stdin.flush()
                    answer = worker.stdout.readline().split()
                    if len(answer) != 3:  # the worker died: its traceback is on stderr
                        raise RuntimeError(f"the {label} tree's worker stopped on {path.name}")
                    seconds, documents, mentions = answer
                    if n == 0:  # the warm-up turn
                        continue
                    totals[label].seconds += float(seconds)
                    totals[label].documents += int(documents)
                    totals[label].mentions += int(mentions)
                if n:
                    print(f"slice {n}/{len(slices)}: " + ", ".join(
                        f"{label} {t.seconds:.1f}s" for label, t in totals.items()),
                        file=sys.stderr, flush=True)
    finally:
        for worker in workers.values():
            worker.stdin.close()
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
    return totals


def trees_markdown(totals: dict[str, StageTotals], command: str) -> str:
    """The ``--tree`` table: each tree's seconds, documents/s and mentions/s, and each one's
    mentions/s as a ratio of the first tree's."""
    rates = {label: t.rates() for label, t in totals.items()}
    first = next(iter(rates.values()))
    lines = ["| tree | seconds | docs/s | mentions/s | mentions/s ÷ first tree's |",
             "|---|---|---|---|---|"]
    for label, r in rates.items():
        ratio = r["mentions_per_s"] / first["mentions_per_s"] if first["mentions_per_s"] else 0
        lines.append(f"| {label} | {r['seconds']:.1f} | {r['docs_per_s']:.2f} | "
                     f"{r['mentions_per_s']:.1f} | {ratio:.3f} |")
    return "\n".join(lines) + f"\n\nCommand: `{command}`\n"


def summarise(totals: dict[str, StageTotals], annotator, args: argparse.Namespace,
              load_before: tuple[float, float, float], load_seconds: float,
              command: str) -> dict:
    """The JSON record: per-stage rates, the headline keys the issue asks for, the setting."""
    stages = {s: t.rates() for s, t in totals.items()}
    enc, ann = stages["encoder"], stages["annotate"]
    pm = stages.get("per_mention")
    text = stages.get("annotate_text")
    plain = stages.get("annotate_plain")
    base = stages.get("baseline")
    device = annotator.model.device
    result = {
        "command": command,
        "corpus": str(args.corpus),
        "documents": ann["documents"],
        "device": str(device) + (f" ({torch.cuda.get_device_name()})"
                                 if device.type == "cuda" else ""),
        "cpu_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
        "torch": torch.__version__,
        "quantize": annotator.quantized,
        "precision": annotator.model.precision,
        "index": annotator.linker.index.describe(),
        "batch_size": annotator.settings.batch_size,
        "slice_docs": args.slice_docs,
        "load_seconds": load_seconds,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "encoder_tokens_per_s": enc["tokens_per_s"],
        "encoder_docs_per_s": enc["docs_per_s"],
        "annotate_tokens_per_s": ann["tokens_per_s"],
        "annotate_docs_per_s": ann["docs_per_s"],
        "annotate_mentions_per_s": ann["mentions_per_s"],
        "annotate_text_mentions_per_s": text["mentions_per_s"] if text else None,
        "ratio_text_vs_collective_linking": (text["mentions_per_s"] / ann["mentions_per_s"]
                                             if text else None),
        "annotate_plain_mentions_per_s": plain["mentions_per_s"] if plain else None,
        "ratio_annotate_vs_plain_mentions": (ann["mentions_per_s"] / plain["mentions_per_s"]
                                             if plain else None),
        "ratio_annotate_vs_plain_docs": (ann["docs_per_s"] / plain["docs_per_s"]
                                         if plain else None),
        "baseline_mentions_per_s": base["mentions_per_s"] if base else None,
        "ratio_annotate_vs_baseline_mentions": (ann["mentions_per_s"] / base["mentions_per_s"]
                                                if base else None),
        "ratio_annotate_vs_baseline_docs": (ann["docs_per_s"] / base["docs_per_s"]
                                            if base else None),
        "per_mention_mentions_per_s": pm["mentions_per_s"] if pm else None,
        "per_mention_docs_per_s": pm["docs_per_s"] if pm else None,
        "ratio_annotate_vs_encoder": ann["tokens_per_s"] / enc["tokens_per_s"],
        "ratio_collective_vs_per_mention": (ann["mentions_per_s"] / pm["mentions_per_s"]
                                            if pm else None),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "stages": stages,
        "paper_gpu_mentions_per_s": PAPER_GPU_MENTIONS_PER_S,
    }
    return result


def markdown(result: dict) -> str:
    """The table README quotes: one row per stage, then the ratios and the setting."""
    lines = ["| stage | seconds | docs/s | tokens/s | mentions/s | peak RSS (MB) |",
             "|---|---|---|---|---|---|"]
    labels = {"encoder": "bare encoder forward (limit)", "annotate": "annotate, file → file",
              "annotate_text": "annotate --linking text, file → file",
              "annotate_plain": "annotate, every rule step off, file → file",
              "baseline": "baseline model, its declared pipeline, file → file",
              "per_mention": "per-mention baseline, file → file"}
    for stage, row in result["stages"].items():
        lines.append(f"| {labels[stage]} | {row['seconds']:.1f} | {row['docs_per_s']:.2f} | "
                     f"{row['tokens_per_s']:.0f} | {row['mentions_per_s']:.1f} | "
                     f"{row['peak_rss_mb']:.0f} |")
    lines.append("")
    ratios = f"Ratio annotate / encoder (tokens/s): **{result['ratio_annotate_vs_encoder']:.3f}**"
    if result["ratio_collective_vs_per_mention"] is not None:
        ratios += (f"; ratio collective / per-mention (mentions/s): "
                   f"**{result['ratio_collective_vs_per_mention']:.2f}**")
    if result.get("ratio_text_vs_collective_linking") is not None:
        ratios += (f"; ratio --linking text / collective (mentions/s): "
                   f"**{result['ratio_text_vs_collective_linking']:.3f}**")
    if result.get("ratio_annotate_vs_plain_mentions") is not None:
        ratios += (f"; ratio annotate / annotate with every rule step off: mentions/s "
                   f"**{result['ratio_annotate_vs_plain_mentions']:.3f}**, docs/s "
                   f"**{result['ratio_annotate_vs_plain_docs']:.3f}**")
    if result.get("ratio_annotate_vs_baseline_mentions") is not None:
        ratios += (f"; ratio annotate / baseline: mentions/s "
                   f"**{result['ratio_annotate_vs_baseline_mentions']:.3f}**, docs/s "
                   f"**{result['ratio_annotate_vs_baseline_docs']:.3f}**")
    lines.append(ratios + ".")
    lines.append("")
    lines.append(f"{result['documents']} documents of `{result['corpus']}`; device "
                 f"{result['device']}, {result['cpu_threads']} torch threads "
                 f"({result['cpu_count']} CPUs), torch {result['torch']}, int8 quantized: "
                 f"{result['quantize']}, precision: {result.get('precision', 'fp32')}, "
                 f"index: {result['index']}; load average before/after "
                 f"{result['loadavg_before'][0]:.2f} / {result['loadavg_after'][0]:.2f}; "
                 f"peak RSS {result['peak_rss_mb']:.0f} MB.")
    lines.append("")
    lines.append(f"Command: `{result['command']}`")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> bool:
    """Throughput per stage as a bar chart (tokens/s and mentions/s); False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install -e '.[test]')",
              file=sys.stderr)
        return False
    stages = list(result["stages"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, title in ((axes[0], "tokens_per_s", "tokens/s"),
                           (axes[1], "mentions_per_s", "mentions/s")):
        values = [result["stages"][s][key] for s in stages]
        bars = ax.bar(stages, values, color=[STAGE_COLOURS[s] for s in stages])
        ax.bar_label(bars, fmt="%.0f")
        ax.set_title(title)
        ax.set_ylim(0, max(values) * 1.2)
    fig.suptitle(f"{result['documents']} docs, {result['device']}, "
                 f"{result['cpu_threads']} threads; annotate/encoder "
                 f"{result['ratio_annotate_vs_encoder']:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def default_corpus() -> Path:
    from data_tools.registry import get_dataset

    return Path(get_dataset("bc5cdr-bioc", "test").path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=None,
                        help="PubTator / BioC XML / BioC JSON file (default: BC5CDR test)")
    parser.add_argument("--model", default=None, help="model dir (default: embedded)")
    parser.add_argument("--kb", default=None, help="KB spec (default: the model's)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--json", default="eval/results/bench/bench.json", help="output JSON")
    parser.add_argument("--max-docs", type=int, default=None, help="first N documents only")
    parser.add_argument("--slice-docs", type=int, default=50,
                        help="documents per interleaving slice")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--quantize", action="store_true", help="int8 dynamic quantization (CPU)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="mention encoder forward (the encoder stage uses the same)")
    parser.add_argument("--index", default="auto", help="KB index kind (see e2e_linker.kb_search.entity_index)")
    parser.add_argument("--kb-memory-budget", type=float, default=None,
                        help="MB the KB index may use (drives --index auto)")
    parser.add_argument("--no-per-mention", action="store_true")
    parser.add_argument("--text-linking", action="store_true",
                        help="also time annotate --linking text (spans linked by the "
                             "normalizer), interleaved with the collective linking")
    parser.add_argument("--compare-plain", action="store_true",
                        help="also time annotate with every rule step of the pipeline off")
    parser.add_argument("--baseline", default=None,
                        help="also time this model (a directory, or git:REV for the default "
                             "model at REV) with its own declared pipeline")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                        help="time checkouts of the code instead, each in a worker of its "
                             "own, taking turns slice by slice (repeatable; the first is the "
                             "reference)")
    args = parser.parse_args(argv)
    if args.tree:
        return main_trees(args, argv)

    from data_tools.formats import read_documents
    from e2e_linker.api import Linker

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    args.corpus = Path(args.corpus) if args.corpus else default_corpus()
    docs = []
    for doc in read_documents(args.corpus):
        docs.append(doc)
        if args.max_docs is not None and len(docs) >= args.max_docs:
            break
    start = time.perf_counter()
    linker = Linker.load(args.model, kb=args.kb, device=args.device,
                         batch_size=args.batch_size, quantize=args.quantize,
                         precision=args.precision, index_kind=args.index,
                         kb_memory_budget_mb=args.kb_memory_budget,
                         linking="text" if args.text_linking else "collective")
    annotator = linker.annotator
    load_seconds = time.perf_counter() - start
    # the text linker for its own stage only (stage_runners): the others link by span vectors
    text_linker = annotator.linker.text_linker
    baseline = None
    with tempfile.TemporaryDirectory() as scratch:
        if args.baseline:
            from eval.models import model_source

            baseline = Linker.load(model_source(args.baseline, Path(scratch) / "model"),
                                   kb=args.kb, device=args.device, batch_size=args.batch_size,
                                   quantize=args.quantize, precision=args.precision,
                                   index_kind=args.index,
                                   kb_memory_budget_mb=args.kb_memory_budget).annotator
        # inside: the baseline's files (its packed index) stay readable while it runs
        totals = run_bench(annotator, docs, args.slice_docs, not args.no_per_mention,
                           text_linker=text_linker, compare_plain=args.compare_plain,
                           baseline=baseline)
    command = "python -m eval.bench " + " ".join(argv if argv is not None else sys.argv[1:])
    result = summarise(totals, annotator, args, load_before, load_seconds, command)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    plot(result, out.with_suffix(".png"))
    print(markdown(result))
    return result


def main_trees(args: argparse.Namespace, argv: list[str] | None) -> dict:
    """``--tree``: the checkouts timed against each other (:func:`run_trees`); writes the JSON
    and the Markdown table."""
    from data_tools.formats import read_documents

    trees = {}
    for item in args.tree:
        label, sep, directory = item.partition("=")
        if not sep or not Path(directory).is_dir():
            raise SystemExit(f"--tree {item}: expected LABEL=DIR of a checkout")
        trees[label] = Path(directory).resolve()
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    docs = list(read_documents(corpus))[:args.max_docs]
    load_before = os.getloadavg()
    totals = run_trees(trees, docs, args.slice_docs, args.threads or 1, args.model)
    command = "python -m eval.bench " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"command": command, "corpus": str(corpus), "trees": {k: str(v) for k, v in
                                                                    trees.items()},
              "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
              "load_average": [load_before, os.getloadavg()],
              "stages": {label: t.rates() for label, t in totals.items()}}
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(trees_markdown(totals, command))
    print(trees_markdown(totals, command))
    return result


if __name__ == "__main__":
    main()
