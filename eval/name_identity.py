"""Whether a KB name's vector depends on the names encoded with it, and what encoding costs.

    python -m eval.name_identity [--names 4000] [--alone 200] [--out DIR]

Takes ``--names`` names of the default model's KB (a fixed sample: every k-th name), and
encodes them with the model's entity encoder two ways — the encoder's own
(:meth:`~e2e_linker.encoder.text_encoder.TextEncoder.encode`, batches of one token length, no
padding) and the way it encoded before decision 0056 (:func:`padded_encode`: names sorted by
length, each batch padded to its longest) — each three times: all names in batches of 256;
in reverse order with other names of the KB mixed in, in batches of 64; and ``--alone`` of them
one at a time. It counts the names whose fp16 vector (what the cache stores) differs between
the runs of one way, and times the first run of each.

Why: the vector cache keeps each name's vector from the run that first encoded it, so a vector
that depends on its batch makes links depend on which documents a cache saw before
(docs/decisions/0056-names-encoded-alone.md). Written to ``--out`` (default
``eval/results/name_identity``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from e2e_linker.encoder.text_encoder import TextEncoder
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "name_identity"


@torch.inference_mode()
def padded_encode(encoder: TextEncoder, texts: Sequence[str], batch_size: int,
                  dtype: type = np.float16) -> np.ndarray:
    """Vectors as ``TextEncoder.encode`` made them before decision 0056: texts sorted by
    character length, each batch padded to its longest text (the comparison's baseline)."""
    encoder.eval()
    out = np.zeros((len(texts), encoder.hidden_size), dtype=dtype)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = encoder.tokenize([texts[i] for i in idx])
        out[idx] = encoder(batch["input_ids"], batch["attention_mask"]).float().numpy()
    return out


def unpadded_encode(encoder: TextEncoder, texts: Sequence[str], batch_size: int,
                    dtype: type = np.float16) -> np.ndarray:
    """Vectors as the encoder makes them now."""
    return encoder.encode(texts, batch_size=batch_size, dtype=dtype)


def compare(encode: Callable[..., np.ndarray], encoder: TextEncoder, names: list[str],
            others: list[str], alone: int, dtype: type = np.float16) -> dict:
    """How many of ``names`` get another vector (``dtype``: the cache's fp16) when encoded
    with ``others`` mixed in (reversed, batches of 64) or one at a time, than all together in
    batches of 256."""
    start = time.perf_counter()
    together = encode(encoder, names, 256, dtype)
    seconds = time.perf_counter() - start
    mixed_in = list(reversed(names)) + others
    mixed = encode(encoder, mixed_in, 64, dtype)[:len(names)][::-1]
    single = np.stack([encode(encoder, [name], 1, dtype)[0] for name in names[:alone]])
    return {"names": len(names), "seconds": round(seconds, 1),
            "differ_mixed": int((together != mixed).any(axis=1).sum()),
            "differ_alone": int((together[:alone] != single).any(axis=1).sum()),
            "alone": alone}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=int, default=4000)
    parser.add_argument("--alone", type=int, default=200)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.defaults import DEFAULT_MODEL_DIR
    from e2e_linker.kb_search.entity_index import index_name_columns

    torch.set_num_threads(1)
    model = CollectiveLinker.load(DEFAULT_MODEL_DIR)
    knowledge = load_model_kb(DEFAULT_MODEL_DIR, None, None)
    every, _, _ = index_name_columns(knowledge, model.config.lexical_types)
    step = max(1, len(every) // (2 * args.names))
    sample = list(dict.fromkeys(every[::step]))
    names, others = sample[:args.names], sample[args.names:args.names + args.names // 4]
    encoder = model.entity_encoder
    rows = {"unpadded (now)": compare(unpadded_encode, encoder, names, others, args.alone),
            "padded (before 0056)": compare(padded_encode, encoder, names, others, args.alone)}
    result = {"command": command_line("name_identity", argv), "machine": machine(),
              "threads": 1, "rows": rows}
    lines = [f"Name vectors of the default model's KB (fp16, as cached), {machine()}, one "
             "thread", "",
             "| encoding | names | differ with other names mixed in | differ encoded alone "
             "| seconds (all, batches of 256) |", "|---|---|---|---|---|"]
    for label, row in rows.items():
        lines.append(f"| {label} | {row['names']:,} | {row['differ_mixed']:,} | "
                     f"{row['differ_alone']:,} of {row['alone']:,} | {row['seconds']} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
