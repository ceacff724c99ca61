"""Throughput of `linker annotate` on 1 vs N processes of one machine, and byte-identity.

    python -m eval.scaling [--docs 100] [--processes 1 2] [--shard-size 10] [--model DIR]
                           [--out eval/results/scaling]

The corpus is the first ``--docs`` documents of BC5CDR test (PubTator; existing annotations
dropped with ``--replace``). Each process count runs ``linker annotate CORPUS -o DIR
--num-processes N`` in its own child process, N = 1 included, so every run pays the same
start-up. Two rates are reported: end to end (documents / wall seconds of the command, model
and KB loading included) and annotation only (from the manifest being written, which happens
once every process has loaded the model and KB, to ``report.json``, written when the last
shard is done); and CPU seconds (user + system, every process of the run), which on a shared
machine says more about the cost of a second process than wall time does. Every run's shards are merged and compared byte for byte with the first run.

Memory: the run's process tree is sampled every 0.2 s (psutil) for its total anonymous
memory (RSS minus shared file-backed pages), the part each process holds privately; the KB
vectors, memory-mapped from the cache, are shared pages and not counted. ``--processes 1 2 2
1`` repeats counts in ABBA order, so drift in the neighbours' load shows.

The machine's load average is recorded before and after each run: on a shared box the rates
say as much about the neighbours as about the code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from e2e_linker.jobs.distributed import available_cores


def bc5cdr_subset(n: int, path: Path) -> Path:
    """The first ``n`` BC5CDR test documents as one PubTator file."""
    from data_tools.formats import read_documents, write_documents
    from data_tools.registry import data_dir

    source = data_dir() / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    docs = []
    for doc in read_documents(source):
        docs.append(doc)
        if len(docs) == n:
            break
    write_documents(docs, path)
    return path


class TreeMemory(threading.Thread):
    """Peak total anonymous memory (RSS − shared) of a process and all its descendants."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.done.is_set():
            try:
                root = psutil.Process(self.pid)
                total = 0
                for proc in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        info = proc.memory_info()
                        total += info.rss - info.shared
                self.peak = max(self.peak, total)
            except psutil.Error:
                pass
            self.done.wait(self.interval)


def run_once(corpus: Path, out: Path, processes: int, shard_size: int,
             model: str | None) -> dict:
    """One ``linker annotate`` run into a fresh shard directory; times and load averages."""
    cores = available_cores()
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, cores // processes))}
    cmd = [sys.executable, "-m", "e2e_linker", "annotate", str(corpus), "-o", str(out),
           "--replace", "--shard-size", str(shard_size), "--num-processes", str(processes)]
    if model:
        cmd += ["--model", model]
    load_before = os.getloadavg()
    used_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    memory = TreeMemory(proc.pid)
    memory.start()
    _, stderr = proc.communicate()
    memory.done.set()
    memory.join()
    wall = time.time() - started
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (used.ru_utime - used_before.ru_utime) + (used.ru_stime - used_before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"annotate failed ({proc.returncode}): {stderr[-2000:]}")
    annotating = (out / "report.json").stat().st_mtime - (out / "manifest.json").stat().st_mtime
    return {"processes": processes, "torch_threads_per_process": max(1, cores // processes),
            "wall_s": round(wall, 2), "annotate_s": round(annotating, 2),
            "peak_anon_mib_all_processes": round(memory.peak / 2**20, 1),
            "cpu_s_all_processes": round(cpu, 1),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "command": " ".join(cmd[1:])}


def merged_bytes(out: Path, target: Path) -> bytes:
    from e2e_linker.jobs.corpus_run import merge_shards

    merge_shards(out, target)
    return target.read_bytes()


def markdown(record: dict) -> str:
    lines = [
        f"# linker annotate scaling: {record['docs']} BC5CDR test documents",
        "",
        f"Machine: {record['machine']}; {record['cores']} cores available; torch "
        f"{record['torch']}; model: {record['model']}; shard size {record['shard_size']}.",
        "The box is shared with other jobs: see the load averages (1/5/15 min).",
        "",
        "| processes | threads each | wall s | docs/s end to end | annotate s | docs/s "
        "annotating | speed-up (annotating) | CPU s, all processes | merged == first run | peak "
        "anon. MiB, all processes | load before | load after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in record["runs"]:
        lines.append(
            f"| {run['processes']} | {run['torch_threads_per_process']} | {run['wall_s']} | "
            f"{run['docs_per_s']} | {run['annotate_s']} | {run['annotate_docs_per_s']} | "
            f"{run['speedup_annotating']} | {run['cpu_s_all_processes']} | "
            f"{run['identical_to_first']} | "
            f"{run['peak_anon_mib_all_processes']} | "
            f"{run['loadavg_before']} | {run['loadavg_after']} |")
    lines += ["", f"Command: `python -m eval.scaling {record['args']}`", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shard-size", type=int, default=10)
    parser.add_argument("--model", default=None, help="model directory (default: embedded)")
    parser.add_argument("--out", default="eval/results/scaling")
    args = parser.parse_args(argv)
    import torch

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = bc5cdr_subset(args.docs, root / "corpus.txt")
        first = None
        for i, n in enumerate(args.processes):
            run = run_once(corpus, root / f"run{i}", n, args.shard_size, args.model)
            data = merged_bytes(root / f"run{i}", root / f"merged{i}.xml")
            first = data if first is None else first
            run["identical_to_first"] = data == first
            run["docs_per_s"] = round(args.docs / run["wall_s"], 2)
            run["annotate_docs_per_s"] = round(args.docs / run["annotate_s"], 2)
            runs.append(run)
            print(json.dumps(run), file=sys.stderr)
    base = runs[0]["annotate_docs_per_s"]
    for run in runs:
        run["speedup_annotating"] = round(run["annotate_docs_per_s"] / base, 2)
    record = {"docs": args.docs, "shard_size": args.shard_size,
              "model": args.model or "embedded default model", "cores": available_cores(),
              "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
              "torch": torch.__version__, "runs": runs,
              "args": " ".join(argv if argv is not None else sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scaling.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "scaling.md").write_text(markdown(record))
    print(markdown(record))
    return record


if __name__ == "__main__":
    main()
