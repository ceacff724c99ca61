"""Fit the gene false-alarm model (:mod:`e2e_linker.collective.gene_families`) on the linker's
Gene spans over the gene corpora's training documents and check it on their dev folds.

    python -m eval.false_alarm_fit [--model DIR] [--fit-on gnormplus:fit nlmgene:fit biored:train]
                                   [--check gnormplus:dev nlmgene:dev biored:dev] [--write]
                                   [--out eval/results/dev_table/gene_false_alarms]

Why: after the family step, a third of the gene dev folds' false alarms are spans that no
gene corpus annotates although the KB names a gene so — a cell population named by a marker,
a hormone or a drug written like a gene's alias, a T-cell subset
(docs/decisions/0053-gene-false-alarms.md). Which spans those are is read from the corpora:
each ``--fit-on`` corpus is annotated from its stripped text by the model with its declared
pipeline (names mined from ``--kb-names-from`` only, as the species fit does), and each Gene
span it writes is a row: label 1 when it overlaps no gold Gene mention (a false alarm), 0 when
a gold Gene mention has its offsets; a span that overlaps a gold mention with other offsets is
a boundary error, no row. The rows' features are the family model's
(:func:`~e2e_linker.collective.gene_families.family_features`). ``--check`` reports, per dev
fold, how many of the linker's false alarms and right spans the model drops at the step's
threshold. ``--write`` puts ``gene_false_alarms.json`` into the model directory (default: the
shipped model; then refresh its ``SHA256SUMS``: ``e2e_linker.kb_search.shipped.write_manifest``).
Whether the step earns its place is the dev table's (``python -m eval.ood_dev``), not this
check's. The fitted documents were in the encoder's training data, so their false alarms are
the ones training did not remove: fewer than a new text's, of the same kinds.
"""

from __future__ import annotations

import json
from pathlib import Path

from data_tools.documents import Document
from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.gene_families import (
    GENE_FALSE_ALARMS_FILE,
    GeneMentionModel,
    family_features,
    fit_gene_mention_model,
)
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.pipeline.annotation_steps import GeneFalseAlarms
from eval.family_fit import weight_lines
from eval.reporting import command_line, machine, write_results
from eval.species_fit import CHECK, FIT_ON, annotated_fit_corpora, fit_parser

RESULTS = Path(__file__).parent / "results" / "dev_table" / "gene_false_alarms"
#: the fit's L2 penalty (as the family model's)
L2 = 1.0

parser = fit_parser("false_alarm_fit", __doc__, FIT_ON, CHECK, GENE_FALSE_ALARMS_FILE, RESULTS)


def labelled_spans(gold: list[Document], pred: list[Document], genes: GeneRanking
                   ) -> tuple[list[dict[str, float]], list[float]]:
    """The features of each predicted Gene span of ``pred`` and its label against ``gold``
    (the same documents): 1 when it overlaps no gold Gene mention, 0 when a gold Gene mention
    has its offsets; spans overlapping a gold Gene mention with other offsets are left out."""
    by_id = {doc.id: doc for doc in gold}
    rows, labels = [], []
    for doc in pred:
        gold_doc = by_id.get(doc.id)
        if gold_doc is None:
            continue
        spans = {(a.start, a.end) for a in gold_doc.annotations if a.type == GENE_TYPE}
        for ann in doc.annotations:
            if ann.type != GENE_TYPE or not ann.text:
                continue
            exact = (ann.start, ann.end) in spans
            if not exact and any(s < ann.end and ann.start < e for s, e in spans):
                continue
            rows.append(family_features(ann.text, doc.text, ann.start, ann.end, genes))
            labels.append(float(not exact))
    return rows, labels


def check(rows: list[dict[str, float]], labels: list[float], model: GeneMentionModel,
          threshold: float) -> dict:
    """How many false alarms and right spans the model drops at ``threshold``."""
    dropped = [model.model.probability(row) >= threshold for row in rows]
    alarms = int(sum(labels))
    hit = sum(d and y == 1.0 for d, y in zip(dropped, labels, strict=True))
    lost = sum(d and y == 0.0 for d, y in zip(dropped, labels, strict=True))
    return {"false_alarms": alarms, "right": len(labels) - alarms,
            "false_alarms_dropped": hit, "right_dropped": lost}


def markdown(result: dict) -> str:
    """The check table of :func:`main`."""
    lines = [f"Gene false-alarm model fitted on {', '.join(result['fit_on'])} "
             f"({result['fit_rows']} Gene spans of the linker, {result['fit_alarms']} false "
             f"alarms); on each dev fold, the linker's Gene spans the model drops at the "
             f"step's threshold ({result['threshold']}):", "",
             "| dev fold | false alarms | dropped | right spans | dropped |", "|---|---|---|---|---|"]
    lines += [f"| {spec} | {c['false_alarms']} | {c['false_alarms_dropped']} | {c['right']} "
              f"| {c['right_dropped']} |" for spec, c in result["check"].items()]
    lines += weight_lines(result["model"]["weights"], "false alarm", top=15)
    lines += ["", f"Command: `{result['command']}`; {result['machine']}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser.parse_args(argv)
    # the rows are the spans the step would see: the model's pipeline without the step
    model_dir, genes, golds, preds = annotated_fit_corpora(args, disable=[GeneFalseAlarms.name])
    labelled = {spec: labelled_spans(golds[spec], preds[spec], genes) for spec in golds}
    fit_rows = [row for spec in args.fit_on for row in labelled[spec][0]]
    fit_labels = [label for spec in args.fit_on for label in labelled[spec][1]]
    model = fit_gene_mention_model(fit_rows, fit_labels, l2=L2, fitted={
        "label": "a Gene span of the linker overlapping no gold Gene mention (1) or one with "
                 "its offsets (0)", "fit_on": list(args.fit_on),
        "names": "mined from " + ", ".join(args.kb_names_from)})
    threshold = GeneFalseAlarms().threshold
    checked = {spec: check(*labelled[spec], model, threshold) for spec in args.check}
    if args.write:
        (model_dir / GENE_FALSE_ALARMS_FILE).write_text(json.dumps(model.to_json(), indent=1)
                                                        + "\n")
    result = {"command": command_line("false_alarm_fit", argv), "machine": machine(),
              "fit_on": list(args.fit_on), "fit_rows": len(fit_rows),
              "fit_alarms": int(sum(fit_labels)), "threshold": threshold,
              "model": model.to_json(), "check": checked}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
