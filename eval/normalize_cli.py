"""The default normalizer through the command line, as a user (and the acceptance check) runs it.

    python -m eval.normalize_cli [--model DIR] [--search MODE] --out eval/results/normalize_cli

Runs ``linker normalize`` on gold mention spans and scores the output with
``linker score --accuracy --by-type --kb KB`` (alternative IDs mapped to the KB's primary IDs,
as the table harness does; the verbatim comparison is reported beside it):

* BC5CDR test (PubTator gold), the model's default KB, search mode and D pool (for the shipped
  model: BC5CDR train + dev mentions) — Chemical and Disease Acc@1;
* NCBI dev with ``--train-mentions ncbi_disease:train`` (the dev split must not be its own D
  pool) — all-mention Acc@1.

The KB-coverage ceiling (share of scored mentions whose gold concepts are all in the KB) is
reported beside each figure. Both commands run as subprocesses; their wall time is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from data_tools.registry import data_dir


def _linker(*args: str) -> str:
    """Run ``linker`` (this interpreter's package) and return stdout; fail loudly."""
    cmd = [sys.executable, "-m", "e2e_linker", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def ceiling(gold_path: Path, kb_spec: str) -> dict:
    """Share of scored gold mentions (by type) whose concept IDs are all in the KB.

    The KB is the one ``linker normalize`` searches (the spec alone, no mined names), and
    mentions without IDs (``-1``) are left out as the accuracy leaves them out; so for BC5CDR
    the figures differ from the annotate KB's reach (docs/results.md at 94e8e08, "KB ceiling"),
    which counts every mention and adds the names mined from train/dev."""
    from data_tools.formats import read_documents
    from data_tools.registry import load_kb
    from e2e_linker.normalizer.pools import TYPE_ALIASES

    kb = load_kb(kb_spec)
    counts: dict[str, list[int]] = {}
    for doc in read_documents(gold_path):
        for ann in doc.annotations:
            ids = [i for i in ann.concept_ids if i]
            if not ids:
                continue
            key = TYPE_ALIASES.get(ann.type, ann.type)
            hit = all(kb.resolve(i.removeprefix("MESH:")) in kb.concepts for i in ids)
            pair = counts.setdefault(key, [0, 0])
            pair[0] += hit
            pair[1] += 1
    return {t: round(h / n, 4) for t, (h, n) in sorted(counts.items())}


def run_case(name: str, gold: Path, extra: list[str], work: Path, model: str | None,
             mode: str | None, kb: str) -> dict:
    pred = work / f"{name}.pubtator"
    args = ["normalize", str(gold), "-o", str(pred), *extra]
    if model:
        args += ["--model", model]
    if mode:
        args += ["--search", mode]
    start = time.perf_counter()
    _linker(*args)
    seconds = time.perf_counter() - start
    score = ["score", "--accuracy", "--by-type", "--json", str(gold), str(pred)]
    # IDs mapped to the KB's primary IDs (what the table harness does), and as written
    report = json.loads(_linker(*score, "--kb", kb))
    as_written = json.loads(_linker(*score))
    return {"command": "linker " + " ".join(a if a != str(pred) else "OUT" for a in args),
            "score_command": f"linker score --accuracy --by-type --kb {kb} GOLD OUT",
            "seconds": round(seconds, 1), "score": report, "score_as_written": as_written}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="default: the embedded normalizer")
    parser.add_argument("--search", default=None, help="default: the model's mode")
    parser.add_argument("--out", default="eval/results/normalize_cli")
    args = parser.parse_args(argv)

    from e2e_linker.normalizer.normalizer_dir import load_model

    _, settings = load_model(args.model)
    root = data_dir()
    bc5cdr_test = root / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    ncbi_dev = root / "ncbi_disease" / "NCBIdevelopset_corpus.txt"
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                     "model": args.model or "embedded default",
                     "search": args.search or settings.search, "kb": settings.kb}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        results["bc5cdr_test"] = run_case("bc5cdr_test", bc5cdr_test, [], work, args.model,
                                          args.search, settings.kb)
        results["bc5cdr_test"]["kb_ceiling"] = ceiling(bc5cdr_test, settings.kb)
        results["ncbi_dev"] = run_case("ncbi_dev", ncbi_dev,
                                       ["--train-mentions", "ncbi_disease:train"], work,
                                       args.model, args.search, settings.kb)
        results["ncbi_dev"]["kb_ceiling"] = ceiling(ncbi_dev, settings.kb)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "results.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return results


def _acc(report: dict, type_: str | None) -> tuple[float | None, int | None]:
    if type_ is None:
        return report.get("accuracy"), report.get("n")
    part = report.get("by_type", {}).get(type_, {})
    return part.get("accuracy"), part.get("n")


def markdown(results: dict) -> str:
    lines = ["# Default normalizer through `linker normalize` (gold spans, Acc@1)", "",
             f"Command: `python -m eval.normalize_cli`; model: {results['model']}; search "
             f"{results['search']}; KB {results['kb']}; machine: {results['machine']}.", "",
             "Acc@1 compares concept IDs after mapping alternative IDs to the KB's primary IDs "
             "(`linker score --kb`, as the table harness does); 'as written' compares them "
             "verbatim (NCBI cites OMIM IDs that the KB files under MeSH IDs).", "",
             "| data | type | Acc@1 | as written | n | KB ceiling | wall s |",
             "|---|---|---|---|---|---|---|"]
    for key, label, types in (("bc5cdr_test", "BC5CDR test", ["Chemical", "Disease"]),
                              ("ncbi_dev", "NCBI dev (D = NCBI train)", [None])):
        case = results[key]
        for type_ in types:
            acc, n = _acc(case["score"], type_)
            verbatim, _ = _acc(case["score_as_written"], type_)
            ceil = case["kb_ceiling"].get(type_ or "Disease")
            cells = ["" if a is None else f"{a:.4f}" for a in (acc, verbatim)]
            lines.append(f"| {label} | {type_ or 'all'} | {cells[0]} | {cells[1]} | {n} | "
                         f"{ceil} | {case['seconds']} |")
    lines += ["", "Commands:", ""] + [f"- `{results[k][c]}`" for k in ("bc5cdr_test", "ncbi_dev")
                                      for c in ("command", "score_command")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
