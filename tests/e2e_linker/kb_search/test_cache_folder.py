"""Where the cache lives and how it is written: the folder, a clear error, the lock."""

from __future__ import annotations

import pytest

from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import default_cache_dir, exclusive, writable


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"


def test_a_folder_that_cannot_be_written_is_one_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(UserError, match="cannot write the KB cache"):
        with exclusive(blocker / "sub", "writes"):
            pass
    with pytest.raises(UserError, match="E2E_LINKER_CACHE"), writable(tmp_path):
        (blocker / "x").write_text("")


def test_the_lock_is_held_in_the_folder(tmp_path):
    with exclusive(tmp_path / "store", "writes", progress=False):
        assert (tmp_path / "store" / ".lock").is_file()
