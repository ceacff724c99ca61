"""A tiny random BERT with the MiniLM tokenizer, shared by the normalizer tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    from tests.e2e_linker.tiny import tiny_encoder_dir

    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "encoder")


@pytest.fixture(scope="session")
def tiny_encoder(tiny_dir):
    from e2e_linker.encoder.text_encoder import TextEncoder

    return TextEncoder.from_pretrained(str(tiny_dir), pooling="mean", max_length=32).eval()
