"""How the per-document text scans grow with a document's length: the figure that shows a scan
is linear, on texts no abstract reaches (a hostile client's, or a whole book sent as one
document).

    python -m eval.hostile_scan [--sizes 1000 2000 5000] [--out eval/results/bench/hostile_scan]

Each size is a text of that many ``word heat shock factor (HSF)`` definitions; the abbreviation
scan's definition search (:func:`~e2e_linker.lexical.abbreviations.find_abbreviations`, what
:meth:`~e2e_linker.lexical.abbreviations.DocumentAbbreviations.scan` runs once per document
for annotate and normalize) is timed on it, best of three. A linear scan's seconds per
thousand definitions stay flat as the size grows; a quadratic one's grow with it.
"""

from __future__ import annotations

import argparse
import time

from e2e_linker.lexical.abbreviations import find_abbreviations
from eval.reporting import command_line, machine, write_results

RESULTS = "eval/results/bench/hostile_scan"


def hostile_text(definitions: int) -> str:
    """A text of ``definitions`` defined short forms, each after a word of its own."""
    return " ".join(f"word{i} heat shock factor (HSF)" for i in range(definitions))


def time_scan(text: str, repeats: int = 3) -> tuple[float, int]:
    """Best seconds of ``repeats`` scans of ``text``, and how many definitions the scan found
    (every one, or the timing measured a scan that gave up)."""
    best = float("inf")
    found = 0
    for _ in range(repeats):
        start = time.perf_counter()
        found = len(find_abbreviations(text))
        best = min(best, time.perf_counter() - start)
    return best, found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for size in args.sizes:
        text = hostile_text(size)
        seconds, found = time_scan(text)
        rows.append({"definitions": size, "characters": len(text), "found": found,
                     "seconds": round(seconds, 4),
                     "seconds_per_1000": round(1000 * seconds / size, 4)})
    table = ["| definitions | characters | found | scan s | s per 1,000 |", "|---|---|---|---|---|"]
    table += [f"| {r['definitions']:,} | {r['characters']:,} | {r['found']:,} | {r['seconds']} "
              f"| {r['seconds_per_1000']} |" for r in rows]
    write_results(args.out, {"command": command_line("hostile_scan", argv),
                             "machine": machine(), "rows": rows},
                  f"Abbreviation scan on hostile texts ({machine()})\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
