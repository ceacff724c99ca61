"""Document-level detection: repeats of a detected surface form, and defined short forms.

    python -m eval.mention_propagation [--thresholds 0.5 0.4 0.3 0.2] [--model DIR]
                                       [--out eval/results/mention_propagation]

Why (issue 17, item 2): a name is often introduced with context and repeated bare later in the
same abstract, where the span scorer is less sure, and gold annotates every occurrence; and a
short form defined in the text ("phenobarbital (PB)") is then used alone, where the model
misses it (`eval/results/errors_dev`: 205 missed chemical short forms on dev). Two switches of
:class:`~e2e_linker.collective.annotator.Annotator`, both off in the model unless its config
sets them:

* ``propagation_threshold``: a span scored above it (but below the detection threshold γ) is
  kept when its text, case folded, was detected above γ in the same document;
* ``short_forms``: every whole-word occurrence of a short form defined in the document whose
  long form is a kept span is tagged with that span's type, score and vector.

Every combination is one row, with the model's other settings (sieve stack, lexical gate) as
they are, on BC5CDR dev (KB names mined from ``--kb-names-from``, BC5CDR train only by
default: the shipped KB also holds dev's names) and on NCBI disease dev (default KB, Disease
only, IDs through MEDIC: text the model was not trained on).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval.reporting import command_line, machine, write_results
from eval.setting_rows import dev_rows, rows_table

RESULTS = Path(__file__).parent / "results" / "mention_propagation"
COLUMNS = {"short forms": lambda row: "on" if row["short_forms"] else "off",
           "propagation": lambda row: row["propagation_threshold"] or "off"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.4, 0.3, 0.2])
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = [{"short_forms": short, "propagation_threshold": value}
                for short in (False, True) for value in [None, *args.thresholds]]
    rows = dev_rows(settings, args.model, args.kb_names_from, args.max_docs)
    annotator = rows.annotator
    result = {"command": command_line("mention_propagation", argv), "machine": machine(),
              "model": args.model or "shipped", "threshold": annotator.settings.threshold,
              "lexical_gate": annotator.settings.lexical_gate, "kb_names_from": args.kb_names_from,
              "bc5cdr_dev": rows.bc5cdr_dev, "ncbi_dev": rows.ncbi_dev}
    lines = [f"Model {args.model or 'shipped'} (γ = {annotator.settings.threshold}, lexical gate "
             f"{annotator.settings.lexical_gate}, sieves on). BC5CDR dev ({rows.bc5cdr_documents} "
             f"documents), KB names mined from {', '.join(args.kb_names_from)}; NCBI disease "
             f"dev ({rows.ncbi_documents} documents), default KB, Disease only, IDs through "
             "MEDIC.", "",
             *rows_table("BC5CDR dev", rows.bc5cdr_dev, COLUMNS), "",
             *rows_table("NCBI dev (cross-corpus)", rows.ncbi_dev, COLUMNS, False)]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
