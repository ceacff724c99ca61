"""What each step of ``linker annotate`` adds, model by model: the README's ablation table.

    python -m eval.accuracy_ablation [--split dev|test] [--models shipped runs/bc5cdr_conv]
                                     [--corpora bc5cdr:SPLIT ncbi_disease:dev biored:dev]
                                     [--kb-names-from bc5cdr:train] [--max-docs N]
                                     [--dev-table] [--undeclared] [--shipped-packed-index]
                                     [--out eval/results/accuracy_ablation_<split>]

Rows, for each model and corpus (one detection pass per model and corpus, then selected,
linked and scored per row: :func:`eval.setting_rows.setting_rows`), read from the model's
declared pipeline (``pipeline.toml``; ``linker pipeline show`` prints it), so a step added to
the declaration gets its row and none is listed here by hand:

1. all declared steps (annotate as it ships);
2. each rule step of the declaration switched off alone (``--disable STEP``): what that step
   adds given all the others;
3. every rule step off (``--disable`` of all of them): detection, overlap resolution and the
   linker's dense search alone, the steps the pipeline cannot run without;
4. with ``--undeclared``, each registered rule step the declaration leaves out added with its
   defaults (``--set STEP``): whether a step the re-earning left off would earn its place now.

``--corpora`` (default ``bc5cdr:SPLIT``, SPLIT being ``--split``) adds the out-of-domain dev
corpora, ``ncbi_disease:dev`` and ``biored:dev``, scored as :mod:`eval.ood_dev` scores them
(gold types mapped to ours, only the corpus's types scored on both sides, IDs through the
``bc5cdr`` KB's alternatives), so the ablation reads the widened dev table. BC5CDR is scored as
``linker score`` scores it (Chemical + Disease, IDs as written), comparable with earlier
tables.

On dev the KB's mined names come from ``--kb-names-from`` (BC5CDR train only by default; the
shipped KB also holds dev's names, which makes every dev span look named; the widened table
passes ``bc5cdr:train ncbi_disease:train``). On test the models link against their own KB as
shipped. Decide on dev; run test once.

``--dev-table`` scores the widened dev table (:data:`eval.ood_dev.DEV_TABLE`: BC5CDR dev,
NCBI disease dev, BioRED dev with its genes as a row of their own, the GNormPlus and NLM-Gene
dev folds) with names mined from training splits only (:data:`eval.ood_dev.FAIR_NAMES`), and
adds the rule re-earning table: each row's combined score and, for each step, whether it earns
its place in the default (:func:`step_verdict`).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from eval.models import model_source, model_with_names_from, model_with_packed_index_of
from eval.ood_dev import (
    CORPUS_TYPES,
    DEV_TABLE,
    FAIR_NAMES,
    gold_of,
    only_types,
    plain_mean,
    report_of,
    row_label,
)
from eval.paired_bootstrap import COMBINED, document_counts, paired_bootstrap
from eval.reporting import command_line, machine, write_results
from eval.setting_rows import MODES, ablation_rows, plain_row, row_predictions, undeclared_rows

#: the corpora an ablation may score; ``bc5cdr:SPLIT`` is BC5CDR's ``--split``
CORPORA = ("bc5cdr:SPLIT", "bc5cdr:dev", "bc5cdr:test", "ncbi_disease:dev", "biored:dev",
           "gnormplus:dev", "nlmgene:dev")
#: a step stays in the default only if switching it off costs the combined score at least this
#: much (issue 43; docs/results.md, "Every rule re-earned")
MIN_COMBINED_GAIN = 0.001
#: resamples behind each step's gain interval in the re-earning table
BOOTSTRAP_SAMPLES = 2_000


def corpus_specs(corpora: list[str], split: str) -> list[str]:
    """``--corpora`` with ``SPLIT`` replaced by ``split``, each once, in the order given."""
    specs: list[str] = []
    for spec in corpora:
        spec = spec.replace("SPLIT", split)
        if spec not in specs:
            specs.append(spec)
    return specs


def corpus_types(spec: str) -> tuple[str, ...]:
    """The types ``spec`` is scored on: :data:`eval.ood_dev.CORPUS_TYPES` (BC5CDR's test split
    as its dev split: a gene model's Gene mentions are outside BC5CDR's guideline)."""
    return CORPUS_TYPES[spec.replace(":test", ":dev")] if spec.startswith("bc5cdr:") \
        else CORPUS_TYPES[spec]


def scoring_of(specs: list[str], max_docs: int | None = None) -> dict[str, tuple]:
    """``spec → (gold, types, resolve)`` for each corpus: the gold documents with their types
    mapped to ours (every type kept: each row scores its own, :func:`table_views`), the types
    the corpus is scored on, and the ID mapping scores use — None for BC5CDR (as ``linker
    score`` without ``--kb``), the ``bc5cdr`` KB's alternatives for the other corpora (as
    :mod:`eval.ood_dev`: NCBI's OMIM IDs, BioRED's MeSH supplementary IDs; loaded once)."""
    from data_tools.registry import load_kb

    resolve = load_kb("bc5cdr").resolve \
        if any(not s.startswith("bc5cdr:") for s in specs) else None
    return {spec: (gold_of(spec, max_docs), corpus_types(spec),
                   None if spec.startswith("bc5cdr:") else resolve) for spec in specs}


def table_views(spec: str, types: tuple[str, ...], model_types) -> dict[str, tuple[str, ...]]:
    """The dev-table rows corpus ``spec`` gives, label → types scored, labelled as
    :func:`eval.ood_dev.table_rows` labels them: the corpus on its own types, and BioRED dev's
    genes as a row of their own when the model predicts genes."""
    views = {row_label(spec, types): types}
    if spec == "biored:dev" and "Gene" in model_types:
        views[row_label(spec, ("Gene",))] = ("Gene",)
    return views


def ablation_table_rows(annotator, model: str, corpora: dict[str, tuple],
                        undeclared: bool = False) -> list[dict]:
    """The ablation rows of ``annotator``'s declared pipeline on each corpus
    (``corpora``: :func:`scoring_of`'s), one record a row: the model, corpus, row label, steps
    switched off, spans, seconds, F1 by mode and type on the corpus's types, and ``table``:
    the strict F1 of each dev-table row the corpus gives (:func:`table_views`); with
    ``undeclared``, a "with STEP" row for each registered step the declaration leaves out
    (:func:`eval.setting_rows.undeclared_rows`)."""
    rows = ablation_rows(annotator.pipeline)
    if undeclared:
        rows += undeclared_rows(annotator.pipeline)
    model_types = annotator.model.config.types
    out = []
    for spec, (gold, types, resolve) in corpora.items():
        views = table_views(spec, types, model_types)
        gold_views = {label: only_types(gold, view) for label, view in views.items()}
        for row, _, steps, pred, seconds in row_predictions(annotator, gold, rows):
            reports = {label: report_of(gold, pred, view, resolve)
                       for label, view in views.items()}
            main = reports[next(iter(views))]
            record = {"model": model, "corpus": spec, "row": row.label,
                      "steps_off": list(row.disable), "steps": steps,
                      "steps_added": [o for o in row.overrides if "=" not in o],
                      "spans": sum(a.type in types for d in pred for a in d.annotations),
                      "seconds": round(seconds, 1),
                      **{m: main[m]["f1"] for m in MODES},
                      **{f"{m}_by_type": {t: r["f1"] for t, r in main[m]["by_type"].items()}
                         for m in MODES},
                      "table": {label: rep["strict"]["f1"] for label, rep in reports.items()},
                      "strict_by_document": {
                          label: document_counts(gold_views[label], only_types(pred, view),
                                                 resolve)
                          for label, view in views.items()}}
            print({k: record[k] for k in ("corpus", "row", "spans", "table")}, flush=True)
            out.append(record)
    return out


def combined_rows(rows: list[dict], key: str = "table") -> dict[tuple[str, str], dict]:
    """``(model, row label) → {dev-table row: strict F1}`` gathered over the corpora (with
    ``key="strict_by_document"``: each dev-table row's per-document counts instead)."""
    out: dict[tuple[str, str], dict] = {}
    for row in rows:
        out.setdefault((row["model"], row["row"]), {}).update(row.get(key, {}))
    return out


def gain_interval(every: dict, without: dict, samples: int = BOOTSTRAP_SAMPLES) -> str:
    """The table's "gain, 95 % interval" cell: what a step adds to the combined score (all
    declared steps against the step off) and the interval of that gain over paired resamples
    of the dev documents (:func:`eval.paired_bootstrap.paired_bootstrap`); empty for records
    without per-document counts (written before they were recorded).

    Why beside the verdict and not in it: the verdict is the rule the default was re-earned
    under (issue 43); the interval says which of its keeps and drops another draw of dev
    documents could reverse (docs/decisions/0001-dev-table-decides.md)."""
    if not every or not without:
        return ""
    row = paired_bootstrap(without, every, samples)[COMBINED]
    return f"{row['delta']:+.4f} [{row['low']:+.4f}, {row['high']:+.4f}]"


def step_verdict(every: dict[str, float], without: dict[str, float],
                 min_gain: float = MIN_COMBINED_GAIN) -> str:
    """Whether a rule step earns its place in the default, from the dev-table scores with every
    declared step (``every``) and with that step off (``without``): kept if switching it off
    costs the combined score at least ``min_gain`` and no row loses more from it than the
    row it helps most gains (issue 43: a step that trades one corpus's guideline for
    another's is not a default)."""
    gains = {label: every[label] - without[label] for label in every}
    gain = plain_mean(every) - plain_mean(without)
    if gain < min_gain:
        return f"drop (combined {gain:+.4f})"
    worst = min(gains, key=gains.__getitem__)
    best = max(gains, key=gains.__getitem__)
    if -gains[worst] > gains[best]:
        return f"drop (costs {worst} {-gains[worst]:.4f}, gains {best} {gains[best]:.4f})"
    return f"keep (combined {gain:+.4f})"


def earning_table(result: dict) -> list[str]:
    """The rule re-earning table: per model and row, every dev-table row's strict F1, the
    combined score, its change from all declared steps, and each step's verdict
    (:func:`step_verdict`). Empty unless every row of the widened dev table was scored."""
    combined = combined_rows(result["rows"])
    counts = combined_rows(result["rows"], "strict_by_document")
    lines: list[str] = []
    for model in dict.fromkeys(r["model"] for r in result["rows"]):
        every = combined.get((model, "all declared steps"), {})
        if len(every) < len(DEV_TABLE) + 1:  # the table's rows, BioRED's genes one more
            continue
        labels = list(every)
        header = ["row", *labels, "combined", "Δ combined", "verdict",
                  "gain, 95 % interval"]
        lines += [f"Rule re-earning, model {model} (combined: plain mean of the "
                  f"{len(labels)} strict F1 rows; a step is kept when switching it off costs "
                  f"≥ {MIN_COMBINED_GAIN} combined and no row loses more than another gains, "
                  "and a step left out is declared on the same terms; the interval: the "
                  "step's gain over paired resamples of the dev documents)",
                  "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
        base = plain_mean(every)
        declared = counts.get((model, "all declared steps"), {})
        for (m, label), scores in combined.items():
            if m != model:
                continue
            if label.startswith("without "):
                verdict = step_verdict(every, scores)
                interval = gain_interval(declared, counts.get((model, label), {}))
            elif label.startswith("with "):  # a step left out: would it earn its place now?
                verdict = step_verdict(scores, every).replace("keep", "declare", 1) \
                    .replace("drop", "stay off", 1)
                interval = gain_interval(counts.get((model, label), {}), declared)
            else:
                verdict = interval = ""
            lines.append("| " + " | ".join([label, *(f"{scores[k]:.4f}" for k in labels),
                                            f"{plain_mean(scores):.4f}",
                                            f"{plain_mean(scores) - base:+.4f}", verdict,
                                            interval]) + " |")
        lines.append("")
    return lines


def steps_off_cell(row: dict, every: int) -> str:
    """The "steps off" cell: the steps' names, ``—`` for none, and for the row with every rule
    step off their count (the JSON lists them)."""
    off = row["steps_off"]
    if row.get("steps_added"):  # a "with STEP" row: nothing off, a step added
        return "+ " + ", ".join(row["steps_added"])
    if not off:
        return "—"
    if len(off) == every > 1:
        return f"all {every} rule steps"
    return ", ".join(off)


def markdown(result: dict) -> str:
    """One table a corpus: model, row, steps off, strict F1, strict F1 by type, partial and
    mention F1."""
    lines: list[str] = []
    for corpus in result["corpora"]:
        spec = corpus["corpus"]
        rows = [r for r in result["rows"] if r["corpus"] == spec]
        if not rows:
            continue
        types = sorted({t for r in rows for t in r["strict_by_type"]} & set(corpus["types"]))
        names = ("as each model ships" if result["kb_names_from"] == "the model's"
                 else f"mined from {', '.join(result['kb_names_from']) or 'nothing'}")
        lines += [f"{spec}, {corpus['documents']} documents, {' + '.join(corpus['types'])} "
                  f"scored{corpus['ids']}; KB names {names}.", ""]
        header = ["model", "row", "steps off", "strict F1", *(f"{t} strict" for t in types),
                  "partial F1", "mention F1"]
        lines += ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
        for row in rows:
            every = len(result["rule_steps"][row["model"]])
            cells = [row["model"], row["row"], steps_off_cell(row, every),
                     f"{row['strict']:.4f}",
                     *(f"{row['strict_by_type'].get(t, 0.0):.4f}" for t in types),
                     f"{row['partial']:.4f}", f"{row['mentions']:.4f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(earning_table(result) + lines)


def main(argv: list[str] | None = None) -> int:
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "test"], default="dev")
    parser.add_argument("--models", nargs="+", default=["shipped"],
                        help="model directories; 'shipped': the default model; 'git:REV': the "
                             "default model as committed at REV (e.g. the one before a retrain)")
    parser.add_argument("--corpora", nargs="+", default=["bc5cdr:SPLIT"], choices=CORPORA,
                        metavar="SPEC",
                        help="corpora to score, of " + ", ".join(CORPORA) + " (bc5cdr:SPLIT: "
                             "BC5CDR's --split; ncbi_disease:dev and biored:dev scored as "
                             "eval.ood_dev scores them)")
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"],
                        help="dev only: corpora whose annotation texts extend the KB")
    parser.add_argument("--dev-table", action="store_true",
                        help="the widened dev table (eval.ood_dev): its corpora, names mined "
                             "from training splits only, and the rule re-earning table")
    parser.add_argument("--shipped-packed-index", action="store_true",
                        help="link each model through the shipped packed index, as "
                             "eval.ood_dev --shipped-packed-index (a model trained with a "
                             "frozen entity tower and no index of its own)")
    parser.add_argument("--undeclared", action="store_true",
                        help="also a 'with STEP' row for each registered step the declaration "
                             "leaves out, added with its defaults (--set STEP)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.dev_table:
        if args.split != "dev":
            parser.error("--dev-table scores dev sets: leave out --split test")
        args.corpora, args.kb_names_from = list(DEV_TABLE), list(FAIR_NAMES)
    specs = corpus_specs(args.corpora, args.split)
    corpora = scoring_of(specs, args.max_docs)
    fair = args.split == "dev"
    rows, pipelines, rule_steps = [], {}, {}
    for label in args.models:
        with tempfile.TemporaryDirectory() as tmp:  # the model folder lives while its rows run
            source = model_source(label, Path(tmp) / "model")
            if args.shipped_packed_index and source is not None:
                source = model_with_packed_index_of(source, Path(tmp) / "shipped_index")
            # the packed index kept: the names that differ are searched exactly beside it
            (Path(tmp) / "names").mkdir()
            directory = (model_with_names_from(args.kb_names_from, Path(tmp) / "names",
                                               source, keep_packed_index=True)
                         if fair else source)
            annotator = load_annotator(AnnotateSettings(
                model_dir=str(directory) if directory else None))
            pipelines[label] = annotator.pipeline.describe()
            rule_steps[label] = list(plain_row(annotator.pipeline).disable)
            rows += ablation_table_rows(annotator, label, corpora, args.undeclared)
    result = {"command": command_line("accuracy_ablation", argv), "machine": machine(),
              "split": args.split,
              "corpora": [{"corpus": spec, "documents": len(gold), "types": list(types),
                           "ids": "" if resolve is None else ", IDs through the bc5cdr KB"}
                          for spec, (gold, types, resolve) in corpora.items()],
              "kb_names_from": args.kb_names_from if fair else "the model's",
              "pipelines": pipelines, "rule_steps": rule_steps, "rows": rows}
    write_results(args.out or f"eval/results/accuracy_ablation_{args.split}", result,
                  markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
