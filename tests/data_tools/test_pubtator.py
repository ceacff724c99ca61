"""PubTator reading/writing on real files and on malformed input."""

from __future__ import annotations

import pytest

from data_tools.documents import FormatError
from data_tools.formats import read_documents, write_documents

BC5 = ["CDR_TrainingSet", "CDR_DevelopmentSet", "CDR_TestSet"]


def test_bc5cdr_test_counts(bc5cdr_test_docs):
    docs = bc5cdr_test_docs
    assert len(docs) == 500
    anns = [a for d in docs for a in d.annotations]
    assert sum(a.type == "Chemical" for a in anns) == 5385
    assert sum(a.type == "Disease" for a in anns) == 4424
    assert sum(len(d.relations) for d in docs) == 1066
    for d in docs:
        assert d.passages[1].offset == len(d.passages[0].text) + 1
        for a in d.annotations:
            assert d.text_at(a.start, a.end) == a.text
    composite = [a for a in anns if a.composite_texts]
    assert composite and all(len(a.composite_texts) == len(a.concept_ids) for a in composite)
    assert sum(not a.concept_ids for a in anns) == 91  # the "-1" mentions (30 + 61)


@pytest.mark.parametrize("split", BC5)
def test_lossless_round_trip_through_bioc(shared_data, tmp_path, split):
    """PubTator → BioC XML → BioC JSON → PubTator gives back the very same bytes."""
    src = shared_data / "bc5cdr" / f"{split}.PubTator.txt"
    write_documents(read_documents(src), tmp_path / "a.xml")
    write_documents(read_documents(tmp_path / "a.xml"), tmp_path / "b.json")
    write_documents(read_documents(tmp_path / "b.json"), tmp_path / "c.txt")
    assert (tmp_path / "c.txt").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("name,docs,mentions", [
    ("NCBItrainset_corpus.txt", 593, 5145), ("NCBIdevelopset_corpus.txt", 100, 787)])
def test_ncbi_reads_with_known_quirks(shared_data, name, docs, mentions):
    parsed = list(read_documents(shared_data / "ncbi_disease" / name))
    assert len(parsed) == docs
    assert sum(len(d.annotations) for d in parsed) == mentions
    anns = [a for d in parsed for a in d.annotations]
    assert all(c == c.strip() for a in anns for c in a.concept_ids)
    if docs == 593:
        assert [d.id for d in parsed].count("8528200") == 2
        assert sum("text_mismatch" in a.infons for a in anns) == 1


def test_tmchem_rows_without_id_round_trip(shared_data, tmp_path):
    src = shared_data / "bc5cdr" / "baselines" / "TestSet.tmChem.PubTator.txt"
    docs = list(read_documents(src))
    assert sum(a.no_id for d in docs for a in d.annotations) == 405
    write_documents(docs, tmp_path / "x.json")
    write_documents(read_documents(tmp_path / "x.json"), tmp_path / "x.txt")
    assert (tmp_path / "x.txt").read_text().rstrip("\n") == src.read_text().rstrip("\n")


GOOD = "1|t|Aspirin.\n1|a|Headache after aspirin.\n1\t0\t7\tAspirin\tChemical\tD001241\n\n"


@pytest.mark.parametrize("body,message", [
    ("1|t|Aspirin.\n1|a|x\n1\t0\t7\tAspirin\n", "columns"),
    ("1|t|Aspirin.\n1|a|x\n1\tzero\t7\tAspirin\tChemical\tD1\n", "not integers"),
    ("1|t|Aspirin.\n1|a|x\n1\t7\t0\tAspirin\tChemical\tD1\n", "bad span"),
    ("1|t|Aspirin.\n1|a|x\n1\t0\t700\tAspirin\tChemical\tD1\n", "outside"),
    ("1\t0\t7\tAspirin\tChemical\tD1\n", "before any title"),
    ("1|t|Aspirin.\n2\t0\t7\tAspirin\tChemical\tD1\n", "inside document 1"),
])
def test_malformed_rows_name_file_and_line(tmp_path, body, message):
    path = tmp_path / "bad.txt"
    path.write_text(body)
    with pytest.raises(FormatError) as err:
        list(read_documents(path))
    assert message in str(err.value) and "bad.txt" in str(err.value) and "line" in str(err.value)


def test_text_mismatch_strict_and_lenient(tmp_path):
    from data_tools.formats.pubtator import read_pubtator

    path = tmp_path / "m.txt"
    path.write_text("1|t|Aspirin.\n1|a|x\n1\t0\t7\tAspirim\tChemical\tD1\n")
    (doc,) = read_pubtator(path)
    assert doc.annotations[0].infons["text_mismatch"] == "Aspirin"
    with pytest.raises(FormatError, match="line 3"):
        list(read_pubtator(path, strict=True))


def test_bom_crlf_and_bad_bytes(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode())
    (doc,) = read_documents(path)
    assert doc.passages[0].text == "Aspirin." and doc.annotations[0].concept_ids == ["D001241"]
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("1|t|Caf\xe9.\n".encode("latin-1"))
    with pytest.raises(FormatError, match="UTF-8"):
        list(read_documents(bad))


def test_empty_file_is_an_error(tmp_path):
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(FormatError, match="empty"):
        list(read_documents(tmp_path / "e.txt"))
