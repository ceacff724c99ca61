"""How long the linker takes to start, and how much memory it holds: the figures issue 26 is
about.

    python -m eval.startup [--repeats 3] [--out eval/results/startup]
                           [--tree before=/path/to/old/checkout --tree after=.]
                           [--cases load_warm ...]

Each case is a whole Python process, as a user starts it, timed from launch to exit with its
peak resident memory (the child's ``ru_maxrss``) and the CPU seconds it used (user + system:
on a machine other jobs share, wall time grows with their load and CPU time much less):

* ``load_warm`` — ``Linker.load()`` with the default model and KB, cache warm;
* ``load_cold`` — the same on an empty cache (the shipped packed index: nothing is encoded at
  load, names are encoded when a search first shortlists them);
* ``annotate_sentence`` — ``echo SENTENCE | linker annotate - -o - --lines``, cache warm;
* ``spacy_first_call`` — ``spacy.blank("en")`` + ``nlp.add_pipe("e2e_linker")`` + the first
  ``nlp(SENTENCE)``, cache warm.

The warm cases run ``--repeats`` times (best and median reported, interleaved case by case);
the cold one once per repeat with a fresh empty cache. ``--tree LABEL=DIR`` (repeatable) runs
every case in each checkout (the child's working directory, which Python imports
``e2e_linker`` from), interleaved tree by tree within each case, so a before/after comparison
sees the same load on the machine; without it, the current directory is the one tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from e2e_linker.kb_search.cache import default_cache_dir
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "startup"
SENTENCE = "Lidocaine-induced cardiac asystole in a patient with hypertension."
CASES = {
    "load_warm": [sys.executable, "-c", "from e2e_linker import Linker; Linker.load()"],
    "load_cold": [sys.executable, "-c", "from e2e_linker import Linker; Linker.load()"],
    "annotate_sentence": [sys.executable, "-m", "e2e_linker", "annotate", "-", "-o", "-",
                          "--lines"],
    "spacy_first_call": [sys.executable, "-c",
                         "import spacy; nlp = spacy.blank('en'); nlp.add_pipe('e2e_linker'); "
                         f"nlp({SENTENCE!r})"],
}


def run_case(name: str, env: dict[str, str], tree: str = ".") -> tuple[float, float, float]:
    """One run of a case in checkout ``tree`` (see the module docstring), with its own empty
    cache when cold."""
    if name != "load_cold":
        return timed_child(CASES[name], env, SENTENCE + "\n" if name == "annotate_sentence"
                           else None, tree)
    with tempfile.TemporaryDirectory(prefix="startup-cold-") as cache:
        return timed_child(CASES[name], {**env, "E2E_LINKER_CACHE": cache}, None, tree)


def timed_child(argv: list[str], env: dict[str, str], stdin: str | None = None,
                cwd: str = ".") -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MB, CPU seconds) of one child process, from ``os.wait4``'s
    usage."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if stdin:
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                         f"{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def summary(runs: list[tuple[float, float, float]]) -> dict:
    """Best and median wall time, best peak RSS, best and median CPU time, every run."""
    return {"wall_s_best": round(min(w for w, _, _ in runs), 2),
            "wall_s_median": round(statistics.median(w for w, _, _ in runs), 2),
            "peak_rss_mb_best": round(min(m for _, m, _ in runs)),
            "cpu_s_best": round(min(c for _, _, c in runs), 2),
            "cpu_s_median": round(statistics.median(c for _, _, c in runs), 2),
            "runs": [[round(w, 2), round(m), round(c, 2)] for w, m, c in runs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                        help="a checkout to measure (repeatable); default: this directory")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES),
                        help="the cases to run (default: all; load_cold compiles the KB in "
                             "a fresh cache every repeat, minutes on a small machine)")
    args = parser.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree) or {"this tree": "."}
    env = {**os.environ, "E2E_LINKER_CACHE": str(default_cache_dir())}
    for tree in trees.values():  # warm the cache and the page cache, not timed
        run_case("annotate_sentence", env, tree)
    cases = [name for name in CASES if name in args.cases]
    runs: dict[str, dict[str, list]] = {label: {name: [] for name in cases} for label in trees}
    for _ in range(args.repeats):
        for name in cases:
            for label, tree in trees.items():
                runs[label][name].append(run_case(name, env, tree))
                print(label, name, runs[label][name][-1], file=sys.stderr, flush=True)
    rows = {label: {name: summary(r) for name, r in by_case.items()}
            for label, by_case in runs.items()}
    result = {"command": command_line("startup", argv), "machine": machine(),
              "load_average_after": os.getloadavg(), "cache": env["E2E_LINKER_CACHE"],
              "sentence": SENTENCE, "trees": {label: str(Path(tree).resolve())
                                              for label, tree in trees.items()},
              "cases": rows}
    lines = ["| tree | case | wall s, best | wall s, median | CPU s, best | CPU s, median | "
             "peak RSS MB |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {label} | {name} | {row['wall_s_best']} | {row['wall_s_median']} | "
              f"{row['cpu_s_best']} | {row['cpu_s_median']} | {row['peak_rss_mb_best']} |"
              for name in cases for label, by_case in rows.items()
              for row in [by_case[name]]]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
