"""What each speed option costs in accuracy: strict F1 on BC5CDR test per KB index kind,
with a bf16 encoder forward and with the int8 encoder, against the exact fp32 pipeline.

    python -m eval.speed_accuracy [--model DIR] [--kinds hnsw,ivfpq] [--bf16] [--quantize]
                                  [--max-docs N] [--out eval/results/speed_accuracy]

Why a separate command: the index kinds differ only in linking, so the documents are encoded
once and the same detected spans are linked with each backend (minutes instead of one full
run per kind); bf16 and int8 change the encoder, so each gets its own detection pass
(its spans are linked with exact search and with each of ``--kinds``). Agreement
(the share of spans whose chosen concept equals the exact backend's) is reported beside F1, as
F1 alone can hide changes that cancel out.
"""

from __future__ import annotations

import argparse
import time

from data_tools.documents import Document
from e2e_linker.collective.annotator import Annotator, attach_annotations
from e2e_linker.scoring import score
from eval.reporting import command_line, write_results


def stripped(docs: list[Document]) -> list[Document]:
    from copy import deepcopy

    out = deepcopy(docs)
    for doc in out:
        doc.relations = []
        for passage in doc.passages:
            passage.annotations = []
    return out


def link_and_score(annotator: Annotator, gold: list[Document], text: list[Document],
                   spans) -> tuple[dict, list[tuple[str, ...]], float]:
    """Strict/partial scores of linking ``spans``, the chosen concepts, and link seconds."""
    start = time.perf_counter()
    annotations = annotator.link(list(spans), text)
    seconds = time.perf_counter() - start
    pred = attach_annotations(text, spans, annotations, replace=True)
    row = {mode: score(gold, pred, mode=mode).to_dict() for mode in ("strict", "partial")}
    chosen = [tuple(a.concept_ids) if a is not None else () for a in annotations]
    return row, chosen, seconds


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--gold", default="bc5cdr-bioc:test")
    parser.add_argument("--kinds", default="hnsw,ivfpq",
                        help="approximate index kinds to compare with exact search")
    parser.add_argument("--bf16", action="store_true",
                        help="also run the encoder forward under bf16 autocast")
    parser.add_argument("--quantize", action="store_true", help="also run int8 quantized")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default="eval/results/speed_accuracy")
    args = parser.parse_args(argv)

    from copy import deepcopy

    from data_tools.registry import load_corpus
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    gold = load_corpus(args.gold, args.max_docs)
    text = stripped(gold)
    annotator = load_annotator(AnnotateSettings(model_dir=args.model, index_kind="exact"))
    spans, _ = annotator.detect(text)
    rows = []
    base, base_chosen, secs = link_and_score(annotator, gold, text, deepcopy(spans))
    rows.append({"variant": "exact search, fp32 encoder", **base, "link_seconds": secs,
                 "spans": len(spans), "agreement": 1.0})
    kinds = [k for k in args.kinds.split(",") if k]
    for kind in kinds:  # same spans, other backends
        start = time.perf_counter()
        annotator.linker.index.use_search(kind)
        built = time.perf_counter() - start
        row, chosen, secs = link_and_score(annotator, gold, text, deepcopy(spans))
        agree = sum(a == b for a, b in zip(chosen, base_chosen, strict=True)) / max(1, len(spans))
        rows.append({"variant": f"{annotator.linker.index.describe()}, fp32 encoder", **row,
                     "link_seconds": secs, "index_load_or_build_seconds": built,
                     "spans": len(spans), "agreement": agree})

    def encoder_variant(label: str, variant_spans: list) -> None:
        """Rows for the spans a changed encoder detected, linked exactly and with each kind."""
        for kind in ["exact", *kinds]:
            annotator.linker.index.use_search(kind)
            row, _, secs = link_and_score(annotator, gold, text, deepcopy(variant_spans))
            rows.append({"variant": f"{annotator.linker.index.describe()}, {label}", **row,
                         "link_seconds": secs, "spans": len(variant_spans), "agreement": None})

    if args.bf16:
        annotator.model.set_precision("bf16")
        b_spans, _ = annotator.detect(text)
        annotator.model.set_precision("fp32")
        encoder_variant("bf16 encoder", b_spans)
    if args.quantize:
        from e2e_linker.encoder.quantization import DEFAULT_ALPHA

        annotator.model.quantize_mention_encoder()
        q_spans, _ = annotator.detect(text)
        encoder_variant(f"int8 encoder (SmoothQuant α={DEFAULT_ALPHA}, per-channel)", q_spans)
    for row in rows:
        row["strict_f1_change_points"] = 100 * (row["strict"]["f1"] - base["strict"]["f1"])
    result = {"gold": args.gold, "documents": len(gold),
              "command": command_line("speed_accuracy", argv), "rows": rows}
    write_results(args.out, result, markdown(result))
    return result


def markdown(result: dict) -> str:
    lines = ["| variant | strict P / R / F1 | Δ strict F1 (points) | partial F1 | same concept "
             "as exact | link s |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        s = r["strict"]
        agree = "–" if r["agreement"] is None else f"{100 * r['agreement']:.2f} %"
        lines.append(f"| {r['variant']} | {s['precision']:.4f} / {s['recall']:.4f} / "
                     f"**{s['f1']:.4f}** | {r['strict_f1_change_points']:+.2f} | "
                     f"{r['partial']['f1']:.4f} | {agree} | {r['link_seconds']:.1f} |")
    lines += ["", f"{result['documents']} documents of `{result['gold']}`. "
              f"Command: `{result['command']}`"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
