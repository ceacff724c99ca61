"""The widened dev table, the one place choices are made: BC5CDR dev, NCBI disease dev,
BioRED dev (chemicals and diseases; genes), and the GNormPlus and NLM-Gene dev folds, each
scored on its own types with mined names from training splits only, and one combined score
(:func:`combined_score`: the plain mean of the rows' strict F1).

    python -m eval.ood_dev [--model DIR] [--corpora bc5cdr:dev ncbi_disease:dev biored:dev
                           gnormplus:dev nlmgene:dev] [--kb-names-from CORPUS...]
                           [--disable STEP,STEP] [--set STEP.PARAM=VALUE]... [--pipeline FILE]
                           [--threshold G] [--max-span-len N] [--out eval/results/ood_dev]
                           [--confidence-features FILE] [--predictions DIR]
    python -m eval.ood_dev --confidence-fit FILE [--model DIR] [--out DIR]

Why: a choice that wins on BC5CDR dev and loses on other groups' abstracts is a loss
(issue 29). Each corpus is annotated from its stripped text exactly as ``linker annotate``
does (the model's own KB and declared pipeline, changed by the options given: ``--disable``,
``--set``, ``--pipeline``, ``--threshold`` and ``--max-span-len`` mean what they mean to
``linker annotate``), in one process so the model and KB load once, and scored with
``linker score``'s scorer:

* BioRED dev: gold types mapped to ours (ChemicalEntity → Chemical,
  DiseaseOrPhenotypicFeature → Disease, GeneOrGeneProduct → Gene; organisms, variants and cell
  lines left out); **Chemical + Disease** scored with predicted Gene mentions left out (strict,
  partial, mentions, per type, Chemical precision), the **gene confusion** (share of gold gene
  spans that a Chemical or Disease prediction overlaps), and, when the model predicts genes,
  Gene mention and strict F1 (NCBI Gene IDs);
* NCBI disease dev: Disease only, IDs through the KB's alternative IDs;
* BC5CDR dev (the shipped KB holds dev's mined names: the default ``--kb-names-from``
  rebuilds them from training splits, :data:`FAIR_NAMES`, for a fair figure);
* the gene corpora (GNormPlus, NLM-Gene; ``:dev`` folds, ``:train`` or ``:test``): Gene only —
  Gene mention F1, strict F1 (NCBI Gene IDs) and the gene confusion. Models trained on their
  ``:fit`` part are chosen on ``:dev``; the shipped model trained on the whole training files,
  so its ``:dev`` figures are optimistic; their test splits are for reporting once, never for
  choosing.

* BioRED dev's gold genes by species (human, mouse, other), each group's count and how many
  the model links (a model that predicts genes);
* the species rows (a model that predicts Species): BioRED dev's organisms and the S800 and
  LINNAEUS dev folds, Species strict F1 (NCBI Taxonomy IDs), printed beside the table and kept
  out of its combined score, which stays comparable with models that predict no species.

Each row of the combined score also records its per-document strict counts
(``strict_by_document``), so two runs can be compared document by document
(:mod:`eval.paired_bootstrap`: is a difference more than the dev documents' sampling?).

Never trained on: BioRED dev is the out-of-domain development set.

The annotations' confidence (:mod:`e2e_linker.collective.confidence`) is fitted here too:
``--confidence-features`` writes each corpus's predictions labelled by strict correctness
(:func:`labelled_predictions`), ``--confidence-fit`` fits the model on them
(:data:`CONFIDENCE_FIT`, BioRED dev held out), writes the model's ``confidence.json`` and the
reliability report with its plot (docs/results.md, "One confidence").
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from data_tools.documents import Annotation, Document
from data_tools.formats import write_documents
from data_tools.formats.mentions_jsonl import LINK_METHOD
from data_tools.formats.namespaces import kb_key
from data_tools.registry import apply_type_map, dataset_of, load_corpus, load_kb
from e2e_linker.normalizer.pools import TYPE_ALIASES
from e2e_linker.scoring import kbid, normalized_ids, score
from eval.paired_bootstrap import document_counts
from eval.reporting import command_line, machine, write_results

if TYPE_CHECKING:
    from e2e_linker.api import Linker
    from e2e_linker.collective.confidence import ConfidenceModel

RESULTS = Path(__file__).parent / "results" / "ood_dev"
MODES = ("strict", "partial", "mentions")
#: what each corpus is scored on: its gold types kept, and the KB whose alternative IDs map to
#: primary ones on both sides
CORPUS_TYPES = {"biored:dev": ("Chemical", "Disease"), "ncbi_disease:dev": ("Disease",),
                "bc5cdr:dev": ("Chemical", "Disease"),
                **{f"{name}:{split}": ("Gene",) for name in ("gnormplus", "nlmgene")
                   for split in ("train", "dev", "test")},
                **{f"{name}:dev": ("Species",) for name in ("s800", "linnaeus")}}
#: the widened dev table: every dev set, each scored on its own types (the gene corpora's dev
#: folds: data_tools.registry.in_dev_fold)
DEV_TABLE = ("bc5cdr:dev", "ncbi_disease:dev", "biored:dev", "gnormplus:dev", "nlmgene:dev")
#: the mined names a fair dev table links with: training splits only, never a dev set's own
FAIR_NAMES = ("bc5cdr:train", "ncbi_disease:train", "gnormplus:fit", "nlmgene:fit",
              "biored:train")
#: the species rows, reported beside the table and outside its combined score (which stays
#: comparable with models that predict no species): the species corpora's dev folds, and
#: BioRED dev's organisms as a row of their own
SPECIES_DEV = ("s800:dev", "linnaeus:dev")
#: BioRED's organisms, kept in its gold for the species row (the registry leaves them out)
BIORED_SPECIES = {"OrganismTaxon": "Species"}


def row_label(corpus: str, types: tuple[str, ...]) -> str:
    """A dev-table row's name: the corpus and the types it is scored on."""
    return f"{corpus} ({', '.join(types)})"


def plain_mean(scores: dict[str, float]) -> float:
    """The combined score of some rows' strict F1: their plain mean, so no corpus's guideline
    outvotes the others by size (0 for no rows)."""
    return round(sum(scores.values()) / len(scores), 4) if scores else 0.0


def table_rows(rows: list[dict]) -> dict[str, float]:
    """The strict F1 of each row of the dev table that the combined score weighs: each
    corpus of :data:`DEV_TABLE` on its own types, and BioRED dev's genes as a row of their
    own."""
    out = {}
    for row in rows:
        if row["corpus"] in SPECIES_DEV:
            continue
        out[row_label(row["corpus"], CORPUS_TYPES[row["corpus"]])] = \
            row["scores"]["strict"]["f1"]
        if row["corpus"] == "biored:dev" and "gene" in row:
            out[row_label("biored:dev", ("Gene",))] = row["gene"]["strict"]["f1"]
    return out


def species_rows(rows: list[dict]) -> dict[str, float]:
    """The strict F1 of each species row: BioRED dev's organisms (when the model predicts
    species) and the species corpora's dev folds (:data:`SPECIES_DEV`)."""
    out = {}
    for row in rows:
        if row["corpus"] == "biored:dev" and "species" in row:
            out[row_label("biored:dev", ("Species",))] = row["species"]["strict"]["f1"]
        elif row["corpus"] in SPECIES_DEV:
            out[row_label(row["corpus"], ("Species",))] = row["scores"]["strict"]["f1"]
    return out


def combined_score(rows: list[dict]) -> float:
    """The dev table's one number: :func:`plain_mean` of :func:`table_rows` — every dev set
    (and BioRED's genes) weighs the same."""
    return plain_mean(table_rows(rows))


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    """``--disable``, ``--set`` (repeatable), ``--pipeline``, ``--threshold`` and
    ``--max-span-len``, worded as ``linker annotate`` words them: one spelling for every
    evaluation that changes how the model annotates (read by :func:`pipeline_settings` and
    :func:`annotate_flags`)."""
    parser.add_argument("--disable", default="", metavar="STEP,STEP",
                        help="pipeline steps left out, as linker annotate --disable")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="STEP.PARAM=VALUE",
                        help="a step parameter, as linker annotate --set (a step the pipeline "
                             "lacks is added); repeatable")
    parser.add_argument("--pipeline", default=None, metavar="FILE",
                        help="a pipeline declaration instead of the model's pipeline.toml")
    parser.add_argument("--threshold", type=float, default=None,
                        help="mention threshold γ (default: the model's)")
    parser.add_argument("--max-span-len", type=int, default=None,
                        help="longest span scored, in word pieces (default: the model's)")


def pipeline_settings(args: argparse.Namespace) -> dict:
    """The :class:`~e2e_linker.collective.settings.AnnotateSettings` fields the options of
    :func:`add_pipeline_options` set (checked there: an unknown step or parameter stops the
    run before the model loads)."""
    return {"disable": args.disable, "overrides": tuple(args.overrides),
            "pipeline": args.pipeline, "threshold": args.threshold,
            "max_span_len": args.max_span_len}


def annotate_flags(args: argparse.Namespace) -> list[str]:
    """The options of :func:`add_pipeline_options` as ``linker annotate`` flags (what an
    evaluation running the command passes, and what a report prints)."""
    flags = ["--disable", args.disable] if args.disable else []
    for item in args.overrides:
        flags += ["--set", item]
    for flag, value in (("--pipeline", args.pipeline), ("--threshold", args.threshold),
                        ("--max-span-len", args.max_span_len)):
        if value is not None:
            flags += [flag, str(value)]
    return flags


def gold_of(spec: str, max_docs: int | None = None) -> list[Document]:
    """A corpus with its annotation types mapped to the model's."""
    docs = load_corpus(spec, max_docs)
    dataset = dataset_of(spec)
    # NCBI's four disease classes: the normalizer's aliases (its dataset carries no map)
    type_map = dataset.type_map if dataset and dataset.type_map else TYPE_ALIASES
    if spec.startswith("biored:"):  # its organisms too, for the species row
        type_map = {**type_map, **BIORED_SPECIES}
    apply_type_map(docs, type_map)
    return docs


def only_types(docs: list[Document], types: tuple[str, ...]) -> list[Document]:
    """Copies of ``docs`` keeping the annotations of ``types``."""
    out = copy.deepcopy(docs)
    for doc in out:
        for passage in doc.passages:
            passage.annotations = [a for a in passage.annotations if a.type in types]
    return out


def overlapped_share(gold: list[Document], pred: list[Document], gold_type: str,
                     pred_types: tuple[str, ...]) -> tuple[int, int]:
    """(gold ``gold_type`` spans overlapped by a prediction of ``pred_types``, all of them)."""
    by_id = {d.id: d for d in pred}
    hit = total = 0
    for doc in gold:
        spans = [(a.start, a.end) for a in by_id[doc.id].annotations if a.type in pred_types] \
            if doc.id in by_id else []
        for ann in doc.annotations:
            if ann.type != gold_type:
                continue
            total += 1
            hit += any(s < ann.end and ann.start < e for s, e in spans)
    return hit, total


#: the gene rows' species groups: human, mouse, and every other species
SPECIES_GROUPS = {"9606": "human", "10090": "mouse"}


def genes_by_species(gold: list[Document], pred: list[Document], taxa: dict[str, str],
                     resolve=None) -> dict[str, dict[str, int]]:
    """Gold Gene mentions by the species of their gene (human, mouse, other; ``taxa``: gene ID
    → NCBI taxon, from a KB that holds every species' genes), each with how many of them a
    predicted Gene span of the same offsets links to one of their IDs (``resolve`` maps IDs
    on both sides, as the scorer does).

    Why: a gene model's strict figure hides where its misses are; the species issue (45) asks
    whether genes of species other than human and mouse are now linked. IDs compare as the
    scorer compares them (:func:`~e2e_linker.scoring.normalized_ids`: ``NCBIGene:672`` is
    ``672``)."""
    found: dict[tuple[str, int, int], set[str]] = {}
    for doc in pred:
        for ann in doc.annotations:
            if ann.type == "Gene":
                found.setdefault((doc.id, ann.start, ann.end), set()).update(
                    normalized_ids(ann, resolve))
    out: dict[str, dict[str, int]] = {}
    for doc in gold:
        for ann in doc.annotations:
            if ann.type != "Gene" or not ann.concept_ids:
                continue
            taxon = next((taxa[kb_key(c)] for c in ann.concept_ids if kb_key(c) in taxa), None)
            group = SPECIES_GROUPS.get(taxon, "other" if taxon else "not in the KB")
            counts = out.setdefault(group, {"gold": 0, "linked": 0})
            counts["gold"] += 1
            ids = set(normalized_ids(ann, resolve))
            counts["linked"] += bool(ids & found.get((doc.id, ann.start, ann.end), set()))
    return dict(sorted(out.items()))


def report_of(gold: list[Document], pred: list[Document], types: tuple[str, ...],
              resolve) -> dict:
    """Scores of ``pred`` against ``gold`` on ``types`` in every mode, by type."""
    gold_t, pred_t = only_types(gold, types), only_types(pred, types)
    out: dict = {}
    for mode in MODES:
        rep = score(gold_t, pred_t, mode, by_type=True, resolve=resolve)
        out[mode] = {"p": round(rep.precision, 4), "r": round(rep.recall, 4),
                     "f1": round(rep.f1, 4),
                     "by_type": {t: {"p": round(r.precision, 4), "r": round(r.recall, 4),
                                     "f1": round(r.f1, 4)} for t, r in rep.per_type.items()
                                 if t in types}}
    return out


def labelled_types(spec: str) -> tuple[str, ...]:
    """The types a corpus's predictions are labelled on: its scored types
    (:data:`CORPUS_TYPES`), and for BioRED dev its genes too (its gold has them in full,
    though its dev-table row scores chemicals and diseases: the genes have a row of their
    own)."""
    scored = CORPUS_TYPES[spec]
    return (*scored, "Gene") if spec == "biored:dev" else scored


def labelled_predictions(gold: list[Document], pred: list[Document], types: tuple[str, ...],
                         resolve) -> list[dict]:
    """Each predicted annotation of ``types``: its ``mention_score``, ``link_score``,
    ``link_method`` and ``type``, and ``correct`` — whether a gold annotation has its span,
    type and concept IDs (compared as the strict scorer compares them:
    :func:`~e2e_linker.scoring.kbid` with ``resolve``). What the confidence model is fitted on
    and checked against (:func:`confidence_fit`)."""
    gold_keys = {(doc.id, a.start, a.end, a.type, kbid(a, resolve))
                 for doc in gold for a in doc.annotations if a.type in types}
    return [{"mention_score": a.mention_score, "link_score": a.link_score,
             "link_method": a.infons.get(LINK_METHOD), "type": a.type,
             "correct": (doc.id, a.start, a.end, a.type, kbid(a, resolve)) in gold_keys}
            for doc in pred for a in doc.annotations if a.type in types]


def predictions_file(folder: str | Path, spec: str) -> Path:
    """Where ``--predictions`` writes a corpus's predictions: ``nlmgene_dev.pubtator`` for
    ``nlmgene:dev`` (:func:`corpus_of_file` reads the name back)."""
    return Path(folder) / f"{spec.replace(':', '_')}.pubtator"


def corpus_of_file(path: str | Path) -> str:
    """The corpus a :func:`predictions_file` holds, from its name; a name of no corpus of
    :data:`CORPUS_TYPES` is an error naming the file."""
    name = Path(path).name.removesuffix(".pubtator")
    spec = ":".join(name.rsplit("_", 1))
    if spec not in CORPUS_TYPES:
        raise ValueError(f"{path}: not a predictions file of eval.ood_dev --predictions "
                         f"(its name names no corpus of {sorted(CORPUS_TYPES)})")
    return spec


def evaluate(linker, spec: str, resolve, max_docs: int | None = None,
             types: tuple[str, ...] | None = None, gene_taxa: dict[str, str] | None = None,
             labelled: dict[str, list[dict]] | None = None,
             predictions: str | Path | None = None) -> dict:
    """Annotate one corpus from its stripped text and score it (see the module docstring) on
    ``types`` (default: the corpus's :data:`CORPUS_TYPES`); with ``gene_taxa``, its gold genes
    by species too (:func:`genes_by_species`); with ``labelled``, its predictions labelled for
    the confidence model (:func:`labelled_predictions`, on the types scored and BioRED's
    genes) are added under ``spec``; with ``predictions`` (a folder), the predictions are
    written there as PubTator (:func:`predictions_file`; what :mod:`eval.changed_links`
    compares)."""
    gold = gold_of(spec, max_docs)
    started = time.perf_counter()
    pred = linker.annotate(gold, replace=True)
    seconds = time.perf_counter() - started
    if predictions is not None:
        Path(predictions).mkdir(parents=True, exist_ok=True)
        write_documents(pred, predictions_file(predictions, spec), "pubtator")
    if labelled is not None:
        labelled[spec] = labelled_predictions(gold, pred, types or labelled_types(spec),
                                              resolve)
    scored = types or CORPUS_TYPES[spec]
    row: dict = {"corpus": spec, "documents": len(gold), "annotate_s": round(seconds, 1),
                 "predicted": {t: sum(a.type == t for d in pred for a in d.annotations)
                               for t in sorted({a.type for d in pred for a in d.annotations})},
                 "scores": report_of(gold, pred, scored, resolve)}
    if spec not in SPECIES_DEV:  # the combined score's rows: what eval.paired_bootstrap reads
        row["strict_by_document"] = {row_label(spec, scored): document_counts(
            only_types(gold, scored), only_types(pred, scored), resolve)}
    hit, total = overlapped_share(gold, pred, "Gene", ("Chemical", "Disease"))
    if total:
        row["gene_spans_predicted_chemical_or_disease"] = {
            "overlapped": hit, "gold_gene_spans": total, "share": round(hit / total, 4)}
        if "Gene" in linker.annotator.model.config.types:
            gene = report_of(gold, pred, ("Gene",), resolve)
            row["gene"] = {mode: {k: gene[mode][k] for k in ("p", "r", "f1")}
                           for mode in MODES}
            if spec == "biored:dev":  # its genes: a row of their own (table_rows)
                row["strict_by_document"][row_label(spec, ("Gene",))] = document_counts(
                    only_types(gold, ("Gene",)), only_types(pred, ("Gene",)), resolve)
            if gene_taxa is not None:
                row["genes_by_species"] = genes_by_species(gold, pred, gene_taxa, resolve)
    if spec not in SPECIES_DEV and "Species" in linker.annotator.model.config.types \
            and any(a.type == "Species" for d in gold for a in d.annotations):
        species = report_of(gold, pred, ("Species",), resolve)
        row["species"] = {mode: {k: species[mode][k] for k in ("p", "r", "f1")}
                          for mode in MODES}
    return row


def own_guideline(spec: str, config) -> str | None:
    """The guideline a corpus is read under with ``--own-guidelines``: the model's guideline
    named like the corpus (``ncbi_disease:dev`` → ``ncbi_disease``), else None (the model's
    default)."""
    name = spec.partition(":")[0]
    return name if name in config.guidelines else None


def markdown(result: dict) -> str:
    """The table of one run."""
    lines = [f"Model {result['model']}, options `{result['annotate_options'] or 'default'}`"
             f" ({result['machine']})", "",
             "| corpus (types scored) | strict P | strict R | strict F1 | Chemical P | "
             "Chemical F1 | Disease F1 | partial F1 | mention F1 | genes as Chem/Dis | "
             "Gene mention F1 | Gene strict F1 | s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        s = row["scores"]
        by_type = s["strict"]["by_type"]
        chem = by_type.get("Chemical", {})
        confusion = row.get("gene_spans_predicted_chemical_or_disease")
        lines.append(" | ".join([
            f"| {row_label(row['corpus'], CORPUS_TYPES[row['corpus']])}",
            f"{s['strict']['p']:.4f}", f"{s['strict']['r']:.4f}", f"{s['strict']['f1']:.4f}",
            f"{chem['p']:.4f}" if chem else "—", f"{chem['f1']:.4f}" if chem else "—",
            f"{by_type['Disease']['f1']:.4f}" if "Disease" in by_type else "—",
            f"{s['partial']['f1']:.4f}", f"{s['mentions']['f1']:.4f}",
            f"{confusion['share']:.3f} ({confusion['overlapped']}/"
            f"{confusion['gold_gene_spans']})" if confusion else "—",
            f"{row['gene']['mentions']['f1']:.4f}" if "gene" in row else "—",
            f"{row['gene']['strict']['f1']:.4f}" if "gene" in row else "—",
            f"{row['annotate_s']} |"]))
    scores = table_rows(result["rows"])
    lines += ["", f"Combined score (plain mean of {len(scores)} strict F1 rows: "
              + ", ".join(scores) + f"): **{combined_score(result['rows']):.4f}**"]
    for row in result["rows"]:
        if row.get("genes_by_species"):
            lines += ["", f"{row['corpus']} gold genes by species, linked (span and ID) / all: "
                      + ", ".join(f"{group} {c['linked']}/{c['gold']}"
                                  for group, c in row["genes_by_species"].items())]
    species = species_rows(result["rows"])
    if species:
        lines += ["", "Species (strict F1; outside the combined score): " + ", ".join(
            f"{label} {value:.4f}" for label, value in species.items())]
    read = {row["corpus"]: row.get("guideline") for row in result["rows"]}
    if any(read.values()):  # a model trained with guideline tags
        lines += ["", "Guideline each corpus was read under: " + ", ".join(
            f"{corpus} {name}" for corpus, name in read.items())]
    return "\n".join(lines) + "\n"


#: where the confidence model's reliability report goes
CONFIDENCE_RESULTS = Path(__file__).parent / "results" / "dev_table" / "confidence"
#: the dev sets the confidence model is fitted on; BioRED dev, never trained on and the
#: out-of-domain set, is held out to check it (docs/results.md, "One confidence")
CONFIDENCE_FIT = ("bc5cdr:dev", "ncbi_disease:dev", "gnormplus:dev", "nlmgene:dev")
CONFIDENCE_HELD_OUT = "biored:dev"
#: the rows of the reliability report: the held-out set, and BC5CDR dev (fitted on)
CONFIDENCE_REPORTED = (CONFIDENCE_HELD_OUT, "bc5cdr:dev")
#: a deciding step gets a feature of its own with at least this many fitting rows
MIN_METHOD_ROWS = 20
RELIABILITY_BINS = 10


def labelled_annotation(row: dict) -> Annotation:
    """An annotation carrying what :func:`labelled_predictions` kept of one prediction (what
    the confidence features read)."""
    return Annotation(0, 0, "", type=row["type"], mention_score=row["mention_score"],
                      link_score=row["link_score"],
                      infons={LINK_METHOD: row["link_method"]} if row["link_method"] else {})


def reliability(confidences: list[float], correct: list[bool],
                bins: int = RELIABILITY_BINS) -> dict:
    """Predicted confidence against observed accuracy in ``bins`` equal-width bins (each with
    its count, mean confidence and accuracy; empty bins left out), the expected calibration
    error (ECE: the count-weighted mean gap between a bin's confidence and its accuracy) and
    the Brier score (mean squared error of the confidence as a probability)."""
    rows = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [(c, y) for c, y in zip(confidences, correct, strict=True)
                  if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if inside:
            rows.append({"lo": lo, "hi": hi, "count": len(inside),
                         "confidence": round(sum(c for c, _ in inside) / len(inside), 4),
                         "accuracy": round(sum(y for _, y in inside) / len(inside), 4)})
    n = len(confidences)
    ece = sum(r["count"] * abs(r["confidence"] - r["accuracy"]) for r in rows) / n if n else 0.0
    brier = sum((c - y) ** 2 for c, y in zip(confidences, correct, strict=True)) / n if n else 0.0
    return {"n": n, "accuracy": round(sum(correct) / n, 4) if n else 0.0,
            "ece": round(ece, 4), "brier": round(brier, 4), "bins": rows}


def confidence_fit(labelled: dict[str, list[dict]]) -> tuple[ConfidenceModel, dict]:
    """The confidence model fitted on :data:`CONFIDENCE_FIT`'s labelled predictions (steps
    with :data:`MIN_METHOD_ROWS` rows or more and every type seen get a one-hot feature of
    their own), and the reliability of it and of the fallback (the mention score alone) on
    each of :data:`CONFIDENCE_REPORTED`."""
    from collections import Counter

    from e2e_linker.collective.confidence import FALLBACK, features_of, fit_confidence

    rows = [r for spec in CONFIDENCE_FIT if spec in labelled for r in labelled[spec]]
    counts = Counter(r["link_method"] or "none" for r in rows)
    methods = sorted(m for m, c in counts.items() if c >= MIN_METHOD_ROWS)
    types = sorted({r["type"] for r in rows})
    features = [features_of(labelled_annotation(r), methods, types) for r in rows]
    fitted = {"label": "strict: span, type and concept ID as the strict scorer compares them",
              "fit_on": [s for s in CONFIDENCE_FIT if s in labelled], "rows": len(rows),
              "held_out": CONFIDENCE_HELD_OUT, "l2": 1.0,
              "method": "logistic regression, Newton's method (fit_confidence)",
              "names": "mined from training splits only (eval.ood_dev FAIR_NAMES)"}
    model = fit_confidence(features, [r["correct"] for r in rows], methods, types,
                           fitted=fitted)
    report = {}
    for spec in CONFIDENCE_REPORTED:
        if spec not in labelled:
            continue
        anns = [labelled_annotation(r) for r in labelled[spec]]
        correct = [r["correct"] for r in labelled[spec]]
        given = [model(a) for a in anns]
        report[spec] = {"model": reliability(given, correct),
                        "mention_score_alone": reliability([FALLBACK(a) for a in anns],
                                                           correct),
                        "by_type": by_type_means(anns, given, correct)}
    if CONFIDENCE_HELD_OUT in report:
        held = report[CONFIDENCE_HELD_OUT]["model"]
        model.fitted.update(held_out_ece=held["ece"], held_out_brier=held["brier"])
    return model, report


def by_type_means(anns: list[Annotation], given: list[float], correct: list[bool]
                  ) -> dict[str, dict[str, float]]:
    """Per type: how many predictions, their mean confidence and the share right.

    Why: one reliability curve over every type hides a model that rates one type high and
    another low (genes on another group's guideline); the report says which."""
    out: dict[str, dict[str, float]] = {}
    for ann, conf, right in zip(anns, given, correct, strict=True):
        row = out.setdefault(ann.type, {"n": 0, "confidence": 0.0, "accuracy": 0.0})
        row["n"] += 1
        row["confidence"] += conf
        row["accuracy"] += right
    return {t: {"n": r["n"], "confidence": round(r["confidence"] / r["n"], 4),
                "accuracy": round(r["accuracy"] / r["n"], 4)} for t, r in sorted(out.items())}


def reliability_plot(report: dict, path: Path) -> None:
    """One panel per reported set: bin confidence against bin accuracy (the model and the
    mention score alone), the diagonal, and each bin's count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(report), figsize=(5.5 * len(report), 5), squeeze=False)
    for ax, (spec, found) in zip(axes[0], report.items(), strict=True):
        ax.plot([0, 1], [0, 1], ":", color="grey", label="perfect calibration")
        for key, style, label in (("model", "o-", "confidence"),
                                  ("mention_score_alone", "s--", "mention score alone")):
            rel = found[key]
            ax.plot([b["confidence"] for b in rel["bins"]], [b["accuracy"] for b in rel["bins"]],
                    style, label=f"{label} (ECE {rel['ece']:.3f}, Brier {rel['brier']:.3f})")
        for b in found["model"]["bins"]:
            ax.annotate(str(b["count"]), (b["confidence"], b["accuracy"]), fontsize=7,
                        textcoords="offset points", xytext=(4, -10))
        role = "held out" if spec == CONFIDENCE_HELD_OUT else "fitted on"
        ax.set(title=f"{spec} ({role}, {found['model']['n']} predictions)", xlim=(0, 1),
               ylim=(0, 1), xlabel="predicted confidence (bin mean)",
               ylabel="observed strict accuracy")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def confidence_markdown(result: dict) -> str:
    """The reliability tables of :func:`confidence_main`."""
    lines = [f"Confidence model fitted on {', '.join(result['fit_on'])} "
             f"({result['model']['fitted']['rows']} predictions); held out: "
             f"{result['held_out']}.", ""]
    for spec, found in result["reliability"].items():
        lines += [f"**{spec}**: confidence ECE {found['model']['ece']:.4f}, Brier "
                  f"{found['model']['brier']:.4f}; mention score alone ECE "
                  f"{found['mention_score_alone']['ece']:.4f}, Brier "
                  f"{found['mention_score_alone']['brier']:.4f}; strict accuracy "
                  f"{found['model']['accuracy']:.4f} over {found['model']['n']} predictions",
                  "", "| confidence bin | count | mean confidence | observed accuracy |",
                  "|---|---|---|---|"]
        lines += [f"| {b['lo']:.1f}–{b['hi']:.1f} | {b['count']} | {b['confidence']:.3f} | "
                  f"{b['accuracy']:.3f} |" for b in found["model"]["bins"]]
        if found.get("by_type"):
            lines += ["", "| type | count | mean confidence | observed accuracy |",
                      "|---|---|---|---|"]
            lines += [f"| {t} | {r['n']} | {r['confidence']:.3f} | {r['accuracy']:.3f} |"
                      for t, r in found["by_type"].items()]
        lines.append("")
    return "\n".join(lines)


def confidence_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--confidence-fit FILE``: fit the confidence model on the labelled predictions in
    FILE, write it into the model directory (``--model``, default the shipped one) and the
    reliability report, with its plot, into ``--out`` (default :data:`CONFIDENCE_RESULTS`)."""
    from e2e_linker.collective.confidence import CONFIDENCE_FILE
    from e2e_linker.collective.model_dir import default_linker_dir

    labelled = json.loads(Path(args.confidence_fit).read_text())
    model, report = confidence_fit(labelled)
    model_dir = Path(args.model) if args.model else default_linker_dir()
    (model_dir / CONFIDENCE_FILE).write_text(json.dumps(model.to_json(), indent=2) + "\n")
    out = Path(CONFIDENCE_RESULTS if args.out == str(RESULTS) else args.out)
    out.mkdir(parents=True, exist_ok=True)
    reliability_plot(report, out / "reliability.png")
    result = {"command": command_line("ood_dev", argv), "fit_on": model.fitted["fit_on"],
              "held_out": CONFIDENCE_HELD_OUT, "model": model.to_json(),
              "reliability": report}
    write_results(out, result, confidence_markdown(result))
    return 0


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The options that say which model and KB a dev-table run links with (read by
    :func:`dev_linker`)."""
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--kb-names-from", nargs="*", default=list(FAIR_NAMES),
                        help="rebuild the model's mined names from these corpora only "
                             "(default: the training splits; none: the model's own, which "
                             "hold BC5CDR dev's and the gene corpora's whole files)")
    parser.add_argument("--shipped-kb", action="store_true",
                        help="link against the shipped model's KB (manifest, mined names, "
                             "packed index) instead of the model's own: compares detection "
                             "and typing on one KB (eval.models.model_with_kb_of)")
    parser.add_argument("--shipped-packed-index", action="store_true",
                        help="link against the model's own KB through the shipped model's "
                             "packed index: for a model whose KB adds name-only types "
                             "(lexical_types, e.g. genes) to the shipped Chemical/Disease "
                             "names (eval.models.model_with_packed_index_of)")
    add_pipeline_options(parser)


def dev_linker(args: argparse.Namespace, tmp: Path) -> Linker:
    """The linker a dev-table run annotates with: ``args.model`` (default: shipped), its KB
    or the shipped one's, its mined names rebuilt from ``args.kb_names_from`` (model copies
    written under ``tmp``, which must outlive the linker), the pipeline changed as the
    options say (:func:`add_model_options`).

    Why one function: every module that scores the dev table (this one, and
    :mod:`eval.error_classes`, which lists the errors behind its figures) must link exactly
    as the table does, or its figures explain another run."""
    from e2e_linker.api import Linker
    from e2e_linker.collective.settings import AnnotateSettings

    settings = AnnotateSettings(**pipeline_settings(args))  # a bad step: stopped here
    model_dir = args.model
    if args.shipped_kb and args.model:
        from eval.models import model_with_kb_of

        model_dir = str(model_with_kb_of(Path(args.model), tmp / "shipped_kb"))
    elif args.shipped_packed_index and args.model:
        from eval.models import model_with_packed_index_of

        model_dir = str(model_with_packed_index_of(Path(args.model), tmp / "shipped_index"))
    if args.kb_names_from:
        from eval.models import model_with_names_from

        (tmp / "model").mkdir()
        # the packed index kept: the few names that differ are searched beside it, as
        # annotate does for a grown KB (without it: a whole-KB encode on a cold cache)
        model_dir = str(model_with_names_from(args.kb_names_from, tmp / "model",
                                              Path(model_dir) if model_dir else None,
                                              keep_packed_index=True))
    return Linker.load(settings=replace(settings, model_dir=model_dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=[*DEV_TABLE, *SPECIES_DEV],
                        choices=sorted(CORPUS_TYPES))
    add_model_options(parser)
    parser.add_argument("--own-guidelines", action="store_true",
                        help="for a model trained with guideline tags: read each corpus under "
                             "the guideline named like it (ncbi_disease:dev under "
                             "ncbi_disease), the model's default for a corpus it has none of")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--predictions", default=None, metavar="DIR",
                        help="also write each corpus's predictions to DIR as PubTator (one "
                             "file a corpus): what eval.changed_links compares")
    parser.add_argument("--confidence-features", default=None, metavar="FILE",
                        help="also write each corpus's predictions labelled by strict "
                             "correctness to FILE (JSON): what --confidence-fit reads")
    parser.add_argument("--confidence-fit", default=None, metavar="FILE",
                        help="annotate nothing: fit the confidence model on FILE (written by "
                             "--confidence-features), write the model's confidence.json and "
                             "the reliability report (docs/results.md, 'One confidence')")
    args = parser.parse_args(argv)
    if args.confidence_fit:
        return confidence_main(args, argv)
    with tempfile.TemporaryDirectory() as tmp:
        linker = dev_linker(args, Path(tmp))  # a bad step: stopped before any loading
        resolve = load_kb("bc5cdr").resolve
        # every species' genes, so the groups do not depend on the model's KB
        gene_taxa = load_kb("genes_homologene").taxa() if "biored:dev" in args.corpora \
            and "Gene" in linker.annotator.model.config.types else None
        labelled: dict[str, list[dict]] | None = {} if args.confidence_features else None
        annotator = linker.annotator
        rows = []
        for spec in args.corpora:
            if args.own_guidelines:  # each corpus under the guideline named like it
                linker.annotator = annotator.with_pipeline(replace(
                    annotator.pipeline, guideline=own_guideline(spec, annotator.model.config)))
            rows.append(evaluate(linker, spec, resolve, args.max_docs,
                                 gene_taxa=gene_taxa if spec == "biored:dev" else None,
                                 labelled=labelled, predictions=args.predictions))
            rows[-1]["guideline"] = linker.annotator.pipeline.guideline \
                or annotator.model.config.default_guideline
        linker.annotator = annotator
    if labelled is not None:
        Path(args.confidence_features).write_text(json.dumps(labelled) + "\n")
    result = {"command": command_line("ood_dev", argv), "machine": machine(),
              "model": args.model or "shipped", "kb_names_from": args.kb_names_from,
              "kb": "the shipped model's" if args.shipped_kb or not args.model
              else "the model's own" + (", through the shipped packed index"
                                        if args.shipped_packed_index else ""),
              "annotate_options": shlex.join(annotate_flags(args)
                                             + (["--own-guidelines"] if args.own_guidelines
                                                else [])),
              "steps": linker.annotator.pipeline.names, "rows": rows,
              "combined": combined_score(rows), "table": table_rows(rows),
              "species": species_rows(rows)}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
