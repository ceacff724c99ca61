"""What a larger base encoder would cost per document: the mention encoder's forward over the
chunks annotate builds, for the shipped model's encoder and for candidate base encoders.

    python -m eval.base_encoder_speed --encoder mpnet=/path/to/all-mpnet-base-v2 \\
        [--docs 60] [--repeats 3] [--threads 1] [--out eval/results/base_encoder_speed]

Why: issue 29 allows a larger encoder only if it keeps at least half of today's mentions/s, and
the encoder forward is annotate's limit (``eval.bench``). Training a linker on a candidate costs
hours here, so this measures first whether a candidate can meet the speed bar at all: each
encoder tokenizes the same BC5CDR dev documents with its own tokenizer into annotate's chunks
(512 tokens, the model's span length and overlap), which are run through the bare forward in
annotate's length batches; rounds are interleaved so machine drift cancels. Documents/s stands
in for mentions/s (the same documents hold the same mentions whatever the encoder).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from eval.reporting import command_line, machine, write_results


def forward_over(encoder_dir: str, docs: list, batch_size: int = 16):
    """(real tokens, a closure running the bare forward over ``docs``'s annotate chunks)."""
    from e2e_linker.collective.batches import collate_chunks, length_batches
    from e2e_linker.collective.chunking import chunk_documents
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.encoder.text_encoder import TextEncoder

    path = str(default_linker_dir() / "encoder") if encoder_dir == "shipped" else encoder_dir
    encoder = TextEncoder.from_pretrained(path).float().eval()
    chunks = chunk_documents(docs, encoder.tokenizer, 512, 10, 32)
    groups = list(length_batches(chunks, batch_size, 16 * 512))
    pad = encoder.tokenizer.pad_token_id or 0

    @torch.inference_mode()
    def run() -> None:
        for group in groups:
            batch = collate_chunks([chunks[i] for i in group], pad, "cpu")
            encoder.token_states(batch["input_ids"], batch["attention_mask"])

    return sum(len(c) for c in chunks), run


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", action="append", default=[], metavar="LABEL=DIR",
                        help="a candidate base encoder folder (the shipped model's mention "
                             "encoder is always measured, as 'shipped')")
    parser.add_argument("--corpus", default="bc5cdr:dev")
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="eval/results/base_encoder_speed")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    docs = load_corpus(args.corpus, args.docs)
    encoders = {"shipped": "shipped", **dict(e.split("=", 1) for e in args.encoder)}
    runs = {label: forward_over(path, docs) for label, path in encoders.items()}
    for _, run in runs.values():
        run()  # warm-up, not timed
    seconds: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(args.repeats):
        for label, (_, run) in runs.items():
            start = time.perf_counter()
            run()
            seconds[label].append(time.perf_counter() - start)
    base = statistics.median(seconds["shipped"])
    rows = [{"encoder": label, "path": encoders[label], "tokens": runs[label][0],
             "seconds": [round(s, 2) for s in seconds[label]],
             "docs_per_s": round(len(docs) / statistics.median(seconds[label]), 2),
             "speed_vs_shipped": round(base / statistics.median(seconds[label]), 3)}
            for label in runs]
    result = {"command": command_line("base_encoder_speed", argv), "machine": machine(),
              "threads": args.threads, "documents": len(docs), "corpus": args.corpus,
              "rows": rows}
    lines = [f"{len(docs)} {args.corpus} documents, {args.threads} torch thread(s), "
             f"{machine()}; median of {args.repeats} interleaved rounds.", "",
             "| encoder | tokens | documents/s | × shipped |", "|---|---|---|---|"]
    lines += [f"| {r['encoder']} | {r['tokens']} | {r['docs_per_s']} | {r['speed_vs_shipped']} |"
              for r in rows]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
