"""The registry: dataset definitions (real splits, the held-out NCBI test, a MedMentions-format
fixture), KB specs and corpus specs."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import Document, FormatError, Passage
from data_tools.formats import read_documents, write_documents
from data_tools.registry import get_dataset, load_corpus, load_kb


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


def _tsv(path, rows):
    path.write_text("".join(f"{cid}\t{name}\n" for cid, name in rows))
    return path


@pytest.mark.parametrize("spec", ["nonsense", "tsv", "csv:kb.tsv", "+bc5cdr", ":kb.tsv"])
def test_bad_kb_specs_name_the_part_and_the_choices(spec):
    with pytest.raises(FormatError, match="unknown KB spec part") as info:
        load_kb(spec)
    assert "bc5cdr" in str(info.value) and "tsv" in str(info.value)  # the choices are listed


def test_a_missing_kb_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_kb(f"tsv:{tmp_path / 'absent.tsv'}")


def test_kb_spec_parts_merge_in_order(tmp_path):
    first = _tsv(tmp_path / "a.tsv", [("X1", "foo"), ("X2", "bar")])
    second = _tsv(tmp_path / "b.tsv", [("X2", "baz"), ("X3", "qux")])
    kb = load_kb(f"tsv:{first} + tsv:{second}")
    assert [c.id for c in kb] == ["X1", "X2", "X3"]
    assert kb.get("X2").all_names() == ["bar", "baz"]  # the later part merges into the earlier
    assert len(load_kb(f"tsv:{second}")) == 2


def test_load_corpus_reads_a_path_in_order_up_to_the_limit(tmp_path):
    docs = [Document(str(n), [Passage(0, f"Title {n}.", {"type": "title"})]) for n in range(5)]
    path = tmp_path / "corpus.txt"
    write_documents(docs, path, "pubtator")
    assert [d.id for d in load_corpus(str(path))] == ["0", "1", "2", "3", "4"]
    assert [d.id for d in load_corpus(str(path), limit=2)] == ["0", "1"]
    # a path holding a colon is a path, not a dataset split
    odd = tmp_path / "bc5cdr:dev"
    write_documents(docs[:1], odd, "pubtator")
    assert [d.id for d in load_corpus(str(odd))] == ["0"]


def test_load_corpus_reads_a_dataset_split_with_a_limit(shared_data):
    dev = shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"
    first = [d for _, d in zip(range(3), read_documents(dev), strict=False)]
    docs = load_corpus("bc5cdr:dev", limit=3)
    assert [d.id for d in docs] == [d.id for d in first] and len(docs) == 3
    assert docs[0].text == first[0].text
    assert [a.concept_ids for a in docs[0].annotations] == \
        [a.concept_ids for a in first[0].annotations]
    with pytest.raises(FormatError, match="unknown dataset"):
        load_corpus("bc5cdr:validation")
