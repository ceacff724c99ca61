"""Keeping a detected span only when a lexical step names it (or the model is very sure).

    python -m eval.lexical_gate [--gates 0.9 0.95 0.98 0.99 1.01] [--out eval/results/lexical_gate]

Why (issue 17, item 2: "a span whose best link is weak can be dropped"): ``python -m
eval.errors`` found that of the 8,873 spans the default model keeps on BC5CDR dev, the 1,246
that no lexical step links (exact KB name, in-document short form, sieve stack) and dense search
alone does are right 16 % of the time, against 91 % for exact-name links — while the dense link
score itself does not separate them (eval/results/nil_threshold). ``Annotator.lexical_gate``
keeps such a span only when its mention score reaches the gate; the check runs before overlaps
are resolved, so a named span it overlaps can take its place. A gate above 1 keeps none.

Rows, each the same detection pass (scored once, then selected under each gate) linked as
``linker annotate`` links (sieves on); seconds are the pass's plus the row's own selection and
linking:

* BC5CDR dev, KB names mined from BC5CDR train only (``--kb-names-from``; the shipped KB also
  holds dev's names, which would make every dev span look named);
* NCBI disease dev, default model and KB, Disease mentions only, IDs resolved through MEDIC
  (as ``eval.cross_corpus``): whether the gate costs recall on text the model was not trained
  on, where fewer mentions are KB names verbatim.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.loading import load_annotator
from eval.linking_ablation import model_with_names_from
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "lexical_gate"
MODES = ("strict", "partial", "mentions")


def gate_rows(annotator, gold, gates: list[float | None], types: tuple[str, ...] | None = None,
              resolve=None) -> list[dict]:
    """One row per gate: the documents annotated with it, scored (by type) in every mode;
    ``types`` restricts both sides to those types, ``resolve`` maps IDs before scoring."""
    from e2e_linker.scoring import score

    started = time.perf_counter()
    candidates, _ = annotator.detect(gold, resolve=False)  # scored once, selected per gate
    detect_s = time.perf_counter() - started
    rows = []
    for gate in gates:
        annotator.lexical_gate = gate
        started = time.perf_counter()
        spans = annotator.select(candidates, gold)
        pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
        seconds = detect_s + time.perf_counter() - started
        if types is not None:
            for doc in pred:
                for passage in doc.passages:
                    passage.annotations = [a for a in passage.annotations if a.type in types]
        row: dict = {"gate": gate, "spans": sum(len(d.annotations) for d in pred),
                     "seconds": round(seconds, 1)}
        for mode in MODES:
            report = score(gold, pred, mode, by_type=True, resolve=resolve)
            row[mode] = {"p": round(report.precision, 4), "r": round(report.recall, 4),
                         "f1": round(report.f1, 4)}
            row[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
        rows.append(row)
        print(row, flush=True)
    annotator.lexical_gate = None
    return rows


def table(title: str, rows: list[dict], by_type: bool = True) -> list[str]:
    """A Markdown table of :func:`gate_rows` (``by_type``: a strict F1 column per type)."""
    types = sorted(rows[0]["strict_by_type"]) if by_type else []
    header = ["gate", "spans", "strict P", "strict R", "strict F1",
              *(f"{t} strict" for t in types), "partial F1", "mention F1", "s"]
    lines = [f"| {title}: " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in rows:
        gate = "off" if row["gate"] is None else ("lexical only" if row["gate"] > 1
                                                  else f"{row['gate']}")
        cells = [gate, str(row["spans"]), *(f"{row['strict'][k]:.4f}" for k in ("p", "r", "f1")),
                 *(f"{row['strict_by_type'].get(t, 0.0):.4f}" for t in types),
                 f"{row['partial']['f1']:.4f}", f"{row['mentions']['f1']:.4f}",
                 str(row["seconds"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus, load_kb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gates", type=float, nargs="+", default=[0.9, 0.95, 0.98, 0.99, 1.01])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    gates: list[float | None] = [None, *args.gates]
    source = Path(args.model) if args.model else None
    bc5cdr = load_corpus("bc5cdr:dev", args.max_docs)
    with tempfile.TemporaryDirectory() as tmp:
        annotator = load_annotator(model_with_names_from(args.kb_names_from, Path(tmp), source))
    dev_rows = gate_rows(annotator, bc5cdr, gates)
    ncbi = load_corpus("ncbi_disease:dev", args.max_docs)
    annotator = load_annotator(args.model)
    medic = load_kb("medic")
    ncbi_rows = gate_rows(annotator, ncbi, gates, ("Disease",), medic.resolve)
    result = {"command": command_line("lexical_gate", argv), "machine": machine(),
              "model": args.model or "shipped", "kb_names_from": args.kb_names_from,
              "threshold": annotator.threshold, "bc5cdr_dev": dev_rows, "ncbi_dev": ncbi_rows}
    lines = [f"Model {args.model or 'shipped'}, threshold {annotator.threshold}, sieves on. "
             f"BC5CDR dev ({len(bc5cdr)} documents) with KB names mined from "
             f"{', '.join(args.kb_names_from)}; NCBI disease dev ({len(ncbi)} documents), "
             "default KB, Disease only, IDs through MEDIC.", "",
             *table("BC5CDR dev", dev_rows), "", *table("NCBI dev (cross-corpus)", ncbi_rows, False)]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
