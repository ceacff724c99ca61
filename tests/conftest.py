"""Shared fixtures: the real data beside the checkout (../shared/data, or $E2E_LINKER_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder; CI always has it, so its absence is an error, not a skip."""
    from data_tools.registry import data_dir

    return data_dir()


@pytest.fixture(scope="session")
def bc5cdr_test_docs(shared_data):
    from data_tools.formats import read_documents

    return list(read_documents(shared_data / "bc5cdr" / "CDR_TestSet.PubTator.txt"))


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A tiny random BERT with the MiniLM tokenizer (tests.helpers.tiny), built once a session."""
    from tests.helpers.tiny import tiny_encoder_dir

    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "encoder")


@pytest.fixture(scope="session")
def tiny_encoder(tiny_dir):
    """``tiny_dir`` loaded as a mean-pooled TextEncoder in eval mode."""
    from e2e_linker.encoder.text_encoder import TextEncoder

    return TextEncoder.from_pretrained(str(tiny_dir), pooling="mean", max_length=32).eval()
