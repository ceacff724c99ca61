"""Which of the normalizer's lexical steps help ``linker annotate``'s linking, measured on dev.

    python -m eval.linking_ablation [--docs bc5cdr:dev] [--train-pool bc5cdr:train]
                                    [--out eval/results/linking_ablation]

Spans are detected once with the default model (one encoder pass per chunk, as ``linker
annotate`` runs); every row then links the same spans with one more step of
:class:`e2e_linker.kb_search.sieve_stack.SieveStack` switched on, and is scored with
``linker score``'s strict and partial F1 (by type). The training-mention pool is built from
``--train-pool`` (BC5CDR train by default: the shipped normalizer's pool also holds dev, which
would leak dev's own answers into a dev measurement). Note that the default collective model's
KB already carries names mined from BC5CDR train *and dev* annotations (its exact-name sieve),
so absolute dev figures are optimistic for every row alike; the differences between rows are
what this measures.
"""

from __future__ import annotations

import argparse
import platform
import time

from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.loading import load_annotator
from e2e_linker.kb_search.sieve_stack import SieveStack, SieveSwitches
from e2e_linker.kb_search.text_forms import TextNormalizer
from e2e_linker.normalizer.pools import training_triples
from e2e_linker.scoring import score
from eval.reporting import command_line, write_results

#: cumulative rows: each adds one step to the row above it
ROWS: list[tuple[str, SieveSwitches]] = [
    ("exact-name sieve + dense (before)", SieveSwitches.none()),
    ("+ abbreviation expansion", SieveSwitches(True, False, False, False)),
    ("+ training-mention pool", SieveSwitches(True, True, False, False)),
    ("+ compact key", SieveSwitches(True, True, True, False)),
    ("+ salt-free forms (all steps)", SieveSwitches(True, True, True, True)),
]


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="bc5cdr:dev")
    parser.add_argument("--train-pool", default="bc5cdr:train")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default="eval/results/linking_ablation")
    args = parser.parse_args(argv)
    gold = load_corpus(args.docs, args.max_docs)
    annotator = load_annotator()
    kb = annotator.kb
    started = time.perf_counter()
    spans, _ = annotator.detect(gold)
    detect_s = time.perf_counter() - started
    fold = TextNormalizer()
    pool = [(text, label, type_) for text, label, type_ in training_triples(
        load_corpus(args.train_pool), lambda text: text, kb)]
    rows = []
    for label, switches in ROWS:
        started = time.perf_counter()
        annotator.sieves = None if switches == SieveSwitches.none() else SieveStack(
            kb, annotator.names, pool, switches, fold)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
        link_s = time.perf_counter() - started
        row = {"row": label, "switches": switches.__dict__, "build_s": round(build_s, 1),
               "link_s": round(link_s, 1)}
        for mode in ("strict", "partial"):
            report = score(gold, pred, mode, by_type=True)
            row[mode] = round(report.f1, 4)
            row[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
        rows.append(row)
        print(row, flush=True)
    result = {"command": command_line("linking_ablation", argv),
              "machine": platform.processor() or platform.machine(), "docs": args.docs,
              "documents": len(gold), "train_pool": args.train_pool,
              "spans": len(spans), "detect_s": round(detect_s, 1), "rows": rows}
    types = sorted(rows[0]["strict_by_type"])
    header = ("| linking steps | strict F1 | " + " | ".join(f"{t} strict" for t in types)
              + " | partial F1 | build s | link s |")
    lines = [f"`{args.docs}`, {len(gold)} documents, {len(spans)} detected spans, default "
             f"model; training pool {args.train_pool}.", "", header,
             "|---" * (5 + len(types)) + "|"]
    for row in rows:
        lines.append(f"| {row['row']} | {row['strict']:.4f} | "
                     + " | ".join(f"{row['strict_by_type'][t]:.4f}" for t in types)
                     + f" | {row['partial']:.4f} | {row['build_s']} | {row['link_s']} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
