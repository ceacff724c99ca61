"""What does ``linker kb build`` cost, and how much of it is the encoder's forward itself?

    python -m eval.kb_build                              # the default KB (743,728 names), ~40+ min
    python -m eval.kb_build --names 20000 --bare-sample 5000     # a seeded sample of its names

Why: a first ``linker annotate`` used to wait ~40 minutes on a 2-core CPU before its first
output, encoding the whole KB (issue 18). Packed indexes now spare first runs, but a user who
wants the full matrix (and its HNSW index) still runs ``linker kb build``, so its cost must be
known and owned. The question is whether that cost *is* the encode — the entity encoder's
tokenize + forward + pool over every name — or whether the build adds much around it
(estimating, checkpointing, rewriting the cache, gathering the KB matrix, the index). The ratio
``build wall / bare forward`` answers it: close to 1 means only a faster encoder (or fewer
names) makes the build cheaper.

The two sides, one after the other in one run:

* **the build, as a user runs it**: ``python -m e2e_linker kb build`` in a subprocess with
  ``E2E_LINKER_CACHE`` set to a fresh temporary folder (nothing is reused). Its stderr is
  passed through and time-stamped as it arrives, so its phases are the spans between its
  progress bars (``until encoding KB names``: imports, both towers, the KB, the time estimate;
  ``encoding KB names``; ``building the hnsw index``; the gaps between and after them).
  Recorded: wall seconds, names encoded (read back from the cache), names/s, the build's own
  time estimate, the child's peak RSS (``ru_maxrss`` of that child, from ``os.wait4``), the
  cache's size on disk afterwards (and per file) and the index kind the cache lists.
* **the bare forward**: the default model loaded as the package loads it
  (``CollectiveLinker.load``), then only ``model.entity_encoder.encode`` — the call the build
  makes for each checkpoint: tokenize, forward, mean-pool, sorted by length inside the encoder,
  in batches of the build's size (256), fp16 out — over a seeded random sample of the same
  names (``--bare-sample``). No cache, no index. When the sample is smaller than the KB its
  names/s is extrapolated to every name (recorded as extrapolated): a second 40-minute pass only
  to time the forward would double the cost of the measurement. The sample is sorted by length
  within itself only, so its batches pad a little more than the full KB's: the extrapolated
  bare time is, if anything, slightly long, and the ratio slightly low.
* **the bare forward under the CLI's heap settings**: the same sample again, in a child process
  that first calls ``bound_heap()`` as every ``linker`` process does (glibc mmap threshold fixed
  at 1 MiB, two arenas: :mod:`e2e_linker.jobs.allocator`). On the 2-core CPU this alone made
  the forward 18-25 % slower (332 vs 395-407 names/s, and 346 vs 433; ~2.5x the page faults
  and system time), so the two bare rates split the build's overhead into the heap settings'
  share and the rest.
  ``--skip-heap-variant`` leaves it out.

``--names N`` builds a KB of N names drawn (seeded) from the default model's KB — base KB and
mined names alike, distinct strings, each with its concept's ID and type — written as a ``kb:``
file. ``linker kb build`` always merges a model's mined names into the KB it is given, so the
sampled build runs with ``--model`` pointing at a copy of the default model (symlinks) whose
``kb_manifest.json`` records no mined names: the build then encodes exactly the N names.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "kb_build"
REPO = Path(__file__).resolve().parent.parent
#: what ``linker kb build`` encodes with (``EntityIndex.build``'s default batch size)
BATCH_SIZE = 256
#: a tqdm progress line: "label:  40%|####  | 400/1000 [00:10<00:15, 40.0name/s]"
BAR = re.compile(r"^\s*(?P<label>[^|:]+?):\s+(?P<percent>\d+)%\|.*?\[(?P<elapsed>[\d:]+)<")
#: transformers' own bars while the towers load: part of start-up, not a build phase
NOT_PHASES = ("Loading weights",)
#: the build's own estimate: "KB index: encoding N names not cached yet (about 12 min on ..."
ESTIMATE = re.compile(r"not cached yet \(about ([\d.]+) (s|min)\b")


def phases(segments: list[tuple[float, str]], wall: float) -> dict[str, float]:
    """Seconds per phase of a build from its time-stamped stderr segments.

    ``segments`` are ``(seconds since start, text)`` for each ``\\r``- or ``\\n``-delimited
    piece of stderr. Each progress bar (other than :data:`NOT_PHASES`) is a phase from the
    moment it first shows to the moment it last updates; the spans before the first bar,
    between bars and after the last bar (until ``wall``) are phases of their own, so the phases
    add up to the wall time.
    """
    spans: dict[str, list[float]] = {}
    for stamp, text in segments:
        match = BAR.match(text)
        if match and match["label"].strip() not in NOT_PHASES:
            label = match["label"].strip()
            spans.setdefault(label, [stamp, stamp])[1] = stamp
    found: dict[str, float] = {}
    previous, last = "start", 0.0
    for label, (first, end) in spans.items():
        found["until " + label if previous == "start" else f"between {previous} and {label}"] = \
            round(first - last, 2)
        found[label] = round(end - first, 2)
        previous, last = label, end
    found["start to exit" if previous == "start" else f"after {previous}"] = round(wall - last, 2)
    return found


def estimate_seconds(stderr: str) -> float | None:
    """The build's own forecast of its encoding time, when it printed one."""
    match = ESTIMATE.search(stderr)
    if match is None:
        return None
    return float(match[1]) * (60 if match[2] == "min" else 1)


def encoded_name_columns(knowledge, directory: Path) -> tuple[list[str], list[str], list[str]]:
    """The name columns (name, concept ID, type) of ``knowledge``, a model directory's KB,
    that its entity index encodes: every name but those of the model's ``lexical_types`` (a
    gene model's genes), selected as the index and ``linker kb pack`` select them
    (:func:`~e2e_linker.kb_search.entity_index.index_name_columns`)."""
    from e2e_linker.collective.model import LinkerConfig
    from e2e_linker.collective.model_dir import CONFIG_FILE
    from e2e_linker.kb_search.entity_index import index_name_columns

    config = LinkerConfig.from_dict(json.loads((Path(directory) / CONFIG_FILE).read_text()))
    return index_name_columns(knowledge, config.lexical_types)


def model_kb_names() -> tuple[list[str], str]:
    """The distinct names a plain ``linker kb build`` encodes for the default model (base KB
    plus mined names, in KB order, less name-only types), and that KB's spec."""
    from e2e_linker.collective.model_dir import default_linker_dir, read_manifest
    from e2e_linker.collective.model_kb import load_model_kb

    directory = default_linker_dir()
    names, _, _ = encoded_name_columns(load_model_kb(directory), directory)
    return list(dict.fromkeys(names)), str(read_manifest(directory).get("kb"))


def sample_kb(count: int, seed: int, folder: Path) -> tuple[str, Path, list[str]]:
    """A KB of ``count`` distinct names drawn from the default model's KB, and a copy of the
    default model that merges no mined names into it: (spec, model directory, names).

    Each name keeps the ID and type of the first concept that holds it (names of one concept
    stay one concept), so the file is a plausible KB and its names are exactly the sample.
    """
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.model_dir import (
        MANIFEST_FILE,
        default_linker_dir,
        packed_index_file,
        read_manifest,
    )
    from e2e_linker.collective.model_kb import load_model_kb

    source = default_linker_dir()
    knowledge = load_model_kb(source)
    owner: dict[str, str] = {}
    for name, concept_id, _ in zip(*encoded_name_columns(knowledge, source), strict=True):
        owner.setdefault(name, concept_id)
    chosen = random.Random(seed).sample(list(owner), min(count, len(owner)))
    sampled = KB()
    for name in chosen:
        concept = knowledge.concepts[owner[name]]
        sampled.add(Concept(concept.id, name, [], concept.type, concept.source))
    path = folder / "sample.kb.tsv"
    sampled.save(path)
    names = list(dict.fromkeys(name for name, _ in KB.load(path).names()))

    model = folder / "model"
    model.mkdir()
    for item in source.iterdir():
        if item.name != MANIFEST_FILE and item != packed_index_file(source):
            (model / item.name).symlink_to(item.resolve())
    manifest = {**read_manifest(source), "extra_names": None, "corpus_names": []}
    (model / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    return f"kb:{path}", model, names


def run_streaming(command: list[str], env: dict[str, str], echo: bool = True) -> dict:
    """Run ``command``, passing its stderr through with arrival times; wall s, exit code,
    stdout, stderr, its time-stamped segments and the child's own peak RSS (MB)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, cwd=REPO, env=env)
        assert child.stderr is not None
        segments: list[tuple[float, str]] = []
        raw, pending, pending_at = bytearray(), b"", 0.0

        def finish(piece: bytes, stamp: float) -> None:
            if piece.strip():
                segments.append((stamp, piece.decode("utf-8", "replace")))

        while chunk := os.read(child.stderr.fileno(), 1 << 16):
            stamp = time.perf_counter() - start
            raw += chunk
            if echo:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
            # a segment is stamped when its first byte arrives: tqdm writes "\r" + state, so
            # a bar's state is only terminated by the next state, seconds later
            first, *rest = re.split(rb"[\r\n]", chunk)
            pending_at = pending_at if pending else stamp
            pending += first
            for piece in rest:
                finish(pending, pending_at)
                pending, pending_at = piece, stamp
        finish(pending, pending_at)
        _, status, usage = os.wait4(child.pid, 0)  # this child's rusage, not all children's
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        child.stderr.close()
        out.seek(0)
        stdout = out.read().decode("utf-8", "replace")
    return {"wall_s": wall, "returncode": child.returncode, "stdout": stdout,
            "stderr": raw.decode("utf-8", "replace"), "segments": segments,
            "peak_rss_mb": usage.ru_maxrss / 1024}  # Linux: KiB


def disk_mb(path: Path) -> float:
    """MiB a file or folder takes on disk (allocated blocks)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files) / 2**20


def run_build(spec: str | None, model: Path | None, index_kind: str, cache: Path) -> dict:
    """``linker kb build [SPEC] [--model MODEL]`` with ``E2E_LINKER_CACHE=CACHE`` (a fresh
    folder), as a user runs it: wall s, phases, peak RSS, what the cache then holds."""
    from e2e_linker.kb_search.cache import describe_cache

    command = [sys.executable, "-m", "e2e_linker", "kb", "build", *([spec] if spec else []),
               *(["--model", str(model)] if model else []),
               *(["--index", index_kind] if index_kind != "auto" else [])]
    done = run_streaming(command, {**os.environ, "E2E_LINKER_CACHE": str(cache)})
    if done["returncode"] != 0:
        raise SystemExit(f"kb build failed ({done['returncode']}):\n{done['stderr'][-3000:]}")
    entries = describe_cache(cache)
    stores = [e for e in entries if e["store"] == "entity_vectors"]
    indexes = sorted({kind for e in stores for kb in e["kbs"] for kind in kb["indexes"]})
    return {
        "command": "linker kb build" + "".join(f" {part}" for part in command[5:]),
        "wall_s": round(done["wall_s"], 1),
        "phases_s": phases(done["segments"], done["wall_s"]),
        "estimate_s": estimate_seconds(done["stderr"]),
        "summary": done["stdout"].strip().splitlines()[-1] if done["stdout"].strip() else "",
        "names_encoded": sum(e.get("names", 0) for e in stores),
        "peak_rss_mb": round(done["peak_rss_mb"]),
        "cache_mb": round(disk_mb(cache), 1),
        "cache_files_mb": {str(p.relative_to(cache)): round(disk_mb(p), 1)
                           for p in sorted(cache.rglob("*")) if p.is_file() and disk_mb(p) >= 0.1},
        "index_kind": ", ".join(indexes) or "?",
    }


def bare_forward(names: list[str], sample: int, seed: int, batch_size: int) -> dict:
    """The default model's entity encoder alone (tokenize, forward, pool) over a seeded sample
    of ``names``, and its time extrapolated to all of them when the sample is smaller."""
    import numpy as np

    from e2e_linker.collective.loading import pick_device
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir

    start = time.perf_counter()
    model = CollectiveLinker.load(default_linker_dir(), device=pick_device(None))
    load_s = time.perf_counter() - start
    chosen = random.Random(seed).sample(names, min(sample, len(names)))
    start = time.perf_counter()
    vectors = model.entity_encoder.encode(chosen, batch_size=batch_size, dtype=np.float16)
    seconds = time.perf_counter() - start
    if vectors.shape[0] != len(chosen):
        raise RuntimeError(f"bare forward: {vectors.shape[0]} vectors for {len(chosen)} names")
    rate = len(chosen) / seconds
    extrapolated = len(chosen) < len(names)
    return {"names": len(chosen), "seconds": round(seconds, 2), "names_per_s": round(rate, 1),
            "batch_size": batch_size, "load_s": round(load_s, 1),
            "all_names_s": round(len(names) / rate if extrapolated else seconds, 1),
            "extrapolated": extrapolated}


#: the bare forward again in a child that first applies the CLI's glibc heap settings
BOUNDED = ("import json, sys\n"
           "from e2e_linker.jobs.allocator import bound_heap\n"
           "applied = bound_heap()\n"
           "from eval.kb_build import bare_forward\n"
           "names = json.loads(open(sys.argv[1], encoding='utf-8').read())\n"
           "record = bare_forward(names, *map(int, sys.argv[2:5]))\n"
           "print(json.dumps({**record, 'heap_bounded': applied}))\n")


def bare_forward_bounded(names: list[str], sample: int, seed: int, batch_size: int,
                         folder: Path) -> dict:
    """:func:`bare_forward` on the same sample in a child process that first calls
    :func:`e2e_linker.jobs.allocator.bound_heap`, as ``linker`` does before any command.

    Why: every ``linker`` process fixes glibc's mmap threshold at 1 MiB (to bound a long
    annotate run's memory), so each batch's large buffers are mapped and unmapped afresh; the
    in-process bare forward runs with glibc's defaults. The setting cannot be undone in a
    process, hence the child; the two bare rates split the build's overhead into the heap
    settings' share and the rest."""
    path = folder / "names.json"
    path.write_text(json.dumps(names), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", BOUNDED, str(path), str(sample), str(seed),
                           str(batch_size)], capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"bare forward with bound heap failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def heap_line(result: dict) -> list[str]:
    """The bare forward under the CLI's heap settings, as a paragraph (none if skipped)."""
    bounded = result["bare_forward_cli_heap"]
    if bounded is None:
        return []
    applied = "" if bounded["heap_bounded"] else " (not applied: MALLOC_*/GLIBC_TUNABLES set)"
    return [f"Bare forward under the CLI's glibc heap settings{applied}: "
            f"{bounded['names_per_s']:.1f} names/s ({bounded['names']:,} names; "
            f"{bounded['all_names_s']:.1f} s for all names"
            f"{', extrapolated' if bounded['extrapolated'] else ''}); encoding phase / it: "
            f"{result['encoding_phase_over_bare_cli_heap']:.2f}.", ""]


def markdown(result: dict) -> str:
    """The results table, the phases and the build's summary line."""
    build, bare = result["build"], result["bare_forward"]
    encoding = result["encoding_phase_over_bare"]
    estimate = "none printed" if build["estimate_s"] is None else f"{build['estimate_s']:.0f} s"
    rows = [
        "| KB names | build wall s | build names/s | bare forward names/s (measured on) | "
        "bare forward s, all names | build / bare (encoding phase / bare) | peak RSS MB | "
        "cache MB | index | machine |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {build['names']:,} | {build['wall_s']:.1f} | {build['names_per_s']:.1f} | "
        f"{bare['names_per_s']:.1f} ({bare['names']:,} names) | {bare['all_names_s']:.1f}"
        f"{' (extrapolated)' if bare['extrapolated'] else ''} | {result['build_over_bare']:.2f} "
        f"({'—' if encoding is None else f'{encoding:.2f}'}) | {build['peak_rss_mb']:,} | "
        f"{build['cache_mb']:,.1f} | {build['index_kind']} | {result['machine']} |",
        "",
        "Build phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in build["phases_s"].items()),
        "",
        f"Build's own estimate of its encoding: {estimate}; "
        f"bare forward's model load {bare['load_s']:.1f} s.",
        "",
        "Cache on disk (MB): " + ", ".join(f"{k} {v:,.1f}"
                                           for k, v in build["cache_files_mb"].items()),
        "",
        *heap_line(result),
        f"`{build['command']}` → {build['summary']}",
        "",
        f"`{result['command']}`",
    ]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=None,
                        help="build a KB of this many names sampled from the default model's "
                             "KB (default: the default KB itself, every name)")
    parser.add_argument("--bare-sample", type=int, default=50_000,
                        help="names the bare forward is timed on (extrapolated to all names)")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="bare forward batch size (the build's is 256)")
    parser.add_argument("--index", default="auto", choices=("auto", "exact", "hnsw", "ivfpq"),
                        help="passed to `linker kb build --index` (auto: as a user's build)")
    parser.add_argument("--skip-heap-variant", action="store_true",
                        help="skip the second bare forward under the CLI's glibc heap settings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if (args.names is not None and args.names < 1) or args.bare_sample < 1:
        parser.error("--names and --bare-sample must be positive")

    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="kb_build_") as tmp:
        folder = Path(tmp)
        if args.names:
            spec, model, names = sample_kb(args.names, args.seed, folder)
            kb = f"{len(names):,} names sampled from the default model's KB (seed {args.seed})"
        else:
            names, base = model_kb_names()
            spec, model, kb = None, None, f"the default model's KB ({base} + mined names)"
        print(f"linker kb build of {len(names):,} names on an empty cache ...", file=sys.stderr,
              flush=True)
        build = run_build(spec, model, args.index, folder / "cache")
    if build["names_encoded"] != len(names):
        raise SystemExit(f"the build encoded {build['names_encoded']:,} names, "
                         f"not the {len(names):,} expected")
    print(f"bare forward over {min(args.bare_sample, len(names)):,} of the names ...",
          file=sys.stderr, flush=True)
    bare = bare_forward(names, args.bare_sample, args.seed, args.batch_size)
    bounded = None
    if not args.skip_heap_variant:
        with tempfile.TemporaryDirectory(prefix="kb_build_") as tmp:
            bounded = bare_forward_bounded(names, args.bare_sample, args.seed, args.batch_size,
                                           Path(tmp))
    build["names"] = len(names)
    build["names_per_s"] = round(len(names) / build["wall_s"], 1)
    encoding = build["phases_s"].get("encoding KB names")
    result = {
        "command": command_line("kb_build", argv), "machine": machine(),
        "load_average_1min": {"start": round(load_at_start, 2),
                              "end": round(os.getloadavg()[0], 2)},
        "kb": kb, "build": build, "bare_forward": bare,
        "build_over_bare": round(build["wall_s"] / bare["all_names_s"], 3),
        "encoding_phase_over_bare": None if encoding is None
        else round(encoding / bare["all_names_s"], 3),
        "bare_forward_cli_heap": bounded,
        "encoding_phase_over_bare_cli_heap": None if encoding is None or bounded is None
        else round(encoding / bounded["all_names_s"], 3),
    }
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
