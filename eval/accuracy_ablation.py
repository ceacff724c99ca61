"""What each step of ``linker annotate`` adds, model by model: the README's ablation table.

    python -m eval.accuracy_ablation [--split dev|test] [--models shipped runs/bc5cdr_conv]
                                     [--gate 0.98] [--propagation 0.3]
                                     [--out eval/results/accuracy_ablation_<split>]

Rows, cumulative, for each model (one detection pass per model, then selected and linked per
row, scored as ``linker score`` scores):

1. exact-name sieve + dense search (annotate before issue 17: ``--no-sieves --lexical-gate 0
   --no-short-forms --propagation-threshold 1``);
2. + the sieve stack (``SieveStack``: in-document abbreviations, mined mentions, compact key,
   salt-free forms) — ``eval.linking_ablation`` switches each of its steps;
3. + the lexical gate (``--gate``, default: the model's ``lexical_gate``) —
   ``eval.lexical_gate`` sweeps it;
4. + short forms defined in the document tagged like their detected long forms;
5. + propagation of detected surface forms to weaker repeats (``--propagation``, default: the
   model's ``propagation_threshold``) — ``eval.mention_propagation`` sweeps 4 and 5;
6. + the concept-type rules (a span takes its concept's type; a Chemical linked to a MeSH
   gene product is dropped: :mod:`e2e_linker.collective.concept_types`) — ``eval.setting_sweep
   --biored`` sweeps them on the out-of-domain dev table;
7. + the short-form rules (a short form the document defines as something its concept's names
   do not share a word with, or as a gene, is dropped:
   :mod:`e2e_linker.collective.short_form_rules`) — swept the same way;
8. + a Chemical named as a sequence residue ("arginine residue") dropped:
   :mod:`e2e_linker.collective.sequence_context`;
9. + a kept span grown to the longest KB name around it scored above ``name_extension``
   (:func:`e2e_linker.collective.span_selection.extend_to_names`; last, so that row 8 is
   annotate as it was before it).

On dev the KB's mined names come from BC5CDR train only (``--kb-names-from``; the shipped KB
also holds dev's names, which makes every dev span look named). On test the models link
against their own KB as shipped. Decide on dev; run test once.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from eval.models import model_source, model_with_names_from
from eval.ood_dev import CORPUS_TYPES
from eval.reporting import command_line, machine, write_results
from eval.setting_rows import MODES, STEPS_OFF, setting_rows


def ablation_settings(annotator, gate: float | None, propagation: float | None
                      ) -> list[tuple[str, dict]]:
    """The cumulative rows: each adds one step to the row above (values: the arguments, else
    the model's own)."""
    gate = annotator.settings.lexical_gate if gate is None else gate
    propagation = annotator.settings.propagation_threshold if propagation is None else propagation
    steps = [("exact-name sieve + dense", {}), ("+ sieve stack", {"sieves": annotator.linker.sieves}),
             (f"+ lexical gate {gate}", {"lexical_gate": gate}),
             ("+ short forms", {"short_forms": True})]
    if propagation is not None:  # neither given nor set in the model: no row
        steps.append((f"+ propagation {propagation}", {"propagation_threshold": propagation}))
    steps.append(("+ concept-type rules", {"type_from_concept": True, "gene_products": "drop"}))
    steps.append(("+ short-form rules", {"redefined_short_forms": "drop",
                                         "gene_short_forms": "drop",
                                         "disease_symbols": "drop"}))
    steps.append(("+ sequence residues dropped", {"sequence_residues": "drop"}))
    extension = annotator.settings.name_extension
    if extension is not None:  # off in these settings: no row
        steps.append((f"+ kept spans grown to longer KB names above {extension}",
                       {"name_extension": extension}))
    if annotator.settings.composites:
        steps.append(("+ elliptical coordinations linked to their parts", {"composites": True}))
    rows, current = [], dict(STEPS_OFF)
    for label, change in steps:
        current = current | change
        rows.append((label, dict(current)))
    return rows


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "test"], default="dev")
    parser.add_argument("--models", nargs="+", default=["shipped"],
                        help="model directories; 'shipped': the default model; 'git:REV': the "
                             "default model as committed at REV (e.g. the one before a retrain)")
    parser.add_argument("--gate", type=float, default=None,
                        help="lexical gate of row 3 (default: each model's own)")
    parser.add_argument("--propagation", type=float, default=None)
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"],
                        help="dev only: corpora whose annotation texts extend the KB")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    gold = load_corpus(f"bc5cdr:{args.split}", args.max_docs)
    rows = []
    for label in args.models:
        with tempfile.TemporaryDirectory() as tmp:  # the model folder lives while its rows run
            source = model_source(label, Path(tmp) / "model")
            # the packed index kept: the names that differ are searched exactly beside it
            directory = (model_with_names_from(args.kb_names_from, Path(tmp), source,
                                               keep_packed_index=True)
                         if args.split == "dev" else source)
            annotator = load_annotator(AnnotateSettings(
                model_dir=str(directory) if directory else None))
            settings = ablation_settings(annotator, args.gate, args.propagation)
            # BC5CDR annotates chemicals and diseases only: a gene model's Gene mentions are
            # outside its guideline, left out as eval.ood_dev leaves them out
            scored = setting_rows(annotator, gold, [s for _, s in settings],
                                  types=CORPUS_TYPES["bc5cdr:dev"])
        for (step, _), row in zip(settings, scored, strict=True):
            rows.append({"model": label, "row": step, "spans": row["spans"],
                         "seconds": row["seconds"],
                         **{m: row[m]["f1"] for m in MODES},
                         **{f"{m}_by_type": row[f"{m}_by_type"] for m in MODES}})
    result = {"command": command_line("accuracy_ablation", argv), "machine": machine(),
              "split": args.split, "documents": len(gold),
              "kb_names_from": args.kb_names_from if args.split == "dev" else "the model's",
              "rows": rows}
    types = sorted(rows[0]["strict_by_type"])
    header = ["model", "steps", "strict F1", *(f"{t} strict" for t in types), "partial F1",
              "mention F1"]
    lines = [f"BC5CDR {args.split}, {len(gold)} documents; KB names "
             + (f"mined from {', '.join(args.kb_names_from)}" if args.split == "dev"
                else "as each model ships") + ".", "",
             "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in rows:
        cells = [row["model"], row["row"], f"{row['strict']:.4f}",
                 *(f"{row['strict_by_type'][t]:.4f}" for t in types),
                 f"{row['partial']:.4f}", f"{row['mentions']:.4f}"]
        lines.append("| " + " | ".join(cells) + " |")
    write_results(args.out or f"eval/results/accuracy_ablation_{args.split}", result,
                  "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
