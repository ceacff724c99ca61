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
from pathlib import Path

from eval.reporting import command_line, machine, write_results
from eval.setting_rows import dev_rows, rows_table

RESULTS = Path(__file__).parent / "results" / "lexical_gate"


def gate_label(row: dict) -> str:
    """How a row's gate prints."""
    gate = row["lexical_gate"]
    return "off" if not gate else ("lexical only" if gate > 1 else f"{gate}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gates", type=float, nargs="+", default=[0.9, 0.95, 0.98, 0.99, 1.01])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    gates: list[float | None] = [None, *args.gates]
    settings = [{"lexical_gate": gate} for gate in gates]
    rows = dev_rows(settings, args.model, args.kb_names_from, args.max_docs)
    annotator = rows.annotator
    result = {"command": command_line("lexical_gate", argv), "machine": machine(),
              "model": args.model or "shipped", "kb_names_from": args.kb_names_from,
              "threshold": annotator.settings.threshold, "bc5cdr_dev": rows.bc5cdr_dev,
              "ncbi_dev": rows.ncbi_dev}
    lines = [f"Model {args.model or 'shipped'}, threshold {annotator.settings.threshold}, sieves on. "
             f"BC5CDR dev ({rows.bc5cdr_documents} documents) with KB names mined from "
             f"{', '.join(args.kb_names_from)}; NCBI disease dev ({rows.ncbi_documents} "
             "documents), default KB, Disease only, IDs through MEDIC.", "",
             *rows_table("BC5CDR dev", rows.bc5cdr_dev, {"gate": gate_label}), "",
             *rows_table("NCBI dev (cross-corpus)", rows.ncbi_dev, {"gate": gate_label},
                         False)]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
