"""The KB a collective model links against: manifest, mined names, and the hash check."""

from __future__ import annotations

import json

import pytest

from data_tools.kb import KB, Concept
from e2e_linker.collective.model_dir import EXTRA_NAMES_FILE, MANIFEST_FILE
from e2e_linker.collective.model_kb import assemble_kb, load_model_kb, save_model_kb
from e2e_linker.errors import UserError

ROWS = ["C1\taspirin", "C2\tibuprofen", "D1\theadache"]


def _kb_file(tmp_path, rows=ROWS):
    path = tmp_path / "kb.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _model(tmp_path, spec: str, extra: KB | None = None):
    """A model directory holding only what ``save_model_kb`` and ``CollectiveLinker.save`` write
    about the KB (no weights: the KB side needs none)."""
    directory = tmp_path / "model"
    manifest = save_model_kb(directory, spec, extra, assemble_kb(spec, extra))
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest))
    return directory, manifest


def test_manifest_records_spec_hash_and_sizes(tmp_path):
    spec = f"tsv:{_kb_file(tmp_path)}"
    extra = KB([Concept("C1", "acetylsalicylic acid", [], "", "corpus")])
    directory, manifest = _model(tmp_path, spec, extra)
    merged = assemble_kb(spec, extra)
    assert manifest == {"kb": spec, "extra_names": EXTRA_NAMES_FILE,
                        "kb_hash": merged.content_hash(), "concepts": 3, "names": 4}
    assert (directory / EXTRA_NAMES_FILE).is_file()
    _, plain = _model(tmp_path / "plain", spec)
    assert plain["extra_names"] is None and plain["names"] == 3
    assert plain["kb_hash"] != manifest["kb_hash"]


def test_load_model_kb_merges_the_mined_names(tmp_path):
    spec = f"tsv:{_kb_file(tmp_path)}"
    extra = KB([Concept("C1", "acetylsalicylic acid", [], "", "corpus")])
    directory, manifest = _model(tmp_path, spec, extra)
    kb = load_model_kb(directory, cache_dir=tmp_path / "cache")
    assert kb.content_hash() == manifest["kb_hash"]
    assert "acetylsalicylic acid" in kb.get("C1").all_names()
    assert [c.id for c in kb] == ["C1", "C2", "D1"]


def test_a_changed_kb_is_refused_unless_given_explicitly(tmp_path):
    path = _kb_file(tmp_path)
    spec = f"tsv:{path}"
    directory, _ = _model(tmp_path, spec)
    assert len(load_model_kb(directory, cache_dir=tmp_path / "cache")) == 3
    _kb_file(tmp_path, ROWS + ["D2\tnausea"])  # the KB file changes after the model was built
    with pytest.raises(UserError, match="differs from the one the model was built with"):
        load_model_kb(directory, cache_dir=tmp_path / "cache")
    # --kb: the user asks for this KB, so no hash check
    kb = load_model_kb(directory, spec, tmp_path / "cache")
    assert len(kb) == 4 and kb.get("D2").name == "nausea"


def test_a_model_without_a_kb_and_a_missing_kb_file_are_user_errors(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(UserError, match="pass --kb"):
        load_model_kb(tmp_path / "model", cache_dir=tmp_path / "cache")
    with pytest.raises(UserError, match="absent.tsv"):
        load_model_kb(tmp_path / "model", f"tsv:{tmp_path / 'absent.tsv'}", tmp_path / "cache")


def test_mined_names_take_the_datasets_types():
    """A gene corpus's FamilyName / DomainMotif mentions are not mined as names."""
    from e2e_linker.collective.model_kb import mined_names

    kb = mined_names(["gnormplus:train"])
    assert {c.type for c in kb} == {"Gene"}
    assert len(kb) > 500
