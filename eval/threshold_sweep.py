"""The detection threshold γ under annotate's full pipeline, on dev.

    python -m eval.threshold_sweep [--thresholds 0.4 0.5 0.6 0.7] [--model DIR]
                                   [--out eval/results/threshold_sweep]

Why: ``linker train`` picks γ on dev with the exact-name sieve and dense search alone; the
lexical gate, short forms and propagation (issue 17) change which spans a threshold lets
through — the gate drops unnamed spans whatever γ is — so γ is swept again with them, the
model's other settings as they are. BC5CDR dev with KB names mined from ``--kb-names-from``
(BC5CDR train only by default), and NCBI disease dev (default KB, Disease only, IDs through
MEDIC) for text the model was not trained on.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from e2e_linker.collective.loading import load_annotator
from eval.linking_ablation import model_with_names_from
from eval.reporting import command_line, machine, write_results
from eval.setting_rows import rows_table, setting_rows

RESULTS = Path(__file__).parent / "results" / "threshold_sweep"
COLUMNS = {"γ": lambda row: row["threshold"]}


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus, load_kb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.4, 0.5, 0.6, 0.7])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = [{"threshold": value} for value in args.thresholds]
    bc5cdr = load_corpus("bc5cdr:dev", args.max_docs)
    source = Path(args.model) if args.model else None
    with tempfile.TemporaryDirectory() as tmp:
        annotator = load_annotator(model_with_names_from(args.kb_names_from, Path(tmp), source))
    dev_rows = setting_rows(annotator, bc5cdr, settings)
    ncbi = load_corpus("ncbi_disease:dev", args.max_docs)
    annotator = load_annotator(args.model)
    ncbi_rows = setting_rows(annotator, ncbi, settings, ("Disease",), load_kb("medic").resolve)
    setup = {"lexical_gate": annotator.lexical_gate, "short_forms": annotator.short_forms,
             "propagation_threshold": annotator.propagation_threshold}
    result = {"command": command_line("threshold_sweep", argv), "machine": machine(),
              "model": args.model or "shipped", **setup,
              "kb_names_from": args.kb_names_from, "bc5cdr_dev": dev_rows,
              "ncbi_dev": ncbi_rows}
    lines = [f"Model {args.model or 'shipped'} with {setup}, sieves on. BC5CDR dev "
             f"({len(bc5cdr)} documents), KB names mined from "
             f"{', '.join(args.kb_names_from)}; NCBI disease dev ({len(ncbi)} documents), "
             "default KB, Disease only, IDs through MEDIC.", "",
             *rows_table("BC5CDR dev", dev_rows, COLUMNS), "",
             *rows_table("NCBI dev (cross-corpus)", ncbi_rows, COLUMNS, False)]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
