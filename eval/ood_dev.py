"""The development table for text the model was not tuned on: BioRED dev (chemicals, diseases
and genes annotated together by another group) and NCBI disease dev, beside BC5CDR dev.

    python -m eval.ood_dev [--model DIR] [--corpora biored:dev ncbi_disease:dev bc5cdr:dev]
                           [--annotate-options "lexical_gate=0.9"] [--out eval/results/ood_dev]

Why: a choice that wins on BC5CDR dev and loses on other groups' abstracts is a loss
(issue 29). Each corpus is annotated from its stripped text exactly as ``linker annotate``
does (the model's own KB and settings, or the options given), in one process so the model and
KB load once, and scored with ``linker score``'s scorer:

* BioRED dev: gold types mapped to ours (ChemicalEntity → Chemical,
  DiseaseOrPhenotypicFeature → Disease, GeneOrGeneProduct → Gene; organisms, variants and cell
  lines left out); **Chemical + Disease** scored with predicted Gene mentions left out (strict,
  partial, mentions, per type, Chemical precision), the **gene confusion** (share of gold gene
  spans that a Chemical or Disease prediction overlaps), and, when the model predicts genes,
  Gene mention and strict F1 (NCBI Gene IDs);
* NCBI disease dev: Disease only, IDs through MEDIC's alternatives (as ``eval.cross_corpus``);
* BC5CDR dev (optional: the shipped KB holds dev's mined names, so pass ``--kb-names-from
  bc5cdr:train`` for a fair figure);
* the gene corpora (GNormPlus, NLM-Gene; ``:train`` or ``:test``): Gene only, the issue's gene
  bounds — Gene mention F1, strict F1 (NCBI Gene IDs) and the gene confusion. Their training
  splits are what a gene model trained on; their test splits are for reporting once, never for
  choosing.

Never trained on: BioRED dev is the out-of-domain development set.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import tempfile
import time
from pathlib import Path

from data_tools.documents import Document
from data_tools.registry import apply_type_map, dataset_of, load_corpus, load_kb
from e2e_linker.normalizer.pools import TYPE_ALIASES
from e2e_linker.scoring import score
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "ood_dev"
MODES = ("strict", "partial", "mentions")
#: what each corpus is scored on: its gold types kept, and the KB whose alternative IDs map to
#: primary ones on both sides
CORPUS_TYPES = {"biored:dev": ("Chemical", "Disease"), "ncbi_disease:dev": ("Disease",),
                "bc5cdr:dev": ("Chemical", "Disease"),
                **{f"{name}:{split}": ("Gene",) for name in ("gnormplus", "nlmgene")
                   for split in ("train", "test")}}


def settings_overrides(words: str) -> dict:
    """``--annotate-options``: AnnotateSettings overrides as KEY=VALUE words, one spelling for
    every evaluation that takes them. A value is read as JSON (``lexical_gate=0.9``,
    ``short_forms=false``, ``kb=\\"bc5cdr\\"``), and a word that is not JSON is itself
    (``kb=bc5cdr gene_products=keep``: shell quoting of JSON strings is easy to lose)."""
    return {key: json_or_word(value) for key, value in
            (word.split("=", 1) for word in shlex.split(words))}


def add_annotate_options(parser: argparse.ArgumentParser) -> None:
    """The ``--annotate-options`` argument (read by :func:`settings_overrides`), one wording for
    every evaluation that takes it."""
    parser.add_argument("--annotate-options", default="",
                        help="AnnotateSettings overrides as KEY=VALUE words, each value JSON or "
                             "a plain word, e.g. 'lexical_gate=0.9 short_forms=false "
                             "gene_products=keep'")


def json_or_word(value: str):
    """``value`` read as JSON, else the word itself."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def gold_of(spec: str, max_docs: int | None = None) -> list[Document]:
    """A corpus with its annotation types mapped to the model's."""
    docs = load_corpus(spec, max_docs)
    dataset = dataset_of(spec)
    # NCBI's four disease classes: the normalizer's aliases (its dataset carries no map)
    apply_type_map(docs, dataset.type_map if dataset and dataset.type_map else TYPE_ALIASES)
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


def evaluate(linker, spec: str, resolve, max_docs: int | None = None,
             types: tuple[str, ...] | None = None) -> dict:
    """Annotate one corpus from its stripped text and score it (see the module docstring) on
    ``types`` (default: the corpus's :data:`CORPUS_TYPES`)."""
    gold = gold_of(spec, max_docs)
    started = time.perf_counter()
    pred = linker.annotate(gold, replace=True)
    seconds = time.perf_counter() - started
    row: dict = {"corpus": spec, "documents": len(gold), "annotate_s": round(seconds, 1),
                 "predicted": {t: sum(a.type == t for d in pred for a in d.annotations)
                               for t in sorted({a.type for d in pred for a in d.annotations})},
                 "scores": report_of(gold, pred, types or CORPUS_TYPES[spec], resolve)}
    hit, total = overlapped_share(gold, pred, "Gene", ("Chemical", "Disease"))
    if total:
        row["gene_spans_predicted_chemical_or_disease"] = {
            "overlapped": hit, "gold_gene_spans": total, "share": round(hit / total, 4)}
        if "Gene" in linker.annotator.model.config.types:
            gene = report_of(gold, pred, ("Gene",), resolve)
            row["gene"] = {mode: {k: gene[mode][k] for k in ("p", "r", "f1")}
                           for mode in MODES}
    return row


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
            f"| {row['corpus']} ({', '.join(CORPUS_TYPES[row['corpus']])})",
            f"{s['strict']['p']:.4f}", f"{s['strict']['r']:.4f}", f"{s['strict']['f1']:.4f}",
            f"{chem['p']:.4f}" if chem else "—", f"{chem['f1']:.4f}" if chem else "—",
            f"{by_type['Disease']['f1']:.4f}" if "Disease" in by_type else "—",
            f"{s['partial']['f1']:.4f}", f"{s['mentions']['f1']:.4f}",
            f"{confusion['share']:.3f} ({confusion['overlapped']}/"
            f"{confusion['gold_gene_spans']})" if confusion else "—",
            f"{row['gene']['mentions']['f1']:.4f}" if "gene" in row else "—",
            f"{row['gene']['strict']['f1']:.4f}" if "gene" in row else "—",
            f"{row['annotate_s']} |"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from e2e_linker.api import Linker
    from e2e_linker.collective.settings import AnnotateSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--corpora", nargs="+", default=["biored:dev", "ncbi_disease:dev"],
                        choices=sorted(CORPUS_TYPES))
    parser.add_argument("--kb-names-from", nargs="*", default=None,
                        help="rebuild the model's mined names from these corpora only")
    parser.add_argument("--shipped-kb", action="store_true",
                        help="link against the shipped model's KB (manifest, mined names, "
                             "packed index) instead of the model's own: compares detection "
                             "and typing on one KB (eval.models.model_with_kb_of)")
    parser.add_argument("--shipped-packed-index", action="store_true",
                        help="link against the model's own KB through the shipped model's "
                             "packed index: for a model whose KB adds name-only types "
                             "(lexical_types, e.g. genes) to the shipped Chemical/Disease "
                             "names (eval.models.model_with_packed_index_of)")
    add_annotate_options(parser)
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    typed = settings_overrides(args.annotate_options)
    resolve = load_kb("bc5cdr").resolve
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if args.shipped_kb and args.model:
            from eval.models import model_with_kb_of

            model_dir = str(model_with_kb_of(Path(args.model), Path(tmp) / "shipped_kb"))
        elif args.shipped_packed_index and args.model:
            from eval.models import model_with_packed_index_of

            model_dir = str(model_with_packed_index_of(Path(args.model),
                                                       Path(tmp) / "shipped_index"))
        if args.kb_names_from is not None:
            from eval.models import model_with_names_from

            (Path(tmp) / "model").mkdir()
            # the packed index kept: the few names that differ are searched beside it, as
            # annotate does for a grown KB (without it: a whole-KB encode on a cold cache)
            model_dir = str(model_with_names_from(args.kb_names_from, Path(tmp) / "model",
                                                  Path(model_dir) if model_dir else None,
                                                  keep_packed_index=True))
        linker = Linker.load(settings=AnnotateSettings(model_dir=model_dir, **typed))
        rows = [evaluate(linker, spec, resolve, args.max_docs) for spec in args.corpora]
    result = {"command": command_line("ood_dev", argv), "machine": machine(),
              "model": args.model or "shipped", "kb_names_from": args.kb_names_from,
              "kb": "the shipped model's" if args.shipped_kb or not args.model
              else "the model's own" + (", through the shipped packed index"
                                        if args.shipped_packed_index else ""),
              "annotate_options": args.annotate_options, "rows": rows}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
