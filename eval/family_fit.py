"""Fit the gene family model (:mod:`e2e_linker.collective.gene_families`) on the gene corpora's
family and gene annotations and check it on their dev folds.

    python -m eval.family_fit [--model DIR] [--fit-on gnormplus:fit nlmgene:fit]
                              [--check gnormplus:dev nlmgene:dev] [--write]
                              [--out eval/results/dev_table/gene_families]

Why: the gene corpora annotate a family of genes ("Notch", "PKC") as ``FamilyName``, apart
from ``Gene``; the linker wrote such spans as one gene and they were most of the gene dev
folds' false alarms (docs/decisions/0044-gene-families.md). Each ``FamilyName`` annotation of
the ``--fit-on`` corpora's files is a positive row, each ``Gene`` annotation a negative one,
their features read with the model's gene ranking over names mined from
``--kb-names-from`` only (as the species fit's: a training document's own gold genes mined as
names would make its genes look known). ``--check`` reports, per dev fold, how many of its
family and gene annotations the model calls a family at the step's threshold. ``--write`` puts
``gene_families.json`` into the model directory (default: the shipped model; then refresh its
``SHA256SUMS``: ``e2e_linker.kb_search.shipped.write_manifest``). Whether the step earns its
place is the dev table's (``python -m eval.ood_dev``), not this check's.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from data_tools.documents import Document
from data_tools.formats import read_documents
from data_tools.registry import get_dataset, in_dev_fold
from e2e_linker.collective.gene_families import (
    GENE_FAMILIES_FILE,
    GeneMentionModel,
    family_features,
    fit_gene_mention_model,
)
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.pipeline.annotation_steps import GeneFamilyMentions
from eval.reporting import command_line, machine, write_results
from eval.species_fit import fit_parser

RESULTS = Path(__file__).parent / "results" / "dev_table" / "gene_families"
FIT_ON = ("gnormplus:fit", "nlmgene:fit")
CHECK = ("gnormplus:dev", "nlmgene:dev")
#: the corpora's label of a family of genes, and of one gene
FAMILY, GENE = "FamilyName", "Gene"
#: the fit's L2 penalty (as the text species model's)
L2 = 1.0

parser = fit_parser("family_fit", __doc__, FIT_ON, CHECK, GENE_FAMILIES_FILE, RESULTS)


def annotated_documents(spec: str) -> list[Document]:
    """The documents of a gene corpus split (``gnormplus:fit``, ``nlmgene:dev``) with every
    annotation type the file holds: the registry's corpus maps ``FamilyName`` away, which is
    what this fit reads."""
    name, split = spec.split(":")
    dataset = get_dataset(name, split)
    if dataset.fmt != "pubtator" or name not in ("gnormplus", "nlmgene"):
        raise ValueError(f"{spec}: the family fit reads the gene corpora's files "
                         "(gnormplus, nlmgene)")
    return [doc for doc in read_documents(str(dataset.path))
            if dataset.dev_fold is None or in_dev_fold(doc.id) == dataset.dev_fold]


def labelled_rows(docs: list[Document], genes: GeneRanking
                  ) -> tuple[list[dict[str, float]], list[float]]:
    """The features of every family and gene annotation of ``docs`` and their labels (1: a
    family)."""
    rows, labels = [], []
    for doc in docs:
        text = doc.text
        for ann in doc.annotations:
            if ann.type in (FAMILY, GENE) and ann.text:
                rows.append(family_features(ann.text, text, ann.start, ann.end, genes))
                labels.append(float(ann.type == FAMILY))
    return rows, labels


def check(rows: list[dict[str, float]], labels: list[float], model: GeneMentionModel,
          threshold: float) -> dict:
    """How many family and gene annotations the model calls a family at ``threshold``."""
    called = [model.model.probability(row) >= threshold for row in rows]
    families = sum(labels)
    hit = sum(c and y == 1.0 for c, y in zip(called, labels, strict=True))
    false = sum(c and y == 0.0 for c, y in zip(called, labels, strict=True))
    return {"families": int(families), "genes": len(labels) - int(families),
            "families_called": hit, "genes_called": false,
            "family_recall": round(hit / families, 4) if families else 0.0,
            "gene_kept": round(1 - false / (len(labels) - families), 4)
            if len(labels) > families else 0.0}


def weight_lines(weights: dict[str, float], positive: str, top: int = 10) -> list[str]:
    """Markdown lines of a gene mention model's weights (the family model's, the false-alarm
    model's: :mod:`eval.false_alarm_fit`): the features that are not words in a table, then
    the ``top`` word features that say ``positive`` most and the ``top`` that say gene most."""
    shaped = sorted(name for name in weights if "=" not in name)
    lines = ["", "Weights of the features that are not words "
             "(e2e_linker.collective.gene_families.family_features):", "",
             "| feature | weight |", "|---|---|"]
    lines += [f"| {name} | {weights[name]:+.3f} |" for name in shaped]
    words = sorted((name for name in weights if "=" in name), key=lambda n: -weights[n])
    return [*lines, "", f"{len(words)} word features; the {top} that say {positive} most: "
            + ", ".join(f"`{n}` {weights[n]:+.2f}" for n in words[:top])
            + f"; the {top} that say gene most: "
            + ", ".join(f"`{n}` {weights[n]:+.2f}" for n in words[-top:]) + "."]


def markdown(result: dict) -> str:
    """The check table of :func:`main`."""
    lines = [f"Gene family model fitted on {', '.join(result['fit_on'])} "
             f"({result['fit_rows']} annotations, {result['fit_families']} families); on each "
             f"dev fold, the annotations it calls a family at the step's threshold "
             f"({result['threshold']}):", "",
             "| dev fold | families | called family | genes | called family |",
             "|---|---|---|---|---|"]
    lines += [f"| {spec} | {c['families']} | {c['families_called']} "
              f"({c['family_recall']:.1%}) | {c['genes']} | {c['genes_called']} "
              f"({1 - c['gene_kept']:.1%}) |" for spec, c in result["check"].items()]
    lines += weight_lines(result["model"]["weights"], "family")
    lines += ["", f"Command: `{result['command']}`; {result['machine']}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from e2e_linker.collective.model_dir import default_linker_dir
    from eval.models import gene_ranking_with_names_from

    args = parser.parse_args(argv)
    model_dir = Path(args.model) if args.model else default_linker_dir()
    with tempfile.TemporaryDirectory() as tmp:
        genes, _ = gene_ranking_with_names_from(list(args.kb_names_from), Path(tmp), model_dir)
        fit_rows, fit_labels = [], []
        for spec in args.fit_on:
            rows, labels = labelled_rows(annotated_documents(spec), genes)
            fit_rows += rows
            fit_labels += labels
        checked_rows = {spec: labelled_rows(annotated_documents(spec), genes)
                        for spec in args.check}
    model = fit_gene_mention_model(fit_rows, fit_labels, l2=L2, fitted={
        "label": "FamilyName (1) or Gene (0) annotation", "fit_on": list(args.fit_on),
        "names": "mined from " + ", ".join(args.kb_names_from)})
    threshold = GeneFamilyMentions().threshold
    checked = {spec: check(rows, labels, model, threshold)
               for spec, (rows, labels) in checked_rows.items()}
    if args.write:
        (model_dir / GENE_FAMILIES_FILE).write_text(json.dumps(model.to_json(), indent=1)
                                                    + "\n")
    result = {"command": command_line("family_fit", argv), "machine": machine(),
              "fit_on": list(args.fit_on), "fit_rows": len(fit_rows),
              "fit_families": int(sum(fit_labels)), "threshold": threshold,
              "model": model.to_json(), "check": checked}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
