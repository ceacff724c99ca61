"""How long the linker takes to start, and how much memory it holds: the figures issue 26 is
about.

    python -m eval.startup [--repeats 3] [--out eval/results/startup]

Each case is a whole Python process, as a user starts it, timed from launch to exit with its
peak resident memory (the child's ``ru_maxrss``):

* ``load_warm`` — ``Linker.load()`` with the default model and KB, cache warm;
* ``load_cold`` — the same on an empty cache (the shipped packed index: nothing is encoded at
  load, names are encoded when a search first shortlists them);
* ``annotate_sentence`` — ``echo SENTENCE | linker annotate - -o - --lines``, cache warm;
* ``spacy_first_call`` — ``spacy.blank("en")`` + ``nlp.add_pipe("e2e_linker")`` + the first
  ``nlp(SENTENCE)``, cache warm.

The warm cases run ``--repeats`` times (best and median reported, interleaved case by case);
the cold one once per repeat with a fresh empty cache. A before/after comparison runs this
module in each tree, on one machine, one after the other.
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


def run_case(name: str, env: dict[str, str]) -> tuple[float, float]:
    """One run of a case (see the module docstring), with its own empty cache when cold."""
    if name != "load_cold":
        return timed_child(CASES[name], env, SENTENCE + "\n" if name == "annotate_sentence"
                           else None)
    with tempfile.TemporaryDirectory(prefix="startup-cold-") as cache:
        return timed_child(CASES[name], {**env, "E2E_LINKER_CACHE": cache})


def timed_child(argv: list[str], env: dict[str, str], stdin: str | None = None
                ) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child process, from ``os.wait4``'s usage."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
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
    return wall, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    env = {**os.environ, "E2E_LINKER_CACHE": str(default_cache_dir())}
    run_case("annotate_sentence", env)  # warm the cache and the page cache, not timed
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in CASES}
    for _ in range(args.repeats):
        for name in CASES:
            runs[name].append(run_case(name, env))
            print(name, runs[name][-1], file=sys.stderr, flush=True)
    rows = {name: {"wall_s_best": round(min(w for w, _ in r), 2),
                   "wall_s_median": round(statistics.median(w for w, _ in r), 2),
                   "peak_rss_mb_best": round(min(m for _, m in r)),
                   "runs": [[round(w, 2), round(m)] for w, m in r]}
            for name, r in runs.items()}
    result = {"command": command_line("startup", argv), "machine": machine(),
              "load_average_after": os.getloadavg(), "cache": env["E2E_LINKER_CACHE"],
              "sentence": SENTENCE, "cases": rows}
    lines = ["| case | wall s, best | wall s, median | peak RSS MB |", "|---|---|---|---|"]
    lines += [f"| {name} | {row['wall_s_best']} | {row['wall_s_median']} | "
              f"{row['peak_rss_mb_best']} |" for name, row in rows.items()]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
