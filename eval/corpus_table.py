"""The leave-one-corpus-out table: models trained on some corpora, scored on every dev corpus,
in-domain and out-of-domain side by side.

    python -m eval.corpus_table \\
        --row bc5cdr shipped bc5cdr:train \\
        --row ncbi runs/ncbi_disease ncbi_disease:train \\
        [--corpora bc5cdr:dev ncbi_disease:dev biored:dev] [--out eval/results/corpus_table]

Why: issue 29 asks that choices be made on how a model does on corpora it was not trained on,
not on BC5CDR dev alone. Each ``--row LABEL MODEL TRAINED_ON`` is a model directory (or
``shipped``) and the comma-separated corpora it was trained on; its KB's mined names are rebuilt
from exactly those corpora (a model never links with names mined from a dev set it is scored
on; a model that ships a packed index keeps it, the names that differ searched exactly beside
it, as for a user's grown KB), and every corpus is annotated from its stripped text as
``linker annotate`` does and scored with ``linker score``'s scorer (:mod:`eval.ood_dev`). A cell is in-domain when the row
trained on that corpus's train split; BioRED dev is out-of-domain for every row (never trained
on). Scored types are the corpus's types the model predicts (a Disease-only model is scored on
diseases), so every cell also reports Disease strict F1, the type all rows share.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from data_tools.registry import load_kb
from eval.ood_dev import CORPUS_TYPES, evaluate
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "corpus_table"


def in_domain(corpus: str, trained_on: list[str]) -> bool:
    """Whether a dev corpus's train split is among the row's training corpora."""
    return corpus.split(":")[0] + ":train" in trained_on


def row_of(label: str, model: str, trained_on: list[str], corpora: list[str], tmp: Path,
           resolve, max_docs: int | None = None) -> dict:
    """One model scored on every corpus (see the module docstring)."""
    from e2e_linker.api import Linker
    from e2e_linker.collective.settings import AnnotateSettings
    from eval.models import model_with_names_from

    folder = tmp / label
    folder.mkdir()
    source = None if model == "shipped" else Path(model)
    model_dir = model_with_names_from(trained_on, folder, source, keep_packed_index=True)
    linker = Linker.load(settings=AnnotateSettings(model_dir=str(model_dir)))
    types = tuple(linker.annotator.model.config.types)
    cells = []
    for corpus in corpora:
        scored = tuple(t for t in CORPUS_TYPES[corpus] if t in types)
        cell = evaluate(linker, corpus, resolve, max_docs, types=scored)
        cell["scored_types"] = list(scored)
        cell["in_domain"] = in_domain(corpus, trained_on)
        cells.append(cell)
    return {"label": label, "model": model, "trained_on": trained_on, "types": list(types),
            "cells": cells}


def markdown(result: dict) -> str:
    """Strict F1 on the scored types, Disease strict F1 and mention F1 per model and corpus."""
    corpora = result["corpora"]
    lines = ["| model (trained on) | " + " | ".join(
        f"{c}: strict F1 (types) / Disease strict F1 / mention F1" for c in corpora) + " |",
             "|---|" + "---|" * len(corpora)]
    for row in result["rows"]:
        cells = []
        for cell in row["cells"]:
            s = cell["scores"]
            disease = s["strict"]["by_type"].get("Disease", {}).get("f1")
            mark = "in" if cell["in_domain"] else "**out**"
            cells.append(f"{mark}: {s['strict']['f1']:.4f} ({'+'.join(cell['scored_types'])})"
                         f" / {'—' if disease is None else f'{disease:.4f}'}"
                         f" / {s['mentions']['f1']:.4f}")
        lines.append(f"| {row['label']} ({', '.join(row['trained_on'])}) | "
                     + " | ".join(cells) + " |")
    return (f"Machine: {result['machine']}. `in`: the row trained on that corpus's train split; "
            "**out**: it did not.\n\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", nargs=3, action="append", required=True,
                        metavar=("LABEL", "MODEL", "TRAINED_ON"),
                        help="a model directory (or 'shipped') and the comma-separated corpora "
                             "it was trained on, e.g. 'ncbi runs/ncbi_disease ncbi_disease:train'")
    parser.add_argument("--corpora", nargs="+",
                        default=["bc5cdr:dev", "ncbi_disease:dev", "biored:dev"],
                        choices=sorted(CORPUS_TYPES))
    parser.add_argument("--max-docs", type=int, default=None, help="a quick look, not a result")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    labels = [label for label, _, _ in args.row]
    if len(set(labels)) != len(labels):
        parser.error("each --row needs its own LABEL")
    resolve = load_kb("bc5cdr").resolve
    with tempfile.TemporaryDirectory() as tmp:
        rows = [row_of(label, model, trained.split(","), args.corpora, Path(tmp), resolve,
                       args.max_docs)
                for label, model, trained in args.row]
    result = {"command": command_line("corpus_table", argv), "machine": machine(),
              "corpora": args.corpora, "rows": rows}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
