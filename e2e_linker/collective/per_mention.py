"""The paper's per-mention baseline (``linker annotate --mode per-mention``): each kept span
re-encoded in its own window, for side-by-side speed and accuracy comparisons with the
collective pass. Not on the default path: the collective mode encodes each chunk once."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from data_tools.documents import Document
from e2e_linker.collective.chunking import tokenize_document
from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.collective.span_selection import SpanPrediction


@torch.inference_mode()
def reencode_per_mention(model: CollectiveLinker, docs: Sequence[Document],
                         spans: list[SpanPrediction], context_window: int = 128,
                         prefix_ids: Sequence[int] = ()) -> None:
    """Replace each span's vector by one from its own ``context_window``-token forward.

    Each document is tokenized once; each mention gets the window of tokens centred on it
    (the paper's per-mention dual encoder), one encoder forward per mention, read with the
    guideline tag ``prefix_ids`` after [CLS] as annotate's chunks are.
    """
    tokenizer = model.tokenizer
    device = model.device
    tokens = {d: tokenize_document(docs[d], tokenizer, d) for d in {s.doc_index for s in spans}}
    prefix = list(prefix_ids)
    room = context_window - 2 - len(prefix)
    for span in spans:
        toks = tokens[span.doc_index]
        inside = [t for t, (a, b) in enumerate(zip(toks.starts, toks.ends, strict=True))
                  if b > span.start and a < span.end]
        if not inside:
            continue
        first, last = inside[0], inside[-1]
        left = max(0, min(first - (room - (last - first + 1)) // 2, len(toks.ids) - room))
        window = toks.ids[left: left + room]
        ids = torch.tensor([[tokenizer.cls_token_id, *prefix, *window, tokenizer.sep_token_id]],
                           device=device)
        states = model.token_states({"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        a = 1 + len(prefix) + first - left
        z = 1 + len(prefix) + min(last, left + room - 1) - left
        span.vector = states[0, a: z + 1].float().mean(0).cpu().numpy()
