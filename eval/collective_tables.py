"""Reproduce the paper's Table 7 rows for our collective model on BC5CDR test.

    python -m eval.collective_tables [--model DIR] [--bio-model DIR] [--out eval/results/collective]

For each model: the test BioC XML stripped of its annotations is annotated end to end and
scored with `linker score` semantics (strict and partial P/R/F1, overall and by type); gold-span
disambiguation (P@1 and recall@10 over gold mentions with one concept ID) uses the same
weights and index; the per-mention baseline (one 128-token forward per mention) runs on the
same documents in the same process so the collective/per-mention speed ratio is side by side.
Writes ``results.json`` and ``results.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from data_tools.documents import strip_prefix
from e2e_linker.collective.annotator import Annotator
from e2e_linker.collective.loading import load_annotator
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.scoring import score
from eval.gold_spans import encode_gold_spans

PAPER = {  # Bhowmik et al. 2021, Table 7 (BC5CDR, end-to-end), for orientation
    "paper exhaustive (BioBERT)": {"strict_f1": 0.738, "partial_f1": 0.752},
}


def strip(docs):
    from copy import deepcopy

    out = deepcopy(docs)
    for d in out:
        for p in d.passages:
            p.annotations = []
    return out


def gold_span_disambiguation(annotator: Annotator, gold_docs) -> dict:
    """P@1 and recall@10 of linking gold spans (one concept ID, not composite parts)."""
    spans, golds = [], []
    for d, doc in enumerate(gold_docs):
        for ann in doc.annotations:
            if ann.infons.get("CompositeRole") == "IndividualMention" or len(ann.concept_ids) != 1:
                continue
            spans.append((d, ann.start, ann.end))
            golds.append((strip_prefix(ann.concept_ids[0]), ann.type))
    vectors, ok = encode_gold_spans(annotator, gold_docs, spans)
    ranked = annotator.linker.index.link(vectors, [t for _, t in golds], k=64)
    p1 = r10 = 0
    for (gold, _), cands, placed in zip(golds, ranked, ok, strict=True):
        ids = [c for c, _ in cands[:10]] if placed else []
        p1 += bool(ids) and ids[0] == gold
        r10 += gold in ids
    n = len(golds)
    return {"mentions": n, "p_at_1": p1 / n if n else 0.0, "recall_at_10": r10 / n if n else 0.0}


def run_model(model_dir: str | None, gold_docs, device: str | None, per_mention: bool,
              index_kind: str = "auto") -> dict:
    annotator = load_annotator(AnnotateSettings(
        model_dir=None if model_dir is None else str(model_dir), device=device,
        index_kind=index_kind))
    stripped = strip(gold_docs)
    annotator.annotate(stripped[:8])  # warm-up (first-call allocations), not timed
    annotator.stats = dict.fromkeys(annotator.stats, 0)
    t0 = time.perf_counter()
    pred = annotator.annotate(stripped)
    seconds = time.perf_counter() - t0
    n_mentions = annotator.stats["mentions"]
    row: dict = {"model": model_dir or "embedded default",
                 "mention_head": annotator.model.config.mention_head,
                 "threshold": annotator.settings.threshold, "index": annotator.linker.index.describe()}
    for mode in ("strict", "partial", "mentions"):
        rep = score(gold_docs, pred, mode=mode, by_type=True)
        row[mode] = rep.to_dict()
        row[mode]["by_type"] = {t: r.to_dict() for t, r in rep.per_type.items()}
    row["collective_seconds"] = seconds
    row["collective_mentions_per_s"] = n_mentions / seconds
    row["gold_spans"] = gold_span_disambiguation(annotator, gold_docs)
    if per_mention:
        annotator.settings = replace(annotator.settings, mode="per-mention")
        annotator.stats = dict.fromkeys(annotator.stats, 0)
        t0 = time.perf_counter()
        pred_pm = annotator.annotate(stripped)
        pm_seconds = time.perf_counter() - t0
        row["per_mention_seconds"] = pm_seconds
        row["per_mention_mentions_per_s"] = annotator.stats["mentions"] / pm_seconds
        row["per_mention_strict"] = score(gold_docs, pred_pm, mode="strict").to_dict()
        row["ratio_collective_vs_per_mention"] = (
            row["collective_mentions_per_s"] / row["per_mention_mentions_per_s"])
    return row


def markdown(results: dict) -> str:
    lines = [
        "| model | head | strict P | strict R | strict F1 | partial P | partial R | partial F1 "
        "| gold-span P@1 | R@10 | mentions/s (collective) | mentions/s (per-mention) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        s, p, g = row["strict"], row["partial"], row["gold_spans"]
        pm = row.get("per_mention_mentions_per_s")
        ratio = row.get("ratio_collective_vs_per_mention")
        lines.append(
            f"| {row['model']} | {row['mention_head']} | {s['precision']:.3f} | {s['recall']:.3f} "
            f"| **{s['f1']:.3f}** | {p['precision']:.3f} | {p['recall']:.3f} | **{p['f1']:.3f}** "
            f"| {g['p_at_1']:.3f} | {g['recall_at_10']:.3f} "
            f"| {row['collective_mentions_per_s']:.1f} | {pm:.1f} | {ratio:.2f} |"
            if pm else
            f"| {row['model']} | {row['mention_head']} | {s['precision']:.3f} | {s['recall']:.3f} "
            f"| **{s['f1']:.3f}** | {p['precision']:.3f} | {p['recall']:.3f} | **{p['f1']:.3f}** "
            f"| {g['p_at_1']:.3f} | {g['recall_at_10']:.3f} "
            f"| {row['collective_mentions_per_s']:.1f} | – | – |"
        )
    for name, ref in PAPER.items():
        lines.append(f"| {name} | exhaustive | | | {ref['strict_f1']:.3f} | | | "
                     f"{ref['partial_f1']:.3f} | | | | | |")
    lines.append("")
    lines.append(f"Machine: {results['machine']}. Command: `{results['command']}`.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model dir (default: embedded)")
    parser.add_argument("--bio-model", default=None, help="a BIO-head model dir, for its row")
    parser.add_argument("--gold", default=None, help="gold corpus (default: BC5CDR test BioC XML)")
    parser.add_argument("--out", default="eval/results/collective")
    parser.add_argument("--device", default=None)
    parser.add_argument("--no-per-mention", action="store_true")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--index", default="auto",
                        help="KB search: auto, exact, hnsw, ivfpq (see e2e_linker.kb_search.backends)")
    args = parser.parse_args(argv)

    from data_tools.registry import load_corpus

    gold_spec = args.gold or "bc5cdr-bioc:test"
    gold_docs = load_corpus(gold_spec, args.max_docs)
    rows = [run_model(args.model, gold_docs, args.device, not args.no_per_mention, args.index)]
    if args.bio_model:
        rows.append(run_model(args.bio_model, gold_docs, args.device, False, args.index))
    results = {
        "gold": gold_spec,
        "documents": len(gold_docs),
        "machine": f"{platform.machine()} {platform.processor() or ''} "
                   f"{torch.get_num_threads()} torch threads, "
                   f"{'cuda ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}",
        "command": "python -m eval.collective_tables " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
