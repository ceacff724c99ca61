"""Dropping detected spans whose best link is weak (a NIL threshold on the link score), on dev.

    python -m eval.nil_threshold [--docs bc5cdr:dev] [--quantiles 0.02 0.05 0.1 0.2]

Why (issue 17, item 2): most of annotate's chemical false positives overlap no gold span at
all, and many are protein, gene or anatomy names the KB has no good concept for — their best
link should be weak. Spans are detected and linked once, as ``linker annotate`` does; each row
then drops the linked spans whose link score (the collective model's span·name score) is below
a threshold, and is scored with ``linker score``. Thresholds are quantiles of the dev link
scores, per type, so one row removes the same share of each type's weakest links. Spans the
exact-name sieve linked without a dense score are never dropped.

The KB's mined names come from ``--kb-names-from`` (default BC5CDR train only, a fair dev:
``eval/results/linking_ablation_fair``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.loading import load_annotator
from e2e_linker.collective.settings import AnnotateSettings
from eval.models import model_with_names_from
from eval.reporting import command_line, f1_fields, machine, write_results

RESULTS = Path(__file__).parent / "results" / "nil_threshold"


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="bc5cdr:dev")
    parser.add_argument("--quantiles", type=float, nargs="+", default=[0.02, 0.05, 0.1, 0.2])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    gold = load_corpus(args.docs, args.max_docs)
    with tempfile.TemporaryDirectory() as tmp:
        annotator = load_annotator(AnnotateSettings(
            model_dir=str(model_with_names_from(args.kb_names_from, Path(tmp)))))
    spans, _ = annotator.detect(gold)
    links = annotator.link(spans, gold)
    by_type: dict[str, list[float]] = {}
    for ann in links:
        if ann is not None and ann.link_score is not None:
            by_type.setdefault(ann.type, []).append(ann.link_score)
    rows = []
    for q in [0.0, *args.quantiles]:
        cut = {t: float(np.quantile(v, q)) if q else -np.inf for t, v in by_type.items()}
        kept = [a if a is None or a.link_score is None or a.link_score >= cut[a.type] else None
                for a in links]
        pred = attach_annotations(gold, spans, kept, replace=True)
        row = {"quantile": q, "thresholds": {t: round(c, 3) for t, c in cut.items()},
               "dropped": sum(a is not None for a in links) - sum(a is not None for a in kept),
               **f1_fields(gold, pred)}
        rows.append(row)
        print(row, flush=True)
    result = {"command": command_line("nil_threshold", argv),
              "machine": machine(), "docs": args.docs,
              "documents": len(gold), "spans": len(spans),
              "kb_names_from": args.kb_names_from, "rows": rows}
    lines = [f"`{args.docs}`, {len(gold)} documents, {len(spans)} detected spans, default "
             f"model, KB names mined from {', '.join(args.kb_names_from)}.", "",
             "| link-score quantile dropped (per type) | spans dropped | strict F1 | Chemical | "
             "Disease | partial F1 |", "|---|---|---|---|---|---|"]
    for row in rows:
        types = row["strict_by_type"]
        lines.append(f"| {row['quantile'] or 'none'} | {row['dropped']:,} | {row['strict']:.4f} | "
                     f"{types['Chemical']:.4f} | {types['Disease']:.4f} | "
                     f"{row['partial']:.4f} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
