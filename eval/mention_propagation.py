"""Document-level detection: a surface form detected once, tagged at its other occurrences.

    python -m eval.mention_propagation [--docs bc5cdr:dev] [--thresholds 0.5 0.4 0.3 0.2]

Why (issue 17, item 2): a name is often introduced with context and repeated bare later in the
same abstract, where the span scorer is less sure; and gold annotates every occurrence. With
``Annotator.propagation_threshold`` set, a span scored above it (but below the detection
threshold γ) is kept when its text, case folded, was detected above γ in the same document.
Each row sets one propagation threshold; the same spans are then linked as ``linker annotate``
links them and scored with ``linker score`` (strict, partial, and mentions = spans only).

The KB's mined names come from ``--kb-names-from`` (default BC5CDR train only): the shipped KB
also holds dev's names, which would make dev's linking optimistic
(``eval/results/linking_ablation_fair``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.loading import load_annotator
from eval.linking_ablation import model_with_names_from
from eval.reporting import command_line, f1_fields, machine, write_results

RESULTS = Path(__file__).parent / "results" / "mention_propagation"


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="bc5cdr:dev")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.4, 0.3, 0.2])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    gold = load_corpus(args.docs, args.max_docs)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = model_with_names_from(args.kb_names_from, Path(tmp))
        annotator = load_annotator(model_dir)
    rows = []
    for value in [None, *args.thresholds]:
        annotator.propagation_threshold = value
        started = time.perf_counter()
        spans, _ = annotator.detect(gold)
        pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
        row = {"propagation_threshold": value, "spans": len(spans),
               "seconds": round(time.perf_counter() - started, 1),
               **f1_fields(gold, pred, ("strict", "partial", "mentions"))}
        rows.append(row)
        print(row, flush=True)
    annotator.propagation_threshold = None
    result = {"command": command_line("mention_propagation", argv),
              "machine": machine(), "docs": args.docs,
              "documents": len(gold), "threshold": annotator.threshold,
              "kb_names_from": args.kb_names_from, "rows": rows}
    lines = [f"`{args.docs}`, {len(gold)} documents, default model (γ = {annotator.threshold}), "
             f"KB names mined from {', '.join(args.kb_names_from)}.", "",
             "| propagation threshold | spans | strict F1 | Chemical | Disease | partial F1 | "
             "mention F1 |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        by_type = row["strict_by_type"]
        lines.append(f"| {row['propagation_threshold'] or 'off'} | {row['spans']:,} | "
                     f"{row['strict']:.4f} | {by_type['Chemical']:.4f} | "
                     f"{by_type['Disease']:.4f} | {row['partial']:.4f} | "
                     f"{row['mentions']:.4f} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
