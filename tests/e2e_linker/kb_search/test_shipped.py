"""The shipped files' manifest: it matches the tree, and a damaged shipped file is named."""

from __future__ import annotations

import shutil

import pytest

from e2e_linker.defaults import DEFAULT_MODEL_DIR
from e2e_linker.errors import UserError
from e2e_linker.kb_search import integrity, shipped
from e2e_linker.kb_search.shipped import (
    MANIFEST_FILE,
    check_shipped,
    listed_files,
    read_manifest,
    require_shipped,
    require_shipped_tree,
    sha256_file,
    update_manifest,
    verify_tree,
    write_manifest,
)
from tests.helpers.damage import poke


def test_the_manifest_matches_the_shipped_tree():
    """Fails when a shipped file changes without its manifest: run
    ``python -c "from e2e_linker.kb_search.shipped import write_manifest; write_manifest(
    'e2e_linker/default_model')"``."""
    listed = read_manifest(DEFAULT_MODEL_DIR / MANIFEST_FILE)
    assert sorted(listed) == listed_files(DEFAULT_MODEL_DIR)
    assert {rel: sha256_file(DEFAULT_MODEL_DIR / rel) for rel in listed} == listed


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    # the tree stands in for the installed package's model folder
    monkeypatch.setattr(shipped, "PACKAGE_ROOT", (tmp_path / "package").resolve())
    root = tmp_path / "package" / "model"
    (root / "normalizer").mkdir(parents=True)
    (root / "heads.safetensors").write_bytes(bytes(range(256)) * 400)
    (root / "kb_index.safetensors").write_bytes(b"\x07" * 300_000)
    (root / "normalizer" / "kb_index.safetensors").write_bytes(b"\x05" * 1000)
    write_manifest(root)
    return root


def test_ten_changed_bytes_in_a_shipped_file_are_named(tree, monkeypatch):
    target = tree / "kb_index.safetensors"
    require_shipped(target)  # intact: checked whole, remembered
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    assert check_shipped(target).state == "ok"
    poke(target, 123_456, bytes(10))
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    with pytest.raises(UserError, match=rf"^shipped file {target} is damaged \(its sha256 is "
                                        rf"not the one .*SHA256SUMS lists\); reinstall"):
        require_shipped(target)
    with pytest.raises(UserError, match="kb_index.safetensors is damaged"):
        require_shipped_tree(tree, skip=("normalizer",))
    states = {v.path.relative_to(tree.resolve()).as_posix(): v.state for v in verify_tree(tree)}
    assert states == {"heads.safetensors": "ok", "kb_index.safetensors": "damaged",
                      "normalizer/kb_index.safetensors": "ok"}


def test_a_files_own_model_is_skipped_and_unlisted_files_are_said(tree):
    poke(tree / "normalizer" / "kb_index.safetensors", 0, bytes(10))
    require_shipped_tree(tree, skip=("normalizer",))  # the normalizer's: not this model's
    (tree / "extra.json").write_text("{}")
    found = {(v.path.name, v.state) for v in verify_tree(tree)}
    assert ("extra.json", "unverified") in found and ("kb_index.safetensors", "damaged") in found


def test_a_rewritten_file_updates_its_manifest_entry(tree, tmp_path):
    (tree / "kb_index.safetensors").write_bytes(b"new index")
    update_manifest(tree / "kb_index.safetensors")
    assert {v.state for v in verify_tree(tree)} == {"ok"}
    mine = tmp_path / "own"
    shutil.copytree(tree, mine)
    (mine / MANIFEST_FILE).unlink()
    assert check_shipped(mine / "heads.safetensors").state == "unverified"
    update_manifest(mine / "heads.safetensors")  # no manifest: nothing written
    assert not (mine / MANIFEST_FILE).exists()


def test_a_copy_outside_the_package_is_the_users_own(tree, tmp_path):
    """A model folder copied (or assembled from links) elsewhere keeps its SHA256SUMS beside
    files its user changes (mined names rebuilt, the packed index left out): not shipped."""
    copy = tmp_path / "elsewhere" / "model"
    shutil.copytree(tree, copy)
    (copy / "kb_index.safetensors").unlink()
    poke(copy / "heads.safetensors", 0, bytes(10))
    require_shipped_tree(copy)  # nothing raised
    assert check_shipped(copy / "heads.safetensors").state == "unverified"
