"""Dataset definitions: real splits, the held-out NCBI test, a MedMentions-format fixture."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import FormatError
from data_tools.registry import get_dataset


def test_bc5cdr_splits_exist():
    for split in ("train", "dev", "test"):
        for name in ("bc5cdr", "bc5cdr-bioc"):
            assert get_dataset(name, split).path.is_file()


def test_ncbi_test_is_held_out():
    assert get_dataset("ncbi_disease", "dev").path.is_file()
    with pytest.raises(FormatError, match="held out"):
        get_dataset("ncbi_disease", "test")


def test_medmentions_format_on_a_fixture(tmp_path, monkeypatch):
    root = tmp_path / "medmentions"
    (root / "st21pv" / "data").mkdir(parents=True)
    (root / "full" / "data").mkdir(parents=True)
    corpus = ("25763772|t|DCTN4 as a modifier of chronic Pseudomonas aeruginosa infection\n"
              "25763772|a|Pseudomonas aeruginosa (Pa) infection in cystic fibrosis.\n"
              "25763772\t0\t5\tDCTN4\tT116,T123\tC4308010\n"
              "25763772\t23\t63\tchronic Pseudomonas aeruginosa infection\tT047\tC0854135\n\n"
              "99999999|t|Other.\n99999999|a|Text.\n\n")
    with gzip.open(root / "st21pv" / "data" / "corpus_pubtator.txt.gz", "wt") as handle:
        handle.write(corpus)
    (root / "full" / "data" / "corpus_pubtator_pmids_test.txt").write_text("25763772\n")
    monkeypatch.setenv("E2E_LINKER_DATA", str(tmp_path))
    docs = list(get_dataset("medmentions_st21pv", "test").documents())
    assert [d.id for d in docs] == ["25763772"]
    assert docs[0].annotations[1].concept_ids == ["C0854135"]
    assert docs[0].annotations[0].type == "T116,T123"


def test_missing_medmentions_text_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="not available"):
        list(get_dataset("medmentions_st21pv", "train").documents())


def test_unknown_split():
    with pytest.raises(FormatError, match="unknown dataset"):
        get_dataset("bc5cdr", "validation")
