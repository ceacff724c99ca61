"""Peak memory of `linker annotate` for 1k vs 10k documents: bounded by the batch, not the corpus.

    python -m eval.memory [--sizes 1000 10000] [--model DIR | --tiny] [--kb SPEC]
                          [--output file|directory] [--out eval/results/memory]

The corpus is BC5CDR test (PubTator) repeated with fresh document IDs up to each size. Each
size runs `linker annotate` in its own child process, and the child's peak resident set size
comes from ``os.wait4`` (the kernel's ru_maxrss for that process alone). Issue 6 asks for the
two peaks to differ by less than 10 %.

``--tiny`` uses a randomly initialised 1-layer model built from the test helpers (it needs a
checkout with tests/): the run then takes minutes instead of hours on a CPU and the memory that
could grow with the corpus (reader, writer, batching, output) is a larger share of the total.
Without it the embedded default model and its KB are used (the KB vectors must be cached).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from data_tools.documents import Document


def repeated_corpus(source: list[Document], size: int, path: Path) -> Path:
    """``size`` documents: ``source`` over and over, the k-th copy's IDs suffixed ``-k``."""
    from data_tools.formats import write_documents

    def docs():
        for n in range(size):
            doc = source[n % len(source)]
            copy = n // len(source)
            yield Document(f"{doc.id}-{copy}" if copy else doc.id, doc.passages, doc.infons,
                           doc.relations)

    write_documents(docs(), path)
    return path


class _Sampler(threading.Thread):
    """Peak anonymous and file-backed resident memory of a process, from /proc (Linux).

    Why both: ru_maxrss counts file-backed pages too, and the KB vectors are memory-mapped
    from the cache, so their pages become resident as searches touch them (reclaimable page
    cache, bounded by the file size). Anonymous memory is what the run itself allocates.
    """

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.status = Path(f"/proc/{pid}/status")
        self.interval = interval
        self.peaks = {"RssAnon": 0, "RssFile": 0}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.interval):
            try:
                lines = self.status.read_text().splitlines()
            except OSError:
                return
            for line in lines:
                key, _, value = line.partition(":")
                if key in self.peaks:
                    self.peaks[key] = max(self.peaks[key], int(value.split()[0]))


def measure(argv: list[str], env: dict[str, str]) -> dict:
    """Run a command; its wall time and the peak RSS of that process (MiB): in all (the
    kernel's ru_maxrss), and sampled anonymous / file-backed peaks."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = _Sampler(proc.pid)
    sampler.start()
    stderr_chunks = []
    # read stderr as it comes (progress bars), so the pipe never fills and blocks the child
    for line in iter(proc.stderr.readline, b""):
        stderr_chunks.append(line)
        stderr_chunks = stderr_chunks[-50:]
    sampler.done.set()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = b"".join(stderr_chunks).decode(errors="replace")[-2000:]
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{tail}")
    return {"seconds": round(time.monotonic() - started, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
            "peak_anon_mib": round(sampler.peaks["RssAnon"] / 1024, 1),
            "peak_file_mib": round(sampler.peaks["RssFile"] / 1024, 1)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--model", default=None, help="model directory (default: embedded)")
    group.add_argument("--tiny", action="store_true", help="random 1-layer model (see above)")
    parser.add_argument("--kb", default=None)
    parser.add_argument("--output", choices=["file", "directory"], default="file")
    parser.add_argument("--out", default="eval/results/memory")
    args = parser.parse_args(argv)

    from data_tools.formats import read_documents
    from data_tools.registry import data_dir

    source = list(read_documents(data_dir() / "bc5cdr" / "CDR_TestSet.PubTator.txt"))
    env = {**os.environ, "TQDM_MININTERVAL": "5"}
    results: dict = {"command": " ".join(["python -m eval.memory", *(argv or sys.argv[1:])]),
                     "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                                f"{platform.platform()}",
                     "model": "tiny random" if args.tiny else (args.model or "embedded default"),
                     "output": args.output, "runs": []}
    with tempfile.TemporaryDirectory(prefix="e2e_memory_") as tmp:
        work = Path(tmp)
        model = args.model
        if args.tiny:
            from tests.helpers.tiny_linker import tiny_linker_dir

            model = str(tiny_linker_dir(work / "tiny", threshold=0.6)[0])
            env["E2E_LINKER_CACHE"] = str(work / "cache")
        for size in args.sizes:
            corpus = repeated_corpus(source, size, work / f"corpus_{size}.txt")
            target = work / (f"out_{size}" if args.output == "directory" else f"out_{size}.xml")
            command = [sys.executable, "-m", "e2e_linker", "annotate", str(corpus), "-o",
                       str(target)]
            if model:
                command += ["--model", model]
            if args.kb:
                command += ["--kb", args.kb]
            run = {"documents": size, **measure(command, env)}
            results["runs"].append(run)
            print(json.dumps(run), flush=True)
    peaks = [r["peak_rss_mib"] for r in results["runs"]]
    anon = [r["peak_anon_mib"] for r in results["runs"]]
    results["peak_ratio_max_over_min"] = round(max(peaks) / min(peaks), 4)
    results["anon_ratio_max_over_min"] = round(max(anon) / min(anon), 4) if min(anon) else None
    results["within_10_percent"] = max(peaks) / min(peaks) < 1.10
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "tiny" if args.tiny else "default"
    (out / f"{name}_{args.output}.json").write_text(json.dumps(results, indent=2) + "\n")
    rows = "\n".join(f"| {r['documents']} | {r['peak_rss_mib']} | {r['peak_anon_mib']} | "
                     f"{r['peak_file_mib']} | {r['seconds']} |" for r in results["runs"])
    (out / f"{name}_{args.output}.md").write_text(
        f"`{results['command']}` ({results['model']} model, {args.output} output; "
        f"{results['machine']})\n\n| documents | peak RSS (MiB) | anonymous | file-backed | "
        f"seconds |\n|---|---|---|---|---|\n{rows}\n\npeak ratio max/min: "
        f"{results['peak_ratio_max_over_min']} (anonymous: {results['anon_ratio_max_over_min']})\n")
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
