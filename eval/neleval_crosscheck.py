"""`linker score` vs neleval itself on BC5CDR test gold vs the official DNorm + tmChem output.

    python -m eval.neleval_crosscheck [--out eval/results/neleval_crosscheck]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from data_tools.formats import read_documents
from data_tools.registry import data_dir
from e2e_linker.scoring import merge_predictions, score
from eval.neleval_shim import MEASURES, neleval_scores

MODES = ("strict", "partial", "mentions")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="eval/results/neleval_crosscheck")
    args = parser.parse_args(argv)
    root = data_dir() / "bc5cdr"
    gold = list(read_documents(root / "CDR_TestSet.PubTator.txt"))
    pred = merge_predictions(read_documents(root / "baselines" / "TestSet.DNorm.PubTator.txt"),
                             read_documents(root / "baselines" / "TestSet.tmChem.PubTator.txt"))
    theirs = neleval_scores(gold, pred, MODES)
    rows = {}
    lines = ["| mode | neleval measure | ours P / R / F1 | neleval P / R / F1 |", "|---|---|---|---|"]
    for mode in MODES:
        ours = score(gold, pred, mode).to_dict()
        ref = theirs[mode]
        rows[mode] = {"ours": ours, "neleval": ref}
        lines.append(f"| {mode} | {MEASURES[mode]} | {ours['precision']:.4f} / {ours['recall']:.4f} / "
                     f"{ours['f1']:.4f} | {ref['precision']:.4f} / {ref['recall']:.4f} / "
                     f"{ref['fscore']:.4f} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return rows


if __name__ == "__main__":
    main()
