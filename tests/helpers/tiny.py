"""A tiny randomly initialised BERT with the real MiniLM tokenizer, built by the tests."""

from __future__ import annotations

from pathlib import Path

import torch


def counted_encodes(encoder, monkeypatch) -> list[str]:
    """The texts ``encoder.encode`` is called on from now until the test ends, in call order
    (``encode`` itself still runs): what a test of the cache or the index checks was encoded,
    and was not."""
    seen: list[str] = []
    encode = encoder.encode

    def counted(texts, *args, **kwargs):
        seen.extend(texts)
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(encoder, "encode", counted)
    return seen


def tiny_encoder_dir(directory: Path, seed: int = 0) -> Path:
    """Write a 1-layer, 32-dim BERT (random weights, safetensors) plus the MiniLM tokenizer."""
    from transformers import BertConfig, BertModel

    from e2e_linker.encoder.text_encoder import load_tokenizer

    torch.manual_seed(seed)
    tokenizer = load_tokenizer(None)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=512)
    model = BertModel(config)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory
