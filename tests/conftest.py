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
