"""A grid of annotate's settings on dev: γ, the lexical gate, short forms, propagation, KB
dictionary matches, the concept-type, short-form and sequence-residue rules.

    python -m eval.setting_sweep --set threshold=0.4,0.5,0.6 --set lexical_gate=0.95,0.98
                                 [--model DIR] [--ncbi] [--biored]
                                 [--out eval/results/setting_sweep]

Why: ``linker train`` picks γ on dev with the exact-name sieve and dense search alone; the
lexical gate, short forms and propagation (issue 17) change which spans a threshold lets
through, and a retrained model may want other values than the ones chosen for the model
before it — so they are swept together, on one detection pass. Each ``--set`` names an
:class:`~e2e_linker.collective.annotator.Annotator` attribute and its values (``none`` for
None, ``true``/``false``); every combination is a row, the model's own values fill the rest.
BC5CDR dev with KB names mined from ``--kb-names-from`` (BC5CDR train only by default: the
shipped KB also holds dev's names); ``--ncbi`` adds NCBI disease dev (default KB, Disease only,
IDs through MEDIC) and ``--biored`` BioRED dev (Chemical + Disease, as ``eval.ood_dev`` scores
it) for text the model was not trained on.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from eval.reporting import command_line, machine, write_results
from eval.setting_rows import current, dev_rows, rows_table

RESULTS = Path(__file__).parent / "results" / "setting_sweep"
SETTABLE = ("threshold", "lexical_gate", "short_forms", "propagation_threshold",
            "dictionary_threshold", "type_from_concept", "gene_products",
            "redefined_short_forms", "undefined_short_max", "gene_short_forms",
            "sequence_residues", "gene_modifiers", "name_extension", "composites")


def parse_value(text: str):
    """``none``, ``true``, ``false``, a number, or else the word itself (``drop``)."""
    lowered = text.strip().lower()
    if lowered in ("none", "true", "false"):
        return {"none": None, "true": True, "false": False}[lowered]
    try:
        return float(text)
    except ValueError:
        return text.strip()


def parse_grid(items: list[str]) -> list[dict]:
    """``["threshold=0.4,0.5", "short_forms=true"]`` → every combination as a dict."""
    axes: dict[str, list] = {}
    for item in items:
        key, _, values = item.partition("=")
        if key not in SETTABLE or not values:
            raise SystemExit(f"--set {item}: expected KEY=V1,V2,... with KEY one of "
                             f"{', '.join(SETTABLE)}")
        axes[key] = [parse_value(v) for v in values.split(",")]
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="grid", action="append", default=[],
                        help="KEY=V1,V2,... (" + ", ".join(SETTABLE) + ")")
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"],
                        help="corpora whose names the BC5CDR dev rows' KB mines (none given: "
                             "the model's own KB, which for the shipped model holds dev's "
                             "names: fit for deltas between rows only)")
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--ncbi", action="store_true", help="also sweep NCBI disease dev")
    parser.add_argument("--biored", action="store_true",
                        help="also sweep BioRED dev (Chemical + Disease, the out-of-domain set)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = parse_grid(args.grid) or [{}]
    keys = sorted({k for s in settings for k in s})
    columns = {k: (lambda row, k=k: row[k]) for k in keys}
    rows = dev_rows(settings, args.model, args.kb_names_from, args.max_docs, args.ncbi,
                    args.biored)
    # the same model directory on both corpora: its own values are the same
    model_values = {k: current(rows.annotator, k) for k in SETTABLE}
    lines = [f"Model {args.model or 'shipped'}, its own settings {model_values} where a row "
             f"does not set them, sieves on. BC5CDR dev ({rows.bc5cdr_documents} documents), "
             + (f"KB names mined from {', '.join(args.kb_names_from)}." if args.kb_names_from
                else "the model's own KB (the shipped one holds dev's names: deltas only)."),
             "",
             *rows_table("BC5CDR dev", rows.bc5cdr_dev, columns)]
    if args.ncbi:
        lines += ["", f"NCBI disease dev ({rows.ncbi_documents} documents), default KB, "
                      "Disease only, IDs through MEDIC.", "",
                  *rows_table("NCBI dev (cross-corpus)", rows.ncbi_dev, columns, False)]
    if args.biored:
        lines += ["", f"BioRED dev ({rows.biored_documents} documents), default KB, Chemical + "
                      "Disease (gold types mapped, predicted genes left out).", "",
                  *rows_table("BioRED dev (out of domain)", rows.biored_dev, columns)]
    result = {"command": command_line("setting_sweep", argv), "machine": machine(),
              "model": args.model or "shipped", "model_settings": model_values,
              "kb_names_from": args.kb_names_from, "grid": args.grid,
              "bc5cdr_dev": rows.bc5cdr_dev, "ncbi_dev": rows.ncbi_dev,
              "biored_dev": rows.biored_dev}
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
