"""Which mention-encoder forward is fastest here, and how far each moves the detected spans.

    python -m eval.encoder_variants [--docs 60] [--repeats 3] [--threads N]
                                    [--out eval/results/encoder_variants]

Why: ``eval.bench`` shows the encoder forward is annotate's limit, so the ways to run it faster
(bf16, fp16, int8 with and without SmoothQuant, ``torch.compile``) are compared here side by
side in one process, rounds interleaved so that machine drift cancels: tokens/s over exactly
the chunks annotate builds for BC5CDR **dev** documents (so choices are not tuned on test),
and, against the fp32 forward, the share of detected spans that stay the same (Jaccard of the
span sets) and the mean cosine of the common spans' vectors. F1 on test is
``eval.speed_accuracy``'s job; this table only says which variants are worth that run.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from eval.bench import encoder_only
from eval.reporting import command_line, write_results


def variants(base) -> dict[str, Callable[[], object]]:
    """Builders of model copies, each running its encoder forward one way."""
    from torch import nn

    from e2e_linker.encoder.quantization import DEFAULT_ALPHA, quantize_int8, smooth

    def copy_with(change: Callable[[object], None]) -> Callable[[], object]:
        def build():
            model = copy.deepcopy(base)
            change(model)
            return model
        return build

    def weights(dtype):
        def change(model):
            model.encoder.model.to(dtype)
            forward = model.encoder.token_states
            model.encoder.token_states = lambda ids, mask: forward(ids, mask).float()
        return change

    def per_tensor(model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.encoder.model = torch.ao.quantization.quantize_dynamic(
                model.encoder.model, {nn.Linear}, dtype=torch.qint8)

    def per_channel(model):
        model.encoder.model = quantize_int8(model.encoder.model)

    def smoothquant(model):
        smooth(model.encoder.model, model.activation_stats, DEFAULT_ALPHA)
        model.encoder.model = quantize_int8(model.encoder.model)

    def compiled(model):
        model.encoder.model = torch.compile(model.encoder.model, dynamic=True)

    return {
        "fp32 (default)": copy_with(lambda m: None),
        "bf16 autocast (--precision bf16)": copy_with(lambda m: m.set_precision("bf16")),
        "bf16 weights": copy_with(weights(torch.bfloat16)),
        "fp16 weights": copy_with(weights(torch.float16)),
        "fp32, torch.compile": copy_with(compiled),
        "int8 dynamic, per-tensor (old --quantize)": copy_with(per_tensor),
        "int8 dynamic, per-channel": copy_with(per_channel),
        f"int8 SmoothQuant α={DEFAULT_ALPHA} + per-channel (--quantize)": copy_with(smoothquant),
    }


def detected(model, docs) -> dict[tuple[int, int, int], np.ndarray]:
    from e2e_linker.collective.annotator import Annotator

    with torch.inference_mode():
        spans, _ = Annotator.from_parts(model, None).detect(docs)
    return {(s.doc_index, s.start, s.end): s.vector for s in spans}


def agreement(ref: dict, got: dict) -> dict[str, float]:
    common = ref.keys() & got.keys()
    cos = [float(np.dot(ref[k], got[k]) / (np.linalg.norm(ref[k]) * np.linalg.norm(got[k])))
           for k in common]
    return {"spans": len(got), "span_jaccard": len(common) / max(1, len(ref.keys() | got.keys())),
            "spans_lost": len(ref.keys() - got.keys()), "spans_new": len(got.keys() - ref.keys()),
            "mean_cosine": float(np.mean(cos)) if cos else float("nan")}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="bc5cdr-bioc:dev")
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--out", default="eval/results/encoder_variants")
    args = parser.parse_args(argv)

    from data_tools.registry import load_corpus
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir

    if args.threads:
        torch.set_num_threads(args.threads)
    docs = copy.deepcopy(load_corpus(args.corpus, args.docs))
    for doc in docs:
        for passage in doc.passages:
            passage.annotations = []
    base = CollectiveLinker.load(default_linker_dir()).eval()
    models = {name: build() for name, build in variants(base).items()}
    runs, tokens = {}, 0
    for name, model in models.items():
        tokens, runs[name] = encoder_only(Annotator.from_parts(model, None), docs)
        runs[name]()  # warm-up (and torch.compile's compilation), not timed
    seconds = dict.fromkeys(models, 0.0)
    for _ in range(args.repeats):  # interleaved rounds
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[name] += time.perf_counter() - start
    reference = detected(models["fp32 (default)"], docs)
    fp32_rate = tokens * args.repeats / seconds["fp32 (default)"]
    rows = []
    for name, model in models.items():
        rate = tokens * args.repeats / seconds[name]
        rows.append({"variant": name, "tokens_per_s": rate, "speed_vs_fp32": rate / fp32_rate,
                     **agreement(reference, detected(model, docs))})
        print(json.dumps(rows[-1]), flush=True)
    result = {"command": command_line("encoder_variants", argv),
              "corpus": args.corpus, "documents": len(docs), "tokens": tokens,
              "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
              "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
              "torch": torch.__version__, "rows": rows}
    write_results(args.out, result, markdown(result))
    return result


def markdown(result: dict) -> str:
    lines = ["| encoder forward | tokens/s | × fp32 | detected spans | span Jaccard vs fp32 "
             "(lost / new) | mean cosine of common span vectors |",
             "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['variant']} | {r['tokens_per_s']:,.0f} | {r['speed_vs_fp32']:.2f} | "
                     f"{r['spans']} | {r['span_jaccard']:.4f} ({r['spans_lost']} / "
                     f"{r['spans_new']}) | {r['mean_cosine']:.5f} |")
    lines += ["", f"{result['documents']} documents of `{result['corpus']}` ({result['tokens']:,} "
              f"tokens in annotate's chunks), {result['repeats']} interleaved rounds, "
              f"{result['torch_threads']} torch threads, torch {result['torch']}, "
              f"{result['machine']}. Command: `{result['command']}`"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
