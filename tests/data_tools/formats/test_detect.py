"""The format-independent API: detection, directories, atomic writers, cross-format round trips."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import data_tools.formats as formats
from data_tools.documents import Document, FormatError, Passage
from data_tools.formats import (
    FORMATS,
    detect_format,
    open_writer,
    read_collection_info,
    read_documents,
    write_documents,
)

SPLITS = ["CDR_TrainingSet", "CDR_DevelopmentSet", "CDR_TestSet"]
PUBTATOR = "1|t|Aspirin.\n1|a|Headache.\n1\t0\t7\tAspirin\tChemical\tD001241\n\n"


def _essence(docs) -> list:
    """What must survive any format: texts, offsets, mentions, IDs, composites, relations.

    (A PubTator document read back from BioC also has annotation ids and the ``identifier``
    infon that BioC needs, so whole-Document equality is not the right test there.)
    """
    return [(d.id, d.text, [p.offset for p in d.passages],
             [(a.start, a.end, a.text, a.type, a.concept_ids, a.composite_texts, a.no_id)
              for a in d.annotations], [r.infons for r in d.relations]) for d in docs]


def test_public_api():
    assert FORMATS == ("pubtator", "bioc", "biocjson")
    assert set(formats.__all__) >= {"FORMATS", "detect_format", "open_writer", "read_documents",
                                    "read_collection_info", "write_documents"}


@pytest.mark.parametrize("split", SPLITS)
def test_pubtator_to_bioc_xml_to_bioc_json_to_pubtator_is_byte_identical(shared_data, tmp_path,
                                                                          split):
    src = shared_data / "bc5cdr" / f"{split}.PubTator.txt"
    assert write_documents(read_documents(src), tmp_path / "a.xml") == 500
    write_documents(read_documents(tmp_path / "a.xml"), tmp_path / "b.json")
    write_documents(read_documents(tmp_path / "b.json"), tmp_path / "c.txt")
    assert (tmp_path / "c.txt").read_bytes() == src.read_bytes()


def test_ncbi_through_bioc_gives_the_same_documents_back(shared_data, tmp_path):
    src = shared_data / "ncbi_disease" / "NCBIdevelopset_corpus.txt"
    docs = list(read_documents(src))
    write_documents(docs, tmp_path / "a.json")
    write_documents(read_documents(tmp_path / "a.json"), tmp_path / "b.xml")
    write_documents(read_documents(tmp_path / "b.xml"), tmp_path / "c.txt")
    assert list(read_documents(tmp_path / "c.txt")) == docs


@pytest.mark.parametrize("name,fmt", [
    ("a.xml", "bioc"), ("a.BioC.xml", "bioc"), ("a.bioc.xml", "bioc"), ("a.json", "biocjson"),
    ("a.jsonl", "biocjson"), ("a.txt", "pubtator"), ("a.PubTator", "pubtator"),
    ("a.txt.gz", "pubtator"), ("a.xml.gz", "bioc")])
def test_detect_format_from_the_name(tmp_path, name, fmt):
    assert detect_format(tmp_path / name) == fmt  # the file need not exist


@pytest.mark.parametrize("content,fmt", [
    (b"\n\n123|t|Title\n", "pubtator"), (b"\xef\xbb\xbf  <?xml version='1.0'?><collection/>", "bioc"),
    (b'{"documents": []}', "biocjson"), (b'[{"id": "1"}]', "biocjson")])
def test_detect_format_by_sniffing_unknown_names(tmp_path, content, fmt):
    path = tmp_path / "corpus.dat"
    path.write_bytes(content)
    assert detect_format(path) == fmt
    gz = tmp_path / "corpus.dat.gz"
    gz.write_bytes(gzip.compress(content))
    assert detect_format(gz) == fmt


def test_detect_format_says_when_it_cannot_tell(tmp_path):
    path = tmp_path / "notes.dat"
    path.write_text("hello world\n")
    with pytest.raises(FormatError, match="notes.dat: cannot tell the format"):
        detect_format(path)
    with pytest.raises(FormatError, match="cannot tell the format"):
        list(read_documents(path))
    with pytest.raises(FormatError, match="cannot tell"):
        detect_format(tmp_path / "out.dat", for_writing=True)
    with pytest.raises(FormatError, match="unknown format 'conll'"):
        list(read_documents(path, "conll"))


def test_explicit_format_wins_over_the_name(tmp_path):
    path = tmp_path / "corpus.xml"
    path.write_text(PUBTATOR)
    assert [d.id for d in read_documents(path, "pubtator")] == ["1"]
    assert [d.id for d in read_documents(path, "txt")] == ["1"]
    with pytest.raises(FormatError, match="malformed XML"):
        list(read_documents(path))


def test_directory_reads_supported_files_in_name_order(tmp_path, bc5cdr_test_docs):
    docs = bc5cdr_test_docs[:4]
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_documents(docs[2:3], folder / "c.xml")
    write_documents(docs[:1], folder / "a.txt")
    write_documents(docs[1:2], folder / "b.json")
    (folder / "d.data").write_text(json.dumps({"id": docs[3].id, "passages": [
        {"offset": 0, "text": docs[3].passages[0].text}]}))  # sniffed as JSON
    (folder / "README.md").write_text("# not a corpus\n")  # skipped
    (folder / ".hidden.txt").write_text("garbage")  # skipped
    (folder / "sub").mkdir()  # not descended into
    assert [d.id for d in read_documents(folder)] == [d.id for d in docs]
    assert _essence(read_documents(folder))[:3] == _essence(docs[:3])
    assert read_collection_info(folder) == {"source": "", "date": "", "key": "", "infons": {}}


def test_directory_without_corpus_files_is_an_error(tmp_path):
    (tmp_path / "README.md").write_text("nothing here")
    with pytest.raises(FormatError, match="holds no PubTator, BioC XML or BioC JSON file"):
        list(read_documents(tmp_path))


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(read_documents(tmp_path / "nope.txt"))


def test_read_documents_is_lazy(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text(PUBTATOR)
    docs = read_documents(path)
    path.unlink()  # nothing has been opened yet
    with pytest.raises(FileNotFoundError):
        next(docs)


@pytest.mark.parametrize("name", ["out.txt", "out.xml", "out.json", "out.jsonl", "out.txt.gz"])
def test_failed_write_leaves_no_file_and_keeps_an_old_one(tmp_path, bc5cdr_test_docs, name):
    target = tmp_path / name
    target.write_bytes(b"old contents")

    def broken():
        yield from bc5cdr_test_docs[:3]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_documents(broken(), target)
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert target.read_bytes() == b"old contents"


def test_writer_shows_nothing_until_closed(tmp_path, bc5cdr_test_docs):
    target = tmp_path / "sub" / "out.xml"
    with open_writer(target) as writer:
        writer.write(bc5cdr_test_docs[0])
        assert not target.exists()
        (temp,) = target.parent.iterdir()
        assert temp.name.startswith(".out.xml.")  # hidden, beside the target
    assert [p.name for p in target.parent.iterdir()] == ["out.xml"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_default_collection_info_is_byte_stable(tmp_path, bc5cdr_test_docs):
    write_documents(bc5cdr_test_docs[:2], tmp_path / "a.xml")
    write_documents(bc5cdr_test_docs[:2], tmp_path / "a.json")
    assert b"<source>e2e_linker</source>\n<date></date>\n<key></key>" in \
        (tmp_path / "a.xml").read_bytes()
    head = json.loads((tmp_path / "a.json").read_text())
    assert (head["source"], head["date"], head["key"]) == ("e2e_linker", "", "")
    info = {"source": "S", "date": "2015", "key": "k", "infons": {"n": "v"}}
    for name in ("b.xml", "b.json"):
        write_documents(bc5cdr_test_docs[:1], tmp_path / name, collection_info=info)
        assert read_collection_info(tmp_path / name) == info
    assert read_collection_info(tmp_path / "a.xml")["source"] == "e2e_linker"


def test_gzip_output_is_reproducible_and_readable(tmp_path, bc5cdr_test_docs):
    for name in ("a.xml.gz", "b.xml.gz", "c.json.gz", "d.txt.gz"):
        write_documents(bc5cdr_test_docs[:3], tmp_path / name)
        assert _essence(read_documents(tmp_path / name)) == _essence(bc5cdr_test_docs[:3])
    assert (tmp_path / "a.xml.gz").read_bytes() == (tmp_path / "b.xml.gz").read_bytes()
    assert gzip.decompress((tmp_path / "d.txt.gz").read_bytes()).startswith(
        f"{bc5cdr_test_docs[0].id}|t|".encode())


def test_write_documents_counts_and_jsonl_has_one_document_per_line(tmp_path):
    docs = [Document(str(n), [Passage(0, f"text {n}", {})]) for n in range(3)]
    assert write_documents(docs, tmp_path / "x.jsonl") == 3
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["0", "1", "2"]
    assert write_documents(iter(docs), tmp_path / "x.out", fmt="bioc-json") == 3
    assert list(read_documents(tmp_path / "x.out", "biocjson")) == docs
