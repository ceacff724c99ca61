"""eval.base_encoder_speed: each encoder reads the same documents with its own tokenizer."""

from __future__ import annotations

from data_tools.documents import Document, Passage
from eval.base_encoder_speed import forward_over


def test_the_forward_runs_over_every_chunk_of_the_documents(tiny_dir):
    text = "Cisplatin-induced nephrotoxicity in rats. " * 120  # longer than one chunk
    docs = [Document("1", [Passage(0, text, {})]), Document("2", [Passage(0, "Aspirin.", {})])]
    tokens, run = forward_over(str(tiny_dir), docs)
    assert tokens > 512
    run()
