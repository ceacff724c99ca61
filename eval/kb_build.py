"""What does ``linker kb build`` cost for the whole default KB, and how much of it is the encoder?

    python -m eval.kb_build                          # the default KB (744k names), ~40+ min here
    python -m eval.kb_build --names 20000            # a seeded sample of the KB's names

Why: a first ``linker annotate`` used to wait ~41 minutes for this build before its first output
(issue 18). The packed indexes now spare first runs, but users who want the full matrix (and
its HNSW index) still run the build, so its cost must be known and owned: is the time the
encoder's forward itself, or overhead around it (tokenizing, caching, checkpoints, the index)?

The build runs exactly as a user runs it — ``linker kb build`` in a subprocess, on a fresh
``--cache-dir`` — and is timed as a whole and by phase (the final state of each progress bar it
prints). Beside it, in this process, the bare forward of the same entity encoder
(``TextEncoder.encode``: tokenize, forward, pool; no cache, no index) runs over a seeded sample
of the same names (``--bare-sample``), and its names/s is extrapolated to the full name count:
a second 40-minute pass only to time the forward would double the cost of this measurement.
The ratio build / bare forward is the overhead of everything that is not the encoder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eval.reporting import command_line, write_results

RESULTS = Path(__file__).parent / "results" / "kb_build"
REPO = Path(__file__).resolve().parent.parent
#: the last state of a tqdm bar: "desc: 100%|████| 744490/744490 [40:01<00:00, 310.0name/s]"
BAR = re.compile(r"([^\r\n|]+?):\s+100%\|[^|]*\|\s*([\d,.]+k?)/([\d,.]+k?)\s*\[([\d:]+)<")


def clock_seconds(text: str) -> float:
    """tqdm's elapsed "H:MM:SS" or "MM:SS" as seconds."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def phases(stderr: str) -> dict[str, float]:
    """Seconds per progress bar that reached 100 % (the build's phases), by bar label."""
    found: dict[str, float] = {}
    for label, _, _, elapsed in BAR.findall(stderr):
        if label.strip() != "Loading weights":  # transformers' own bar, not a build phase
            found[label.strip()] = clock_seconds(elapsed)
    return found


def kb_names_of(spec: str | None) -> list[str]:
    """The distinct names ``linker kb build SPEC`` encodes for the default model."""
    from e2e_linker.collective.model_dir import default_model_dir
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.kb_search.entity_index import kb_names

    knowledge = load_model_kb(default_model_dir(), spec)
    return list(dict.fromkeys(name for name, _ in kb_names(knowledge)))


def sample_kb(names: int, seed: int, folder: Path) -> str:
    """A TSV KB of ``names`` names drawn from the default KB (one concept each); its spec."""
    from data_tools.registry import load_kb
    from e2e_linker.collective.model_dir import default_model_dir, read_manifest

    pairs = load_kb(read_manifest(default_model_dir())["kb"]).names()
    chosen = random.Random(seed).sample(range(len(pairs)), min(names, len(pairs)))
    path = folder / "sample_kb.tsv"
    with path.open("w", encoding="utf-8") as handle:
        for row in sorted(chosen):
            name, concept = pairs[row]
            handle.write(f"{concept}\t{name.replace(chr(9), ' ')}\n")
    return f"tsv:{path}"


def run_build(spec: str | None, cache: Path) -> dict:
    """``linker kb build [SPEC] --cache-dir CACHE`` as a user runs it: wall s, phases, peak
    memory, what ``linker kb info`` then reports, size on disk."""
    command = [sys.executable, "-m", "e2e_linker", "kb", "build", *([spec] if spec else []),
               "--cache-dir", str(cache)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=os.environ)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kb build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    info = subprocess.run([sys.executable, "-m", "e2e_linker", "kb", "info", "--cache-dir",
                           str(cache), "--json"], capture_output=True, text=True, cwd=REPO,
                          check=True)
    size = sum(p.stat().st_blocks * 512 for p in cache.rglob("*") if p.is_file())
    return {"wall_s": round(wall, 1), "phases_s": phases(done.stderr),
            "summary": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
            "peak_rss_mb": round(peak_mb), "cache_mb": round(size / 2**20, 1),
            "kb_info": json.loads(info.stdout)}


def bare_forward(names: list[str], sample: int, seed: int, batch_size: int) -> dict:
    """The default entity encoder's forward alone over a seeded sample of ``names``."""
    import numpy as np

    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_model_dir

    model = CollectiveLinker.load(default_model_dir(), device="cpu")
    chosen = random.Random(seed).sample(names, min(sample, len(names)))
    start = time.perf_counter()
    model.entity_encoder.encode(chosen, batch_size=batch_size, dtype=np.float16)
    seconds = time.perf_counter() - start
    rate = len(chosen) / seconds
    return {"names": len(chosen), "seconds": round(seconds, 1), "names_per_s": round(rate, 1),
            "full_seconds_extrapolated": round(len(names) / rate, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=None,
                        help="build a KB of this many names sampled from the default KB "
                             "(default: the default KB itself)")
    parser.add_argument("--bare-sample", type=int, default=50_000,
                        help="names the bare forward is timed on (extrapolated to all)")
    parser.add_argument("--batch-size", type=int, default=256, help="as the build encodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="kb_build_") as tmp:
        folder = Path(tmp)
        spec = sample_kb(args.names, args.seed, folder) if args.names else None
        names = kb_names_of(spec)
        print(f"kb build of {len(names):,} names on an empty cache ...", flush=True)
        build = run_build(spec, folder / "cache")
    bare = bare_forward(names, args.bare_sample, args.seed, args.batch_size)
    build["names"] = len(names)
    build["names_per_s"] = round(len(names) / build["wall_s"], 1)
    ratio = build["wall_s"] / bare["full_seconds_extrapolated"]
    encoding = build["phases_s"].get("encoding KB names")
    encode_ratio = None if encoding is None else encoding / bare["full_seconds_extrapolated"]
    result = {"command": command_line("kb_build", argv),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, no GPU",
              "kb": spec or "the default model's KB", "build": build, "bare_forward": bare,
              "build_over_bare": round(ratio, 3),
              "encoding_phase_over_bare": None if encode_ratio is None else round(encode_ratio, 3)}
    phase_text = ", ".join(f"{k} {v:.0f} s" for k, v in build["phases_s"].items()) or "—"
    table = "\n".join([
        "| KB names | build wall s | build names/s | bare forward names/s (on N names) | "
        "build / bare (encoding phase / bare) | peak RSS MB | cache MB | phases |",
        "|---|---|---|---|---|---|---|---|",
        f"| {len(names):,} | {build['wall_s']:.1f} | {build['names_per_s']:.1f} | "
        f"{bare['names_per_s']:.1f} (on {bare['names']:,}) | {ratio:.2f} "
        f"({'—' if encode_ratio is None else f'{encode_ratio:.2f}'}) | "
        f"{build['peak_rss_mb']:,} | {build['cache_mb']:,.1f} | {phase_text} |",
        "",
        f"Index: {build['summary']}",
    ])
    write_results(args.out, result, table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
