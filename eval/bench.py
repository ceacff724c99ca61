"""Throughput of the collective pipeline against its own limit, side by side, in one process.

    python -m eval.bench [--corpus PATH] [--model DIR] [--device cpu|cuda] [--max-docs N]
                         [--json eval/results/bench/bench.json]

Why one process and interleaved: on a shared machine the speed drifts by tens of percent from
minute to minute, so three separate runs would mostly measure the drift. Here the corpus is cut
into slices, and for every slice the three stages run back to back:

(a) ``encoder``: the bare encoder forward over exactly the chunks ``annotate`` builds for the
    slice (same chunker, same length batches, same batch size) — the physical limit;
(b) ``annotate``: the full collective pipeline, file in → file out through ``linker
    annotate``'s corpus engine (read, chunk, encode, score spans, pool, search the KB, sieve,
    write the output file; a group's scoring overlapped with the previous group's steps);
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

**Host time.** The ``annotate`` stage runs with timing wrappers around the library's functions
and methods (:class:`HostClock`, :data:`HOST_PARTS`, every pipeline step; installed for that
stage only, the library untouched; each thread timing its own parts, see :class:`HostClock`
for what they mean under the engine's overlap). Its host milliseconds per document are its wall time less
the encoder forward and the KB search (:data:`DEVICE_PARTS`), split by stage — reading,
abbreviation scan, chunking and batching, span heads, span candidates to Python objects,
selection steps, linking, species, annotate-stage rule steps, writing, and ``other`` for what
no wrapper covers — so that the split adds up to the figure (:func:`host_split`): the work a
GPU waits for. One more annotate pass of the first slice runs under cProfile, untimed, its
top functions written beside the JSON (``.profile.txt``; ``--no-profile`` skips it). What the
process has loaded is frozen out of the cycle collector's sight after the warm-up, as
``linker annotate``'s corpus engine freezes it after its first group
(:mod:`e2e_linker.jobs.collector`), and thawed at the end. The warm-up also annotates every
slice once, untimed, so that the KB names the slices shortlist are in the cache before any
stage is timed: on a cold cache the first stage to see a slice paid for their encoding (an
annotate stage timed 15 times slower than the same pipeline as baseline, which ran second);
a ``--baseline`` model warms every slice too (its names are cached under its own encoder: a
baseline from before the species work, unwarmed, was timed 20 times slower than annotate).
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
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import torch

from e2e_linker.encoder.precision import PRECISIONS
from eval.reporting import machine

#: documents per interleaving slice: two of the corpus engine's groups (64 documents each,
#: e2e_linker/jobs/corpus_run.py), so that a slice is annotated as a corpus is, the second
#: group scored while the first one's steps run (e2e_linker/jobs/lookahead.py)
SLICE_DOCS = 128

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


#: annotate's parts that are not host work: the encoder forward and the KB search
DEVICE_PARTS = ("encoder forward", "KB search")
#: what annotate's host time is split into (:class:`HostClock`): part → (stage it is reported
#: under, the functions and methods it times, as ``module:attribute``); a part's seconds are
#: its own, the parts timed inside it taken out. Every registered pipeline step is a part
#: of its own besides (:func:`step_parts`), reported under :data:`STEP_STAGES`.
HOST_PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    # the engine reads the slice as one numbered sequence (timed to its end, see HostClock.wrap)
    "read input": ("reading input", ("data_tools.formats.source:CorpusSource.__iter__",)),
    "encoder forward": ("encoder forward", (
        "e2e_linker.collective.model:CollectiveLinker.token_states",)),
    "KB search": ("KB search", ("e2e_linker.kb_search.entity_index:EntityIndex.search",)),
    "abbreviation scan": ("abbreviation scan", (
        "e2e_linker.collective.annotator:scan_documents",)),
    "chunking": ("chunking and batching", ("e2e_linker.collective.annotator:chunk_documents",)),
    "length batches": ("chunking and batching", (
        "e2e_linker.collective.annotator:length_batches",)),
    "collate to device": ("chunking and batching", (
        "e2e_linker.collective.annotator:collate_chunks",)),
    "span heads": ("span heads (torch, after the encoder)", (
        "e2e_linker.collective.model:CollectiveLinker.candidate_spans",
        "e2e_linker.collective.model:CollectiveLinker.span_vectors",
        "e2e_linker.collective.model:CollectiveLinker.type_logits")),
    "span objects": ("span candidates to Python objects", (
        "e2e_linker.collective.annotator:Annotator.score_chunks",)),
    "selection set-up": ("selection steps", (
        "e2e_linker.collective.annotator:Annotator.select",)),
    "linking set-up": ("linking", ("e2e_linker.collective.annotator:Annotator.link",)),
    "dense ranking": ("linking", ("e2e_linker.kb_search.entity_index:EntityIndex.link",)),
    "name-only ranking": ("linking", (
        "e2e_linker.collective.gene_ranking:GeneRanking.name_only_ranking",)),
    "sieve stack": ("linking", ("e2e_linker.lexical.sieve_stack:SieveStack.match",)),
    "composites": ("linking", (
        "e2e_linker.collective.span_linking:SpanLinker.composite_ids",)),
    "short forms": ("linking", (
        "e2e_linker.collective.span_linking:SpanLinker.link_short_forms",)),
    "species order": ("species", (
        "e2e_linker.collective.span_linking:SpanLinker.species_links",
        "e2e_linker.collective.span_linking:SpanLinker.mentioned_taxa",
        "e2e_linker.collective.span_linking:SpanLinker.species_inputs",
        "e2e_linker.collective.span_linking:document_species",
        "e2e_linker.collective.species_choice:SpeciesChoice.order",
        "e2e_linker.collective.span_linking:preferred_taxa",
        "e2e_linker.collective.span_linking:mentioned_taxa_first",
        "e2e_linker.collective.gene_ranking:GeneRanking.mention_species",
        "e2e_linker.collective.gene_ranking:GeneRanking.species_first",
        "e2e_linker.collective.gene_ranking:GeneRanking.named_in_document_first",
        "e2e_linker.collective.gene_ranking:GeneRanking.ortholog")),
    # Annotator.finish's own lines: each annotation's record (IDs, names) and the counts
    "annotation records": ("writing output", (
        "e2e_linker.collective.annotator:Annotator.finish",)),
    "copy documents": ("writing output", (
        "e2e_linker.collective.annotator:attach_annotations",)),
    "write output": ("writing output", ("data_tools.formats.biocxml:BioCXMLWriter.write",)),
}
#: the stage a pipeline step's part is reported under, by the step's stage
STEP_STAGES = {"select": "selection steps", "link": "linking",
               "annotate": "annotate-stage rule steps"}
#: the parts a CUDA device finishes before their time is taken (its kernels run
#: asynchronously: without a synchronisation their time would land on whatever waits next)
SYNCED_PARTS = ("encoder forward", "span heads")
#: what no part covers: the corpus engine's own lines and the timing itself, less the seconds
#: the two threads' parts overlapped (:class:`HostClock`)
OTHER = "other"


def step_parts() -> dict[str, tuple[str, str]]:
    """Every registered pipeline step as a part: ``"<stage> step <name>"`` → (the stage it is
    reported under, :data:`STEP_STAGES`; the step's ``run`` as ``module:Class.run``)."""
    import e2e_linker.pipeline.declaration  # noqa: F401  (imports the steps: registers them)
    from e2e_linker.pipeline.step import STEPS

    return {f"{cls.stage} step {name}": (STEP_STAGES[cls.stage],
                                          f"{cls.__module__}:{cls.__qualname__}.run")
            for name, cls in STEPS.items()}


def part_stages() -> dict[str, str]:
    """Every part (:data:`HOST_PARTS` and the pipeline steps) → the stage it is reported under."""
    stages = {label: stage for label, (stage, _) in HOST_PARTS.items()}
    stages.update({label: stage for label, (stage, _) in step_parts().items()})
    return stages


class HostClock:
    """Where annotate's time goes: timing wrappers around the library's functions and methods
    (:data:`HOST_PARTS`, every pipeline step), installed for one call at a time
    (:meth:`installed`), each adding the seconds of its own to its part.

    Why from outside: the library stays as users run it, and nothing is timed unless the
    bench asks. A part's time is its own (the parts timed inside it are taken out), so the
    parts add up to the time of the outermost one; with ``sync`` (CUDA) the
    :data:`SYNCED_PARTS` wait for their kernels, so the GPU's time is theirs.

    Under the corpus engine's overlap (:mod:`e2e_linker.jobs.lookahead`) the next group's
    scoring — chunks to the device, the encoder forward, the span heads, the span objects —
    runs in a second thread while this group's steps run: each thread times its own parts
    (one stack of open parts per thread), so a part's seconds are the time its thread spent
    in it, and the parts of both threads together can exceed the wall time;
    :func:`host_split`'s ``other`` is then less by the seconds they overlapped (negative
    when that is more than what no part covers).
    """

    def __init__(self, sync: Callable[[], None] | None = None):
        self.seconds: dict[str, float] = {}
        self.sync = sync
        self._local = threading.local()  # .stack per thread: per open part, the seconds of
        self._lock = threading.Lock()    # the parts inside it; the lock guards ``seconds``

    @property
    def _stack(self) -> list[float]:
        """This thread's open parts (see :meth:`__init__`)."""
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    @contextmanager
    def part(self, label: str):
        """Time a block as ``label`` (its own seconds: nested parts are taken out)."""
        self._stack.append(0.0)
        start = time.perf_counter()
        try:
            yield
        finally:
            self._stop(label, start)

    def _stop(self, label: str, start: float) -> None:
        """End the part ``label`` begun at ``start``: its own seconds added, all of them
        counted as the enclosing part's inner time."""
        if self.sync is not None and label in SYNCED_PARTS:
            self.sync()
        elapsed = time.perf_counter() - start
        stack = self._stack
        inner = stack.pop()
        with self._lock:
            self.seconds[label] = self.seconds.get(label, 0.0) + elapsed - inner
        if stack:
            stack[-1] += elapsed

    def wrap(self, label: str, function: Callable) -> Callable:
        """``function`` timed as ``label``; a generator it returns is run to its end inside
        the timing (a lazy batch plan would otherwise be timed as its creation).

        Written out rather than through :meth:`part`: a wrapped function is called thousands
        of times per slice, and a context manager's own cost would be counted as host time."""
        import functools
        import inspect

        stop = self._stop
        local = self._local

        @functools.wraps(function)
        def timed(*args, **kwargs):
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            stack.append(0.0)
            start = time.perf_counter()
            try:
                result = function(*args, **kwargs)
                if inspect.isgenerator(result):
                    result = iter(list(result))
                return result
            finally:
                stop(label, start)

        return timed

    def targets(self) -> list[tuple[str, str]]:
        """``(part, "module:attribute")`` for every function and method the clock times."""
        pairs = [(label, target) for label, (_, targets) in HOST_PARTS.items()
                 for target in targets]
        return pairs + [(label, target) for label, (_, target) in step_parts().items()]

    @contextmanager
    def installed(self):
        """The wrappers in place while the block runs, the originals put back after (a name
        that no longer exists is an error naming it: the table must follow the library)."""
        import importlib

        undo: list[Callable[[], None]] = []
        try:
            for label, target in self.targets():
                module_name, _, path = target.partition(":")
                owner = importlib.import_module(module_name)
                *parents, name = path.split(".")
                for parent in parents:
                    owner = getattr(owner, parent)
                undo.append(self._install(owner, name, label, target))
            yield self
        finally:
            for restore in reversed(undo):
                restore()

    def _install(self, owner, name: str, label: str, target: str) -> Callable[[], None]:
        """Replace ``owner.name`` by its timed version; returns what puts it back."""
        if not hasattr(owner, name):
            raise RuntimeError(f"eval.bench host timing: {target} does not exist (update "
                               "HOST_PARTS)")
        own = name in vars(owner)  # a class attribute may be inherited: then it is deleted
        raw = vars(owner)[name] if own else getattr(owner, name)
        if isinstance(raw, (staticmethod, classmethod)):
            replacement = type(raw)(self.wrap(label, raw.__func__))
        else:
            replacement = self.wrap(label, raw)
        setattr(owner, name, replacement)

        def restore() -> None:
            if own:
                setattr(owner, name, raw)
            else:
                delattr(owner, name)

        return restore


def host_split(wall_seconds: float, parts: dict[str, float], documents: int) -> dict:
    """annotate's host milliseconds per document — its wall time less the encoder forward and
    the KB search — and how they split: per stage of :data:`HOST_PARTS` and per part, the
    unattributed rest as :data:`OTHER`, so that the stages add up to the host figure."""
    per_doc = 1000.0 / max(documents, 1)
    device = sum(parts.get(p, 0.0) for p in DEVICE_PARTS)
    host = wall_seconds - device
    stage_of = part_stages()
    stages: dict[str, float] = {}
    for label, seconds in parts.items():
        if label not in DEVICE_PARTS:
            stage = stage_of[label]
            stages[stage] = stages.get(stage, 0.0) + seconds * per_doc
    stages[OTHER] = (wall_seconds - sum(parts.values())) * per_doc
    return {"host_ms_per_doc": host * per_doc,
            "annotate_ms_per_doc": wall_seconds * per_doc,
            "encoder_forward_ms_per_doc": parts.get("encoder forward", 0.0) * per_doc,
            "kb_search_ms_per_doc": parts.get("KB search", 0.0) * per_doc,
            "host_stages_ms_per_doc": dict(sorted(stages.items(), key=lambda kv: -kv[1])),
            "host_parts_ms_per_doc": {label: seconds * per_doc for label, seconds in
                                      sorted(parts.items(), key=lambda kv: -kv[1])
                                      if label not in DEVICE_PARTS}}


class StageTotals:
    """Seconds, documents, tokens, mentions and peak RSS accumulated for one stage."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.documents = 0
        self.tokens = 0
        self.mentions = 0
        self.peak_rss_mb = 0.0
        #: seconds by part of the stage (:class:`HostClock`; annotate only)
        self.parts: dict[str, float] = {}

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
    the bare encoder over them in annotate's own length batches, padded as annotate pads them
    (``PAD_MULTIPLE``: the same tensor shapes; chunking is not timed)."""
    from e2e_linker.collective.batches import PAD_MULTIPLE, collate_chunks, length_batches

    model = annotator.model
    settings = annotator.settings
    chunks = annotator.chunk(docs)  # annotate's chunks (its guideline tag included)
    groups = list(length_batches(chunks, settings.batch_size, settings.max_batch_tokens,
                                 PAD_MULTIPLE))
    pad = model.tokenizer.pad_token_id or 0

    @torch.inference_mode()
    def run() -> None:
        for group in groups:
            batch = collate_chunks([chunks[i] for i in group], pad, model.device, PAD_MULTIPLE)
            model.token_states(batch)
        if model.device.type == "cuda":
            torch.cuda.synchronize()

    return sum(len(c) for c in chunks), run


def annotate_file(annotator, source: Path, target: Path, mode: str,
                  overlap: bool | None = None) -> tuple[int, int, int]:
    """File in → file out in ``mode`` through ``linker annotate``'s corpus engine (its groups,
    and its overlap of one group's scoring with the previous group's steps unless
    ``overlap`` is False; the annotator's settings put back afterwards); returns (documents,
    tokens, mentions) of the run."""
    from e2e_linker.collective.annotator import GroupAnnotation
    from e2e_linker.jobs.corpus_run import run_to_file

    saved = annotator.settings
    annotator.settings = replace(saved, mode=mode)
    try:
        before = dict(annotator.stats)
        report = run_to_file([source], target, GroupAnnotation(annotator, replace=True),
                             progress=False, overlap=overlap)
        if annotator.model.device.type == "cuda":
            torch.cuda.synchronize()
    finally:
        annotator.settings = saved
    return (report.documents, annotator.stats["tokens"] - before["tokens"],
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


def run_bench(annotator, docs: Sequence, slice_docs: int = SLICE_DOCS, per_mention: bool = True,
              warmup_docs: int = 4, text_linker=None,
              compare_plain: bool = False, baseline=None,
              profile_to: Path | None = None) -> dict[str, StageTotals]:
    """The stages, interleaved slice by slice (see the module docstring); ``annotate_text``
    (spans linked by ``text_linker``, ``linker annotate --linking text``) when one is given,
    ``annotate_plain`` with ``compare_plain``, ``baseline`` with another annotator.

    The ``annotate`` stage runs with a :class:`HostClock` installed (its parts' seconds in
    ``totals["annotate"].parts``); ``profile_to``: one more annotate pass over the first
    slice, untimed, under cProfile, written there as text (:func:`profile_annotate`)."""
    from data_tools.formats import read_documents

    totals = {stage: StageTotals() for stage in STAGES
              if (per_mention or stage != "per_mention")
              and (text_linker is not None or stage != "annotate_text")
              and (compare_plain or stage != "annotate_plain")
              and (baseline is not None or stage != "baseline")}
    runners = stage_runners(annotator, text_linker, baseline)

    def annotate_stage(stage: str, source: Path, target: Path) -> tuple[int, int, int]:
        return annotate_file(runners[stage], source, target, STAGE_SETTINGS[stage][0])

    from e2e_linker.jobs.collector import loaded_objects_frozen

    sync = torch.cuda.synchronize if annotator.model.device.type == "cuda" else None
    clock = HostClock(sync)

    # what the run has loaded is frozen after the warm-up, as the corpus engine freezes it
    # after its first group (e2e_linker/jobs/collector.py says why)
    with tempfile.TemporaryDirectory(prefix="e2e_bench_") as tmp, \
            loaded_objects_frozen() as settle:
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
        for path in slices:
            # the KB names each slice shortlists, encoded into the cache once, untimed: on a
            # cold cache the first stage to see a slice pays for them (tens of seconds a
            # slice on a 2-core CPU) and every later one finds them cached; the baseline is
            # another model, whose KB and encoder have cache entries of their own
            for stage in ("annotate", "baseline"):
                if stage in totals:
                    annotate_stage(stage, path, folder / "warm" / "out.bioc.xml")
        settle()
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
                timing = clock if stage == "annotate" else None
                # installed outside the timing, so that putting the wrappers in is not timed
                with timing.installed() if timing else nullcontext(), totals[stage].timed():
                    d, t, m = annotate_stage(stage, path, out)
                totals[stage].documents += d
                totals[stage].tokens += t
                totals[stage].mentions += m
            # the bare encoder finds no mentions; it is credited with annotate's, so that its
            # mentions/s is the ceiling annotate's mentions/s can approach
            enc.mentions = totals["annotate"].mentions
            print(f"slice {n + 1}/{len(slices)}: " + ", ".join(
                f"{s} {t.seconds:.1f}s" for s, t in totals.items()), file=sys.stderr, flush=True)
        if profile_to is not None:
            profile_annotate(runners["annotate"], slices[0], folder / "profiled.bioc.xml",
                             profile_to)
    totals["annotate"].parts = dict(clock.seconds)
    return totals


def profile_annotate(annotator, source: Path, target: Path, out: Path, top: int = 40) -> None:
    """One annotate pass, file → file, under cProfile; ``out`` gets the ``top`` functions by
    cumulative time, by their own time, and by their own time among the project's functions
    (``e2e_linker/``, ``data_tools/``: the Python host work), as text.

    Why a pass of its own: the profiler slows Python calls several-fold, so its seconds are
    not the timed run's; it says which functions the host time of :func:`host_split` goes to.
    """
    import cProfile
    import io
    import pstats
    import sysconfig

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        # one thread: cProfile sees the thread it was enabled in only
        documents = annotate_file(annotator, source, target, STAGE_SETTINGS["annotate"][0],
                                  overlap=False)[0]
    finally:
        profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    text.write(f"cProfile of one annotate pass, file → file: {documents} documents of "
               f"{source.name} (untimed; the profiler's own cost inflates Python calls)\n")
    for title, order, only in (("by cumulative time", "cumulative", ()),
                               ("by own time (tottime)", "tottime", ()),
                               ("the project's functions by own time", "tottime",
                                (r"e2e_linker/|data_tools/",))):
        text.write(f"\n== {title}\n")
        stats.sort_stats(order).print_stats(*only, top)
    report = text.getvalue()
    # paths relative to the installed packages and the checkout (the longer prefix first)
    for prefix in (sysconfig.get_paths()["purelib"], str(Path(__file__).resolve().parents[1])):
        report = report.replace(prefix + os.sep, "")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)


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
    result["machine"] = machine()
    result.update(host_split(totals["annotate"].seconds, totals["annotate"].parts,
                             totals["annotate"].documents))
    return result


def host_markdown(result: dict) -> list[str]:
    """The host-time table: annotate's milliseconds per document less the encoder forward and
    the KB search, by stage, with each stage's parts (:func:`host_split`)."""
    host = result["host_ms_per_doc"]
    lines = [f"Host time: **{host:.2f} ms/document** — annotate {result['annotate_ms_per_doc']:.2f}"
             f" ms/document, less the encoder forward "
             f"({result['encoder_forward_ms_per_doc']:.2f}) and the KB search "
             f"({result['kb_search_ms_per_doc']:.2f}).", "",
             "| host stage | ms/document | share | its parts (ms/document) |", "|---|---|---|---|"]
    stage_of = part_stages()
    for stage, ms in result["host_stages_ms_per_doc"].items():
        parts = ", ".join(f"{label.split(' step ')[-1]} {part_ms:.2f}" for label, part_ms
                          in result["host_parts_ms_per_doc"].items()
                          if stage_of.get(label) == stage and part_ms >= 0.005)
        if stage == OTHER:
            parts = ("the corpus engine's own lines (atomic output, memory release), the "
                     "timing itself; less the seconds the two threads' parts overlapped")
        share = ms / host if host else float("nan")
        lines.append(f"| {stage} | {ms:.2f} | {share:.1%} | {parts} |")
    if result.get("profile"):
        lines += ["", f"Where the host time goes, by function: `{result['profile']}` "
                      "(cProfile over one more annotate pass of the first slice)."]
    return lines


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
    if "host_ms_per_doc" in result:
        lines += host_markdown(result) + [""]
    lines.append(f"{result['documents']} documents of `{result['corpus']}`; device "
                 f"{result['device']}, {result['cpu_threads']} torch threads "
                 f"({result['cpu_count']} CPUs), torch {result['torch']}, int8 quantized: "
                 f"{result['quantize']}, precision: {result.get('precision', 'fp32')}, "
                 f"index: {result['index']}; machine: {result.get('machine', '?')}; "
                 f"load average before/after "
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
    parser.add_argument("--slice-docs", type=int, default=SLICE_DOCS,
                        help="documents per interleaving slice (default: two of annotate's "
                             "document groups, so that its overlap of groups is measured)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--quantize", action="store_true", help="int8 dynamic quantization (CPU)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="mention encoder forward (the encoder stage uses the same)")
    parser.add_argument("--index", default="auto", help="KB index kind (see e2e_linker.kb_search.entity_index)")
    parser.add_argument("--kb-memory-budget", type=float, default=None,
                        help="MB the KB index may use (drives --index auto)")
    parser.add_argument("--no-per-mention", action="store_true")
    parser.add_argument("--no-profile", action="store_true",
                        help="skip the cProfile pass (by default one more annotate pass of "
                             "the first slice, written beside the JSON as .profile.txt)")
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
        out = Path(args.json)
        profile = None if args.no_profile else out.with_suffix(".profile.txt")
        # inside: the baseline's files (its packed index) stay readable while it runs
        totals = run_bench(annotator, docs, args.slice_docs, not args.no_per_mention,
                           text_linker=text_linker, compare_plain=args.compare_plain,
                           baseline=baseline, profile_to=profile)
    command = "python -m eval.bench " + " ".join(argv if argv is not None else sys.argv[1:])
    result = summarise(totals, annotator, args, load_before, load_seconds, command)
    result["profile"] = profile.name if profile is not None else None
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
