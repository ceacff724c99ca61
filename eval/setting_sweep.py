"""A grid of annotate's pipeline parameters and γ on dev, scored from one detection pass.

    python -m eval.setting_sweep [--set STEP.PARAM=V1,V2,...]... [--threshold V1,V2,...]
                                 [--model DIR] [--kb-names-from bc5cdr:train] [--ncbi]
                                 [--biored] [--max-docs N] [--out eval/results/setting_sweep]

e.g. ``--threshold 0.4,0.5 --set propagation.threshold=0.2,0.3 --set
lexical_gate.gate=0.98,1.01``.

Why: ``linker train`` picks γ on dev with the exact-name sieve and dense search alone; the
declared steps (the lexical gate, short forms, propagation, the KB dictionary, the rules on
linked annotations) change which spans a threshold lets through, and a retrained model may want
other values than the ones declared for the model before it — so they are swept together, on
one detection pass. Each ``--set`` names a step's parameter as ``linker annotate --set`` does
(``linker pipeline show`` lists them) and its values; a step the model's pipeline does not
declare is added by the override, as in annotate. ``--threshold`` sweeps γ. Every combination
is a row (:class:`eval.setting_rows.Row`); the model's declaration fills the rest. BC5CDR dev
with KB names mined from ``--kb-names-from`` (BC5CDR train only by default: the shipped KB
also holds dev's names); ``--ncbi`` adds NCBI disease dev (default KB, Disease only, IDs through
MEDIC) and ``--biored`` BioRED dev (Chemical + Disease, as ``eval.ood_dev`` scores it) for text
the model was not trained on.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from e2e_linker.errors import UserError
from e2e_linker.pipeline.declaration import check_changes
from eval.reporting import command_line, machine, write_results
from eval.setting_rows import Row, dev_rows, rows_table

RESULTS = Path(__file__).parent / "results" / "setting_sweep"
#: the column of the γ axis
GAMMA = "γ"


def grid_axes(items: list[str], thresholds: str | None = None) -> dict[str, list[str]]:
    """The axes of a grid: each ``--set STEP.PARAM=V1,V2`` item as its ``STEP.PARAM`` and its
    values (as written), and ``--threshold V1,V2`` as :data:`GAMMA`; a malformed item, a
    parameter named twice, or a value ``linker annotate --set`` would refuse (an unknown step
    or parameter, a value of the wrong type) ends the run here, before minutes of loading."""
    axes: dict[str, list[str]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        key = key.strip()
        words = [v.strip() for v in values.split(",")]
        if not eq or "." not in key or not all(words):
            raise SystemExit(f"--set {item}: expected STEP.PARAM=V1,V2,...")
        if key in axes:
            raise SystemExit(f"--set {key}: given twice (one --set per parameter)")
        try:
            check_changes(overrides=[f"{key}={v}" for v in words])
        except UserError as exc:
            raise SystemExit(str(exc)) from exc
        axes[key] = words
    if thresholds is not None:
        try:
            axes[GAMMA] = [str(float(v)) for v in thresholds.split(",")]
        except ValueError as exc:
            raise SystemExit(f"--threshold {thresholds}: expected V1,V2,... numbers") from exc
    return axes


def parse_grid(items: list[str], thresholds: str | None = None) -> list[Row]:
    """Every combination of the axes (:func:`grid_axes`), in order, as a :class:`Row` that
    sets those parameters and γ; no axis: the one row of the model's own pipeline."""
    axes = grid_axes(items, thresholds)
    rows = []
    for combo in itertools.product(*axes.values()):
        chosen = dict(zip(axes, combo, strict=True))
        overrides = tuple(f"{k}={v}" for k, v in chosen.items() if k != GAMMA)
        threshold = float(chosen[GAMMA]) if GAMMA in chosen else None
        label = ", ".join(f"{k}={v}" for k, v in chosen.items()) or "declared pipeline"
        rows.append(Row(label, (), overrides, threshold))
    return rows


def axis_columns(axes: list[str]) -> dict[str, object]:
    """The report's columns, one an axis: the value a row of
    :func:`eval.setting_rows.setting_rows` set for it (γ: the row's threshold)."""
    def value_of(key: str):
        def show(row: dict):
            if key == GAMMA:
                return row["threshold"]
            prefix = f"{key}="
            return next((o[len(prefix):] for o in row["overrides"] if o.startswith(prefix)),
                        "—")
        return show

    return {key: value_of(key) for key in axes}


def declared_values(pipeline, axes: list[str], threshold: float | None) -> dict[str, object]:
    """What the model's own pipeline says for each swept parameter (a step it does not
    declare: ``"not declared"``) and its γ: the values the rows are compared with."""
    out: dict[str, object] = {}
    for key in axes:
        if key == GAMMA:
            out[key] = threshold
            continue
        step_name, _, param = key.partition(".")
        step = pipeline.get(step_name)
        out[key] = "not declared" if step is None else step.params()[param]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="grid", action="append", default=[],
                        metavar="STEP.PARAM=V1,V2",
                        help="a step parameter and its values, as linker annotate --set "
                             "writes one value (linker pipeline show lists them); repeatable")
    parser.add_argument("--threshold", default=None, metavar="V1,V2",
                        help="mention thresholds γ to sweep (default: the model's)")
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
    axes = list(grid_axes(args.grid, args.threshold))
    settings = parse_grid(args.grid, args.threshold)
    columns = axis_columns(axes) or {"row": lambda row: row["row"]}
    rows = dev_rows(settings, args.model, args.kb_names_from, args.max_docs, args.ncbi,
                    args.biored)
    # the same model directory on every corpus: its declaration is the same
    pipeline = rows.annotator.pipeline
    model_values = declared_values(pipeline, axes, rows.annotator.settings.threshold)
    lines = [f"Model {args.model or 'shipped'}, its declared pipeline ({pipeline.source}: "
             f"{', '.join(pipeline.names)}) where a row sets nothing; declared values of the "
             f"swept parameters {model_values}. BC5CDR dev ({rows.bc5cdr_documents} "
             "documents), "
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
              "pipeline": pipeline.describe(), "kb_names_from": args.kb_names_from,
              "grid": args.grid, "thresholds": args.threshold,
              "bc5cdr_dev": rows.bc5cdr_dev, "ncbi_dev": rows.ncbi_dev,
              "biored_dev": rows.biored_dev}
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
