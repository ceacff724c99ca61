"""Which of the normalizer's lexical steps help ``linker annotate``'s linking, measured on dev.

    python -m eval.linking_ablation [--docs bc5cdr:dev] [--train-pool bc5cdr:train]
                                    [--out eval/results/linking_ablation]

Spans are detected once with the default model (one encoder pass per chunk, as ``linker
annotate`` runs); every row then links the same spans with one more step of
:class:`e2e_linker.lexical.sieve_stack.SieveStack` switched on, and is scored with
``linker score``'s strict and partial F1 (by type). The training-mention pool is built from
``--train-pool`` (BC5CDR train by default: the shipped normalizer's pool also holds dev, which
would leak dev's own answers into a dev measurement). Note that the default collective model's
KB already carries names mined from BC5CDR train *and dev* annotations (its exact-name sieve),
so its exact-name sieve already knows dev's own answers and no later step can add anything on
dev. ``--kb-names-from bc5cdr:train`` rebuilds the model's mined names from the given corpora
only (a temporary model directory beside the shipped weights; the vectors of those names are
already in the cache), which makes dev a fair test of the linking steps.

The last row hands every detected span to ``linker normalize``'s engine instead (the default
normalizer's text encoder on the span text, mode and sieves as shipped, its D pool rebuilt from
``--train-pool`` only): the question of issue 17 whether the dense step should use the
collective span vectors or the triplet encoder on the span text.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.loading import load_annotator
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches
from e2e_linker.lexical.text_forms import TextNormalizer
from e2e_linker.normalizer.pools import training_triples
from eval.models import model_with_names_from
from eval.reporting import command_line, f1_fields, machine, write_results

#: cumulative rows: each adds one step to the row above it
ROWS: list[tuple[str, SieveSwitches]] = [
    ("exact-name sieve + dense (before)", SieveSwitches.none()),
    ("+ abbreviation expansion", SieveSwitches(True, False, False, False, False)),
    ("+ training-mention pool", SieveSwitches(True, True, False, False, False)),
    ("+ compact key", SieveSwitches(True, True, True, False, False)),
    ("+ salt-free forms", SieveSwitches(True, True, True, True, False)),
    ("+ written disease forms (all steps)", SieveSwitches(True, True, True, True, True)),
]


def scored_row(label: str, switches: dict | None, gold, pred, build_s: float,
               link_s: float) -> dict:
    """One table row: strict and partial F1, overall and by type, as ``linker score``."""
    row = {"row": label, "switches": switches, "build_s": round(build_s, 1),
           "link_s": round(link_s, 1), **f1_fields(gold, pred)}
    print(row, flush=True)
    return row


def normalizer_on_spans(train_pool: str):
    """The default normalizer as shipped, except its D pool: built from ``train_pool`` alone,
    since the shipped pool holds dev's own mentions."""
    from data_tools.registry import load_corpus
    from e2e_linker.collective.model_kb import assemble_kb
    from e2e_linker.normalizer.normalizer import DEFAULT_MODE, NormalizeOptions, Normalizer
    from e2e_linker.normalizer.normalizer_dir import load_model, packed_index_of

    encoder, settings = load_model(None)
    options = NormalizeOptions(mode=settings.search or DEFAULT_MODE,
                               lowercase=settings.lowercase, punctuation=settings.punctuation)
    return Normalizer(encoder, assemble_kb(settings.kb), load_corpus(train_pool), options,
                      packed=packed_index_of(None))


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="bc5cdr:dev")
    parser.add_argument("--train-pool", default="bc5cdr:train")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--kb-names-from", nargs="*", default=None,
                        help="corpora whose annotation texts extend the KB (default: the "
                             "model's own mined names, from BC5CDR train and dev)")
    parser.add_argument("--index", default="auto", help="KB search backend, as annotate's")
    parser.add_argument("--out", default="eval/results/linking_ablation")
    args = parser.parse_args(argv)
    gold = load_corpus(args.docs, args.max_docs)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = (None if args.kb_names_from is None
                     else model_with_names_from(args.kb_names_from, Path(tmp)))
        annotator = load_annotator(AnnotateSettings(
            model_dir=None if model_dir is None else str(model_dir), index_kind=args.index))
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
        annotator.linker.sieves = None if switches == SieveSwitches.none() else SieveStack(
            kb, annotator.linker.names, pool, switches, fold)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
        link_s = time.perf_counter() - started
        rows.append(scored_row(label, switches.__dict__, gold, pred, build_s, link_s))
    started = time.perf_counter()
    normalizer = normalizer_on_spans(args.train_pool)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
    normalizer.normalize(pred)
    link_s = time.perf_counter() - started
    rows.append(scored_row("normalizer on every detected span (text encoder + its sieves)",
                           None, gold, pred, build_s, link_s))
    result = {"command": command_line("linking_ablation", argv),
              "machine": machine(), "docs": args.docs,
              "documents": len(gold), "train_pool": args.train_pool,
              "kb_names_from": args.kb_names_from, "index": args.index,
              "spans": len(spans), "detect_s": round(detect_s, 1), "rows": rows}
    types = sorted(rows[0]["strict_by_type"])
    header = ("| linking steps | strict F1 | " + " | ".join(f"{t} strict" for t in types)
              + " | partial F1 | build s | link s |")
    lines = [f"`{args.docs}`, {len(gold)} documents, {len(spans)} detected spans, default "
             f"model; training pool {args.train_pool}; KB names mined from "
             f"{', '.join(args.kb_names_from) if args.kb_names_from is not None else 'the model (bc5cdr:train, bc5cdr:dev)'}"
             f"; index {args.index}.", "", header,
             "|---" * (5 + len(types)) + "|"]
    for row in rows:
        lines.append(f"| {row['row']} | {row['strict']:.4f} | "
                     + " | ".join(f"{row['strict_by_type'][t]:.4f}" for t in types)
                     + f" | {row['partial']:.4f} | {row['build_s']} | {row['link_s']} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
