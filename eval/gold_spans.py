"""Span vectors for given (gold) spans: the collective model's vectors for mentions someone
else found, so that evaluations can score linking alone (gold-span disambiguation tables)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from data_tools.documents import Document
from e2e_linker.collective.annotator import Annotator
from e2e_linker.collective.batches import collate_chunks, length_batches
from e2e_linker.collective.chunking import char_span_to_tokens, chunk_documents


@torch.inference_mode()
def encode_gold_spans(annotator: Annotator, docs: Sequence[Document],
                      spans: Sequence[tuple[int, int, int]]) -> tuple[np.ndarray, list[bool]]:
    """Span vectors for given ``(doc_index, start, end)`` spans, chunked and batched as
    ``annotator`` detects.

    Returns the vectors and, per span, whether it could be placed in a chunk (a span that
    does not align with any owning chunk gets a zero vector and ``False``).
    """
    model = annotator.model
    cfg = model.config
    settings = annotator.settings
    tokenizer = model.tokenizer
    chunks = chunk_documents(docs, tokenizer, cfg.max_length, cfg.max_span_len,
                             cfg.chunk_overlap)
    by_doc: dict[int, list[int]] = {}
    for n, c in enumerate(chunks):
        by_doc.setdefault(c.doc_index, []).append(n)
    placed: dict[int, list[tuple[int, int, int]]] = {}
    for k, (d, start, end) in enumerate(spans):
        for n in by_doc.get(d, []):
            pos = char_span_to_tokens(chunks[n], start, end)
            if pos and chunks[n].owned[pos[0]]:
                placed.setdefault(n, []).append((k, pos[0], pos[1]))
                break
    vectors = np.zeros((len(spans), model.encoder.hidden_size), dtype=np.float32)
    ok = [False] * len(spans)
    device = model.device
    todo = sorted(placed)
    for group in length_batches([chunks[n] for n in todo], settings.batch_size,
                                settings.max_batch_tokens):
        ids = [todo[g] for g in group]
        batch = collate_chunks([chunks[n] for n in ids], tokenizer.pad_token_id or 0, device)
        states = model.token_states(batch)
        rows = [(b, k, i, j) for b, n in enumerate(ids) for k, i, j in placed[n]]
        vecs = model.span_vectors(
            states, torch.tensor([r[0] for r in rows], device=device),
            torch.tensor([r[2] for r in rows], device=device),
            torch.tensor([r[3] for r in rows], device=device))
        for (_, k, _, _), v in zip(rows, vecs.float().cpu().numpy(), strict=True):
            vectors[k] = v
            ok[k] = True
    return vectors, ok
