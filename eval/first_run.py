"""How long does a new user wait for a first output, with an empty KB cache?

    python -m eval.first_run [--model DIR]                 # the two first-run jobs
    python -m eval.first_run --accuracy --full-cache DIR --split dev|test
                                          # + BC5CDR dev/test: packed vs full-encoding path

Why: the first ``linker annotate`` used to encode all 744k KB names (~40 min on a 2-core CPU)
before writing anything, and ``linker normalize`` encoded them again under its own encoder. With
the packed indexes shipped in the default models (``linker kb pack``), a first run encodes only
the names its mentions shortlist. Each job runs exactly as a user types it, in a fresh
``E2E_LINKER_CACHE``:

* ``readme_main_job`` — the README's main job: ``linker annotate examples/bc5cdr_sample.bioc.xml
  -o out.bioc.xml --replace`` then ``linker score`` against the example's gold;
* ``normalize_20_docs`` — ``linker normalize`` on the first 20 BC5CDR test documents (gold
  spans), then ``linker score --accuracy``.

``--accuracy`` also runs BC5CDR ``--split`` (dev to decide, test to report) through both
commands twice on ``--full-cache`` (a cache that holds every vector, as ``linker kb build`` and
a full ``linker normalize --index exact`` leave it): once through the packed shortlist
(``--index packed``) and once through the full-encoding path, and scores both. The packed run
re-ranks the same shortlists a fresh cache would (the shortlisted names' vectors are the same
encoder's, read instead of encoded), so it measures the first-run path's accuracy without
re-encoding hundreds of thousands of names.
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
from pathlib import Path

from data_tools.registry import data_dir
from eval.linker_runs import REPO, linker, scores
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "first_run"
EXAMPLE = REPO / "examples" / "bc5cdr_sample.bioc.xml"
BOUND_S = 180.0


def first_pubtator_docs(source: Path, target: Path, n: int) -> Path:
    """The first ``n`` documents of a PubTator file (documents end at a blank line)."""
    blocks = re.split(r"\n\s*\n", source.read_text(encoding="utf-8").strip())
    target.write_text("\n\n".join(blocks[:n]) + "\n\n", encoding="utf-8")
    return target


def peak_child_mb() -> float:
    """Largest resident set of any child process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def cache_mb(cache: Path) -> float:
    return sum(p.stat().st_blocks * 512 for p in cache.rglob("*") if p.is_file()) / 2**20


def readme_main_job(tmp: Path, model: str | None = None) -> dict:
    """The README's main job (with ``--model`` when given: another model's first run)."""
    cache = tmp / "cache-annotate"
    out = tmp / "out.bioc.xml"
    chosen = ["--model", model] if model else []
    annotate_s, _, err = linker(["annotate", str(EXAMPLE), "-o", str(out), "--replace",
                                 *chosen], cache)
    score_s, report, _ = linker(["score", str(EXAMPLE), str(out), "--json"], cache)
    return {"command": "linker annotate examples/bc5cdr_sample.bioc.xml -o out.bioc.xml "
                       f"--replace{' --model ' + model if model else ''} && linker score "
                       "examples/bc5cdr_sample.bioc.xml out.bioc.xml",
            "wall_s": round(annotate_s + score_s, 1), "annotate_s": round(annotate_s, 1),
            "packed_index_used": "packed index shipped with the model" in err,
            "strict_f1": scores(report).get("f1"), "cache_mb_on_disk": round(cache_mb(cache), 1)}


def normalize_20_docs(tmp: Path) -> dict:
    cache = tmp / "cache-normalize"
    source = first_pubtator_docs(data_dir() / "bc5cdr" / "CDR_TestSet.PubTator.txt",
                                 tmp / "test20.pubtator", 20)
    out = tmp / "test20.out.pubtator"
    seconds, _, err = linker(["normalize", str(source), "-o", str(out)], cache)
    _, report, _ = linker(["score", str(source), str(out), "--accuracy", "--json"], cache)
    return {"command": "linker normalize test20.pubtator -o out.pubtator (first 20 BC5CDR "
                       "test documents)", "wall_s": round(seconds, 1),
            "packed_index_used": "packed index shipped with the normalizer" in err,
            "accuracy": scores(report).get("accuracy", scores(report).get("f1")),
            "cache_mb_on_disk": round(cache_mb(cache), 1)}


def accuracy_rows(full_cache: Path, split: str, tmp: Path) -> dict:
    """BC5CDR ``split`` through both paths on a cache that holds every vector: the packed
    shortlist (``--index packed``) and the full-encoding path (annotate's default HNSW over the
    full matrix, normalize's exact search)."""
    stem = {"dev": "CDR_DevelopmentSet", "test": "CDR_TestSet"}[split]
    bioc = data_dir() / "bc5cdr" / f"{stem}.BioC.xml"
    pubtator = data_dir() / "bc5cdr" / f"{stem}.PubTator.txt"
    rows: dict = {}
    for path_name, annotate_flags, normalize_flags in (
            ("packed", ["--index", "packed"], ["--index", "packed"]),
            ("full", [], ["--index", "exact"])):
        out = tmp / f"{split}-{path_name}.bioc.xml"
        seconds, _, err = linker(["annotate", str(bioc), "-o", str(out), "--replace",
                                  *annotate_flags], full_cache)
        strict = scores(linker(["score", str(bioc), str(out), "--json", "--by-type"],
                               full_cache)[1])
        partial = scores(linker(["score", str(bioc), str(out), "--json", "--partial"],
                                full_cache)[1])
        norm_out = tmp / f"{split}-{path_name}.pubtator"
        norm_s, _, norm_err = linker(["normalize", str(pubtator), "-o", str(norm_out),
                                      *normalize_flags], full_cache)
        accuracy = scores(linker(["score", str(pubtator), str(norm_out), "--accuracy",
                                  "--json", "--by-type"], full_cache)[1])
        rows[path_name] = {
            "annotate_s": round(seconds, 1), "strict": strict, "partial_f1": partial.get("f1"),
            "packed_used": "packed index shipped with the model" in err,
            "normalize_s": round(norm_s, 1), "normalize_accuracy": accuracy,
            "normalize_packed_used": "packed index shipped with the normalizer" in norm_err}
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--accuracy", action="store_true",
                        help="also BC5CDR test on the packed and the full-encoding path")
    parser.add_argument("--full-cache", default=None,
                        help="with --accuracy: a cache holding every KB vector of both models")
    parser.add_argument("--split", choices=["dev", "test"], default="dev")
    parser.add_argument("--skip-first-run", action="store_true",
                        help="only the --accuracy rows")
    parser.add_argument("--model", default=None,
                        help="the main job with this model directory (default: the shipped "
                             "one); the normalize job is left out")
    args = parser.parse_args(argv)
    if args.accuracy and not args.full_cache:
        parser.error("--accuracy needs --full-cache")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        jobs = {} if args.skip_first_run else {"readme_main_job": readme_main_job(tmp,
                                                                                  args.model)}
        if not args.skip_first_run and not args.model:
            jobs["normalize_20_docs"] = normalize_20_docs(tmp)
        accuracy = accuracy_rows(Path(args.full_cache), args.split, tmp) \
            if args.accuracy else None
    result = {"command": command_line("first_run", argv),
              "machine": machine(),
              "bound_s": BOUND_S, "jobs": jobs, "peak_child_rss_mb": round(peak_child_mb()),
              "split": args.split if accuracy else None, "accuracy": accuracy}
    table = ["| first run, empty cache | wall s | ≤ 180 s | packed index used | result |",
             "|---|---|---|---|---|"]
    for name, job in jobs.items():
        quality = (f"strict F1 {job['strict_f1']:.4f}" if "strict_f1" in job
                   else f"Acc@1 {job['accuracy']:.4f}")
        table.append(f"| {name}: `{job['command']}` | {job['wall_s']} | "
                     f"{'yes' if job['wall_s'] <= BOUND_S else '**no**'} | "
                     f"{'yes' if job['packed_index_used'] else 'no'} | {quality} |")
    if accuracy:
        table += ["", f"| BC5CDR {args.split} | annotate strict F1 | partial F1 | Chemical | Disease | "
                      "normalize Acc@1 | annotate s | normalize s |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, row in accuracy.items():
            by_type = row["strict"].get("by_type", {})
            table.append(
                f"| {name} | {row['strict']['f1']:.4f} | {row['partial_f1']:.4f} | "
                f"{by_type.get('Chemical', {}).get('f1', float('nan')):.4f} | "
                f"{by_type.get('Disease', {}).get('f1', float('nan')):.4f} | "
                f"{row['normalize_accuracy'].get('accuracy', row['normalize_accuracy'].get('f1')):.4f} | "
                f"{row['annotate_s']} | {row['normalize_s']} |")
    write_results(args.out, result, "\n".join(table) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
