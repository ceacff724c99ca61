"""Do ``linker annotate`` and ``linker normalize`` still write the same bytes as a reference?

    python -m eval.output_identity                      # compare with the recorded reference
    python -m eval.output_identity --record-from DIR    # record DIR's outputs as the reference
    python -m eval.output_identity --compare BEFORE AFTER --out DIR   # two trees' outputs

Why: a refactoring that moves code between modules must not change what users get. The two
commands run on BC5CDR dev exactly as a user runs them (default models, default options):

* ``linker annotate CDR_DevelopmentSet.BioC.xml -o annotate_dev.bioc.xml --replace``
* ``linker normalize CDR_DevelopmentSet.PubTator.txt -o normalize_dev.pubtator``

and the sha256 of each output is compared with ``reference.json`` in the results folder, which
records the commit whose code wrote the reference files. Set ``E2E_LINKER_CACHE`` to a warm
cache, or the first run encodes the KB (see ``linker kb``/the README).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from data_tools.registry import data_dir
from eval.reporting import command_line, write_results

RESULTS = Path(__file__).parent / "results" / "output_identity"
#: output file name → the ``linker`` arguments that write it (input relative to the data dir)
CASES: dict[str, list[str]] = {
    "annotate_dev.bioc.xml": ["annotate", "bc5cdr/CDR_DevelopmentSet.BioC.xml", "--replace"],
    "normalize_dev.pubtator": ["normalize", "bc5cdr/CDR_DevelopmentSet.PubTator.txt"],
}


def sha256(path: Path) -> str:
    """Hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_case(name: str, out_dir: Path) -> tuple[Path, float]:
    """Run one case's ``linker`` command into ``out_dir``; returns the output and its wall time."""
    command, source, *rest = CASES[name]
    target = out_dir / name
    argv = [sys.executable, "-m", "e2e_linker", command, str(data_dir() / source), "-o",
            str(target), *rest]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return target, time.perf_counter() - start


def annotation_rows(path: Path) -> dict[tuple[str, int, int], tuple]:
    """Each annotation of an output by (document, start, end): text, type, IDs, link method
    and long form (what a refactoring could change)."""
    from data_tools.formats import read_documents

    return {(doc.id, a.start, a.end): (a.text, a.type, tuple(a.concept_ids),
                                       a.infons.get("link_method"), a.infons.get("long_form"))
            for doc in read_documents(path) for a in doc.annotations}


def compare_folders(before: Path, after: Path, out: Path, argv: list[str] | None) -> int:
    """``--compare``: the two folders' outputs, byte for byte and annotation by annotation,
    with strict / partial / mention scores of each on BC5CDR dev (``linker score``'s scorer)."""
    from data_tools.formats import read_documents
    from e2e_linker.scoring import score

    gold_files = {"annotate_dev.bioc.xml": "bc5cdr/CDR_DevelopmentSet.BioC.xml",
                  "normalize_dev.pubtator": "bc5cdr/CDR_DevelopmentSet.PubTator.txt"}
    cases = {}
    for name in CASES:
        a, b = before / name, after / name
        row: dict = {"before_sha256": sha256(a), "after_sha256": sha256(b)}
        row["identical"] = row["before_sha256"] == row["after_sha256"]
        rows_a, rows_b = annotation_rows(a), annotation_rows(b)
        row["only_before"] = [[*k, *rows_a[k]] for k in sorted(set(rows_a) - set(rows_b))]
        row["only_after"] = [[*k, *rows_b[k]] for k in sorted(set(rows_b) - set(rows_a))]
        row["changed"] = [[*k, list(rows_a[k]), list(rows_b[k])]
                          for k in sorted(set(rows_a) & set(rows_b)) if rows_a[k] != rows_b[k]]
        gold = list(read_documents(data_dir() / gold_files[name]))
        for side, path in (("before", a), ("after", b)):
            pred = list(read_documents(path))
            row[f"{side}_scores"] = {mode: round(score(gold, pred, mode).f1, 5)
                                     for mode in ("strict", "partial", "mentions")}
        cases[name] = row
    result = {"command": command_line("output_identity", argv), "machine": platform.machine(),
              "before": str(before), "after": str(after), "cases": cases}
    lines = ["| output | identical | annotations only before / only after / changed | "
             "strict F1 before → after |", "|---|---|---|---|"]
    for name, row in cases.items():
        lines.append(f"| `{name}` | {'yes' if row['identical'] else 'no'} | "
                     f"{len(row['only_before'])} / {len(row['only_after'])} / "
                     f"{len(row['changed'])} | {row['before_scores']['strict']:.5f} → "
                     f"{row['after_scores']['strict']:.5f} |")
    write_results(out, result, "\n".join(lines) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--record-from", default=None,
                        help="a folder holding the reference outputs (the CASES file names)")
    parser.add_argument("--commit", default=None, help="with --record-from: the code's commit")
    parser.add_argument("--keep", default=None, help="also copy this run's outputs here")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE_DIR", "AFTER_DIR"),
                        default=None,
                        help="no run: compare two folders of the CASES outputs (e.g. written by "
                             "two trees with one shared cache): bytes, every annotation that "
                             "differs, and each side's scores on BC5CDR dev")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.compare:
        return compare_folders(Path(args.compare[0]), Path(args.compare[1]), out, argv)
    reference_path = out / "reference.json"
    if args.record_from:
        folder = Path(args.record_from)
        reference = {"commit": args.commit, "cases": {
            name: {"command": "linker " + " ".join(CASES[name][:1] + [CASES[name][1], "-o", name]
                                                     + CASES[name][2:]),
                   "sha256": sha256(folder / name), "bytes": (folder / name).stat().st_size}
            for name in CASES}}
        out.mkdir(parents=True, exist_ok=True)
        reference_path.write_text(json.dumps(reference, indent=2) + "\n")
        print(f"recorded {reference_path}")
        return 0
    reference = json.loads(reference_path.read_text())
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            path, seconds = run_case(name, Path(tmp))
            digest = sha256(path)
            rows[name] = {"sha256": digest, "reference": reference["cases"][name]["sha256"],
                          "identical": digest == reference["cases"][name]["sha256"],
                          "seconds": round(seconds, 1)}
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                (Path(args.keep) / name).write_bytes(path.read_bytes())
    result = {"command": command_line("output_identity", argv),
              "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
              "reference_commit": reference.get("commit"), "cases": rows,
              "all_identical": all(r["identical"] for r in rows.values())}
    table = ["| output | identical to reference | sha256 (first 16) | wall s |", "|---|---|---|---|"]
    table += [f"| `{name}` | {'yes' if r['identical'] else '**no**'} | {r['sha256'][:16]} | "
              f"{r['seconds']} |" for name, r in rows.items()]
    write_results(out, result, "\n".join(table) + "\n")
    return 0 if result["all_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
