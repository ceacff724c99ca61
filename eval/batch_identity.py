"""Is a chunk's forward the same bits whatever shares its encoder batch?

    python -m eval.batch_identity                       # eval/results/batch_identity
    python -m eval.batch_identity --threads 1 --max-batch 8 --out /tmp/check

Why: ``linker serve`` batches the chunks of concurrent requests and must answer the bytes
``linker annotate`` writes for each text alone; ``linker annotate`` itself must not give a
document other scores because of its neighbours in a file. On the CPU, padding changes the
last bits of the attention sums, so the annotator pads every chunk to a multiple of
:data:`~e2e_linker.collective.batches.PAD_MULTIPLE` tokens and batches only chunks of the same
padded length (:func:`~e2e_linker.collective.batches.length_batches`). This check measures
that scheme against the old one (pad to the batch's longest chunk, lengths mixed).

How: the default model's chunks of BC5CDR sentences (short chunks) and whole abstracts (long
ones) are grouped by padded length. Each sampled chunk is first run alone (the reference);
then, for every batch size from 1 to ``--max-batch``, a random batch of that size is drawn
from its bucket (``padded``) or from all chunks (``longest``, the old scheme), run, and every
row compared with its reference: the token states, and the candidate spans the annotator reads
(positions, probability, mean-pooled span vector, type logits — computed over the batch's
spans together, as ``Annotator.detect`` does). A row counts as identical only if every one is
equal to the bit. Each torch thread count in ``--threads`` is its own run.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from collections.abc import Sequence

import torch

from eval.reporting import command_line, machine, write_results

#: span probability above which candidate spans are compared (below every selection floor)
SPAN_FLOOR = 0.01


def chunk_pool(corpus: str, abstracts: int, sentences_from: int, model) -> list:
    """Chunks of ``sentences_from`` documents' sentences (each its own document) and of
    ``abstracts`` whole documents of ``corpus``."""
    from data_tools.registry import load_corpus
    from e2e_linker.api import text_document
    from e2e_linker.collective.chunking import chunk_documents
    from eval.serve_load import sentences

    docs = load_corpus(corpus)
    texts = sentences([p.text for d in docs[:sentences_from] for p in d.passages])
    pool = [text_document(t, f"s{k}") for k, t in enumerate(texts)]
    pool += list(docs[-abstracts:]) if abstracts else []
    cfg = model.config
    return chunk_documents(pool, model.tokenizer, cfg.max_length, cfg.max_span_len,
                           cfg.chunk_overlap)


@torch.inference_mode()
def forward(model, chunks: Sequence, pad_multiple: int) -> list[dict]:
    """What ``Annotator.detect`` reads of each chunk of one batch, per row."""
    from e2e_linker.collective.batches import collate_chunks

    batch = collate_chunks(chunks, model.tokenizer.pad_token_id or 0, "cpu", pad_multiple)
    states = model.token_states(batch)
    rows = [{"states": states[r, :len(c)].clone(), "spans": {}} for r, c in enumerate(chunks)]
    found = model.candidate_spans(states, batch, SPAN_FLOOR)
    if found is not None:
        b, i, j, p = found
        vecs = model.span_vectors(states, b, i, j)
        logits = model.type_logits(vecs)
        for k, (bb, ii, jj) in enumerate(zip(b.tolist(), i.tolist(), j.tolist(), strict=True)):
            rows[bb]["spans"][(ii, jj)] = (p[k].item(), vecs[k].clone(), logits[k].clone())
    return rows


def differences(row: dict, ref: dict) -> set[str]:
    """What of a row is not equal to the bit to its reference: ``states``, ``spans`` (which
    candidates), ``probability``, ``vector``, ``type_logits``."""
    out = set() if torch.equal(row["states"], ref["states"]) else {"states"}
    if row["spans"].keys() != ref["spans"].keys():
        return out | {"spans"}
    for key, (p, v, t) in row["spans"].items():
        rp, rv, rt = ref["spans"][key]
        out |= {name for name, ok in (("probability", p == rp), ("vector", torch.equal(v, rv)),
                                      ("type_logits", torch.equal(t, rt))) if not ok}
    return out


def run_threads(model, chunks: list, threads: int, max_batch: int, long_sizes: Sequence[int],
                long_from: int, seed: int, pad_multiple: int) -> dict:
    """Both schemes at one torch thread count."""
    from e2e_linker.collective.batches import padded_length

    torch.set_num_threads(threads)
    rng = random.Random(seed)
    buckets: dict[int, list[int]] = defaultdict(list)
    for k, c in enumerate(chunks):
        buckets[padded_length(len(c), pad_multiple)].append(k)
    out: dict = {"threads": threads, "schemes": {}}
    for scheme, multiple in (("padded", pad_multiple), ("longest", 1)):
        start = time.perf_counter()
        refs: dict[int, dict] = {}
        stats = {"rows": 0, "state_diff": 0, "span_diff": 0, "batches": 0,
                 "full_rows": 0, "full_diff": 0, "by_size": {},
                 "differing": {k: 0 for k in ("states", "spans", "probability", "vector",
                                              "type_logits")}}
        short = [k for k in range(len(chunks))
                 if padded_length(len(chunks[k]), pad_multiple) < long_from]
        groups = ([sorted(b) for _, b in sorted(buckets.items())] if scheme == "padded"
                  else [short])  # the old scheme: lengths mixed (short chunks: cost)
        for members in groups:
            long = padded_length(len(chunks[members[0]]), pad_multiple) >= long_from \
                and scheme == "padded"
            sizes = [s for s in (long_sizes if long else range(1, max_batch + 1))
                     if s <= len(members)]
            for size in sizes:
                picked = rng.sample(members, size)
                rows = forward(model, [chunks[k] for k in picked], multiple)
                stats["batches"] += 1
                by = stats["by_size"].setdefault(str(size), {"rows": 0, "diff": 0})
                for k, row in zip(picked, rows, strict=True):
                    if k not in refs:  # the chunk alone
                        refs[k] = forward(model, [chunks[k]], multiple)[0]
                    differ = differences(row, refs[k])
                    for name in differ:
                        stats["differing"][name] += 1
                    states_ok, spans_ok = "states" not in differ, differ <= {"states"}
                    full = len(chunks[k]) % pad_multiple == 0
                    stats["rows"] += 1
                    by["rows"] += 1
                    stats["full_rows"] += full
                    stats["state_diff"] += not states_ok
                    stats["span_diff"] += not spans_ok
                    stats["full_diff"] += full and not (states_ok and spans_ok)
                    by["diff"] += not (states_ok and spans_ok)
        stats["seconds"] = round(time.perf_counter() - start, 1)
        out["schemes"][scheme] = stats
        print(f"threads {threads} {scheme}: {stats['rows']} rows, states differ "
              f"{stats['state_diff']}, spans differ {stats['span_diff']} "
              f"{stats['differing']} ({stats['seconds']} s)", flush=True)
    return out


def markdown(result: dict) -> str:
    """The table: rows compared and rows that differ, per thread count and scheme."""
    lines = ["| torch threads | scheme | batches | rows compared | token states differ "
             "| candidate spans differ | rows of a full chunk (differ) |",
             "|---|---|---|---|---|---|---|"]
    for run in result["runs"]:
        for scheme, s in run["schemes"].items():
            lines.append(f"| {run['threads']} | {scheme} | {s['batches']} | {s['rows']} "
                         f"| {s['state_diff']} | {s['span_diff']} "
                         f"| {s['full_rows']} ({s['full_diff']}) |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    """Run the check and write its results."""
    from e2e_linker.collective.batches import PAD_MULTIPLE, padded_length
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--corpus", default="bc5cdr:dev")
    parser.add_argument("--sentences-from", type=int, default=40,
                        help="documents whose sentences become one-sentence documents")
    parser.add_argument("--abstracts", type=int, default=24, help="whole documents")
    parser.add_argument("--per-bucket", type=int, default=40,
                        help="chunks kept of each padded length at most")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--long-from", type=int, default=160,
                        help="padded length from which only --long-sizes are tried (cost)")
    parser.add_argument("--long-sizes", default="1,2,3,5,8")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="eval/results/batch_identity")
    args = parser.parse_args(argv)

    model = CollectiveLinker.load(args.model or default_linker_dir(), device="cpu").eval()
    pool = chunk_pool(args.corpus, args.abstracts, args.sentences_from, model)
    rng = random.Random(args.seed)
    buckets: dict[int, list] = defaultdict(list)
    for c in pool:
        buckets[padded_length(len(c), PAD_MULTIPLE)].append(c)
    chunks = [c for _, b in sorted(buckets.items())
              for c in rng.sample(b, min(len(b), args.per_bucket))]
    print(f"{len(chunks)} chunks in {len(buckets)} padded lengths", flush=True)
    runs = [run_threads(model, chunks, int(t), args.max_batch,
                        [int(s) for s in args.long_sizes.split(",")], args.long_from,
                        args.seed, PAD_MULTIPLE)
            for t in args.threads.split(",")]
    result = {
        "command": command_line("batch_identity", argv), "machine": machine(),
        "torch": torch.__version__, "pad_multiple": PAD_MULTIPLE,
        "chunks": len(chunks),
        "chunks_by_padded_length": {str(k): min(len(b), args.per_bucket)
                                    for k, b in sorted(buckets.items())},
        "span_floor": SPAN_FLOOR, "runs": runs,
    }
    write_results(args.out, result, markdown(result))
    return result


if __name__ == "__main__":
    main()
