"""PubTator reading and writing: the real corpora's counts and quirks, and malformed input."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage, Relation
from data_tools.formats import read_documents, write_documents
from data_tools.formats.pubtator import format_document, read_pubtator

# split: (docs, Chemical rows, Disease rows, CID relations, "-1" mentions) from PROVENANCE.md
BC5 = {
    "CDR_TrainingSet": (500, 5203, 4182, 1038, 44 + 32),
    "CDR_DevelopmentSet": (500, 5347, 4244, 1012, 43 + 17 - 1),  # minus the D002544|-1 composite
    "CDR_TestSet": (500, 5385, 4424, 1066, 30 + 61),
}


@pytest.mark.parametrize("split", BC5)
def test_bc5cdr_counts_offsets_and_texts(shared_data, split):
    n_docs, n_chem, n_dis, n_cid, n_none = BC5[split]
    docs = list(read_documents(shared_data / "bc5cdr" / f"{split}.PubTator.txt", strict=True))
    anns = [a for d in docs for a in d.annotations]
    assert len(docs) == n_docs and len({d.id for d in docs}) == n_docs
    assert sum(a.type == "Chemical" for a in anns) == n_chem
    assert sum(a.type == "Disease" for a in anns) == n_dis
    assert sum(len(d.relations) for d in docs) == n_cid
    assert sum(not a.concept_ids for a in anns) == n_none
    for d in docs:
        title, abstract = d.passages
        assert (title.offset, title.type) == (0, "title")
        assert (abstract.offset, abstract.type) == (len(title.text) + 1, "abstract")
        assert all(d.text_at(a.start, a.end) == a.text for a in d.annotations)
    composite = [a for a in anns if a.composite_texts]
    assert composite and all(len(a.composite_texts) == len(a.concept_ids) for a in composite
                             if "pubtator_id" not in a.infons)
    assert all(not a.no_id for a in anns)
    # raw ID strings are kept only where they are not "|".join(concept_ids): dev's one
    # composite with a part that has no concept (its concept_ids drop the "-1")
    raw = {a.infons["pubtator_id"]: a.concept_ids for a in anns if a.infons}
    assert raw == ({"D002544|-1": ["D002544"]} if split == "CDR_DevelopmentSet" else {})


def test_cid_relations_match_the_bioc_release_shape(bc5cdr_test_docs):
    rel = bc5cdr_test_docs[0].relations[0]
    assert rel == Relation(id="R0", infons={"relation": "CID", "Chemical": "D015738",
                                            "Disease": "D003693"})


@pytest.mark.parametrize("name,n_docs,n_mentions", [
    ("NCBItrainset_corpus.txt", 593, 5145), ("NCBIdevelopset_corpus.txt", 100, 787)])
def test_ncbi_reads_with_its_known_quirks(shared_data, tmp_path, name, n_docs, n_mentions):
    src = shared_data / "ncbi_disease" / name
    docs = list(read_documents(src))
    anns = [a for d in docs for a in d.annotations]
    assert len(docs) == n_docs and len(anns) == n_mentions
    assert all(c == c.strip() and c for a in anns for c in a.concept_ids)
    assert {"SpecificDisease", "DiseaseClass", "Modifier", "CompositeMention"} >= {a.type
                                                                                  for a in anns}
    if name.startswith("NCBItrain"):
        assert [d.id for d in docs].count("8528200") == 2  # duplicated in the release: both kept
        (odd,) = [a for a in anns if "text_mismatch" in a.infons]
        assert (odd.start, odd.end) == (711, 761)
        assert odd.text.endswith("plus  ") and " plus " in odd.infons["text_mismatch"]
        spaced = [a for a in anns if "pubtator_id" in a.infons]
        assert any(a.infons["pubtator_id"] == " D015862+D058499" for a in spaced)
        assert any(a.infons["pubtator_id"] == "OMIM:106210 " for a in spaced)
        with pytest.raises(FormatError, match=r"line \d+: mention text"):
            list(read_documents(src, strict=True))
    # the file starts with a blank line, so compare documents, not bytes
    write_documents(docs, tmp_path / "out.txt")
    assert list(read_documents(tmp_path / "out.txt")) == docs
    assert (tmp_path / "out.txt").read_bytes() == src.read_bytes()[1:] + b"\n"


def test_tmchem_rows_without_id_keep_five_columns(shared_data, tmp_path):
    src = shared_data / "bc5cdr" / "baselines" / "TestSet.tmChem.PubTator.txt"
    docs = list(read_documents(src))
    rows = [ln for ln in src.read_text().split("\n") if ln.count("\t") >= 4]
    anns = [a for d in docs for a in d.annotations]
    assert len(docs) == 500 and len(anns) == len(rows)
    assert sum(a.no_id for a in anns) == sum(ln.count("\t") == 4 for ln in rows) == 405
    assert all(a.concept_ids == [] for a in anns if a.no_id)
    assert any(c.startswith("MESH:") for a in anns for c in a.concept_ids)  # prefix kept
    write_documents(docs, tmp_path / "x.txt")
    # the release ends with one extra blank line; everything else is byte-identical
    assert (tmp_path / "x.txt").read_bytes() + b"\n" == src.read_bytes()


def test_dnorm_baseline_round_trips_byte_for_byte(shared_data, tmp_path):
    src = shared_data / "bc5cdr" / "baselines" / "TestSet.DNorm.PubTator.txt"
    docs = list(read_documents(src))
    rows = [ln for ln in src.read_text().split("\n") if ln.count("\t") >= 4]
    assert len(docs) == 500 and sum(len(d.annotations) for d in docs) == len(rows)
    write_documents(docs, tmp_path / "x.txt")
    assert (tmp_path / "x.txt").read_bytes() == src.read_bytes()


def _write(tmp_path, text: str, name: str = "bad.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = "1|t|Aspirin.\n1|a|Headache after aspirin.\n1\t0\t7\tAspirin\tChemical\tD001241\n\n"


@pytest.mark.parametrize("body,line,message", [
    ("1|t|Aspirin.\n1|a|x\n1\t0\t7\tAspirin\n", 3, "columns"),
    ("1|t|Aspirin.\n1|a|x\n1\t0\t7\tAspirin\tChemical\tD1\tp\textra\n", 3, "8 tab-separated"),
    ("1|t|Aspirin.\n1|a|x\n1\tzero\t7\tAspirin\tChemical\tD1\n", 3, "not integers"),
    ("1|t|Aspirin.\n1|a|x\n1\tzero\tseven\tAspirin\tChemical\tD1\n", 3, "not integers"),
    ("1|t|Aspirin.\n1|a|x\n1\t7\t0\tAspirin\tChemical\tD1\n", 3, "bad span"),
    ("1|t|Aspirin.\n1|a|x\n1\t0\t700\tAspirin\tChemical\tD1\n", 3, "outside"),
    ("1\t0\t7\tAspirin\tChemical\tD1\n", 1, "before any"),
    ("1|t|Aspirin.\n2\t0\t7\tAspirin\tChemical\tD1\n", 2, "inside document 1"),
    ("\n1|a|Abstract first\n", 2, "without its title"),
    ("1|t|Aspirin.\njust some words\n", 2, "neither"),
])
def test_malformed_rows_name_file_and_line(tmp_path, body, line, message):
    with pytest.raises(FormatError) as err:
        list(read_documents(_write(tmp_path, body)))
    text = str(err.value)
    assert message in text and "bad.txt" in text and f"line {line}:" in text


def test_errors_come_after_the_good_documents_before_them(tmp_path):
    path = _write(tmp_path, GOOD + "2|t|T\n2\tx\n")
    docs = read_documents(path)
    assert next(docs).id == "1"  # streaming: the first document is out before line 6 is read
    with pytest.raises(FormatError, match="line 6"):
        next(docs)


def test_text_mismatch_is_kept_unless_strict(tmp_path):
    path = _write(tmp_path, "1|t|Aspirin.\n1|a|x\n1\t0\t7\tAspirim\tChemical\tD1\n", "m.txt")
    (doc,) = read_documents(path)
    ann = doc.annotations[0]
    assert ann.text == "Aspirim" and ann.infons["text_mismatch"] == "Aspirin"
    assert format_document(doc).endswith("1\t0\t7\tAspirim\tChemical\tD1\n\n")
    with pytest.raises(FormatError, match="m.txt: document 1, line 3: mention text"):
        list(read_pubtator(path, strict=True))


def test_row_shapes_round_trip_exactly(tmp_path):
    text = ("7|t|Cisplatin and renal and hepatic injury.\n"
            "7|a|Nothing.\n"
            "7\t0\t9\tCisplatin\tChemical\tMESH:D002945\n"
            "7\t14\t38\trenal and hepatic injury\tDisease\tD1|D2\trenal injury|hepatic injury\n"
            "7\t14\t19\trenal\tDisease\t-1\n"
            "7\t24\t31\thepatic\tDisease\t D015862\n"
            "7\t0\t9\tCisplatin\tChemical\n"
            "7\t14\t19\trenal\tDisease\tD1+D2\n"
            "7\tCID\tMESH:D002945\tD1\n"
            "7\tAssociation\tD1\tD2\tNovel\n\n")
    path = _write(tmp_path, text, "shapes.txt")
    (doc,) = read_documents(path)
    a = doc.annotations
    assert a[0].concept_ids == ["MESH:D002945"] and not a[0].infons
    assert a[1].concept_ids == ["D1", "D2"] and not a[1].infons
    assert a[1].composite_texts == ["renal injury", "hepatic injury"]
    assert a[2].concept_ids == [] and not a[2].no_id
    assert a[3].concept_ids == ["D015862"] and a[3].infons["pubtator_id"] == " D015862"
    assert a[4].no_id and a[4].concept_ids == []
    assert a[5].concept_ids == ["D1", "D2"] and a[5].infons["pubtator_id"] == "D1+D2"
    assert [r.infons for r in doc.relations] == [
        {"relation": "CID", "Chemical": "MESH:D002945", "Disease": "D1"},
        {"relation": "Association", "arg1": "D1", "arg2": "D2", "arg3": "Novel"}]
    assert format_document(doc) == text
    a[3].concept_ids = ["D000001"]  # an edited ID wins over the stale raw string
    assert "\thepatic\tDisease\tD000001\n" in format_document(doc)


def test_the_linkers_ids_follow_pubtator3s_columns_and_read_ids_stay_as_written(tmp_path):
    """The linker's namespaced IDs (its ``annotator`` infon) are written as PubTator3 writes
    them: MeSH ``MESH:D…``, a gene's bare NCBI Gene ID, a species' bare taxon; the same IDs
    read from a file are written back as they were."""
    text = "BRCA1 in rats given tacrine."
    doc = Document("5", [Passage(0, text, {"type": "title"})])
    linker = {"annotator": "e2e_linker"}
    for start, end, type_, ids in ((0, 5, "Gene", ["NCBIGene:672"]),
                                   (9, 13, "Species", ["NCBITaxon:10116"]),
                                   (20, 27, "Chemical", ["MESH:D013629"]),
                                   (0, 13, "Gene", ["NCBIGene:672", "NCBIGene:497672"])):
        doc.add_annotation(Annotation(start, end, text[start:end], type_, ids,
                                      infons=dict(linker)))
    rows = format_document(doc).splitlines()[2:-1]
    assert [row.split("\t")[5] for row in rows] == ["672", "10116", "MESH:D013629",
                                                     "672|497672"]
    path = _write(tmp_path, format_document(doc), "linked.txt")
    (back,) = read_documents(path)
    assert [a.concept_ids for a in back.annotations] == [
        ["672"], ["10116"], ["MESH:D013629"], ["672", "497672"]]
    assert format_document(back) == format_document(doc)
    # a file that wrote the namespaces itself (no annotator infon) keeps them
    written = ("6|t|BRCA1 in rats.\n6|a|\n6\t0\t5\tBRCA1\tGene\tNCBIGene:672\n"
               "6\t9\t13\trats\tSpecies\tNCBITaxon:10116\n\n")
    (kept,) = read_documents(_write(tmp_path, written, "namespaced.txt"))
    assert format_document(kept) == written


def test_writer_keeps_offsets_for_multi_passage_and_messy_text():
    doc = Document("9", [Passage(0, "T\tx", {"type": "title"}),
                         Passage(4, "line one\nline two", {"type": "abstract"}),
                         Passage(30, "Third part.", {"type": "paragraph"})])
    doc.add_annotation(Annotation(30, 35, "Third", "Chemical", ["C1"]))
    doc.relations.append(Relation(id="x", nodes=[("a", "b")]))  # no "relation" infon: dropped
    out = format_document(doc)
    # a tab stays in the title line (the reader keeps it); line breaks become spaces
    assert out.split("\n")[:2] == ["9|t|T\tx", "9|a|line one line two" + " " * 9 + "Third part."]
    assert "9\t30\t35\tThird\tChemical\tC1\n" in out and out.count("\n") == 4


def test_writer_refuses_an_abstract_glued_to_the_title(tmp_path):
    doc = Document("9", [Passage(0, "Title", {}), Passage(5, "Abstract", {})])
    with pytest.raises(FormatError, match=r"out.txt: document 9: .*len\(title\) \+ 1"):
        write_documents([doc], tmp_path / "out.txt")
    assert not list(tmp_path.iterdir())


def test_bom_crlf_gzip_accepted(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode())
    (doc,) = read_documents(path)
    assert doc.id == "1" and doc.passages[0].text == "Aspirin."
    assert doc.passages[1].text == "Headache after aspirin."
    assert doc.annotations[0].concept_ids == ["D001241"]
    packed = tmp_path / "x.txt.gz"
    packed.write_bytes(gzip.compress(GOOD.encode()))
    assert list(read_documents(packed)) == [doc]


def test_non_utf8_is_a_clear_error(tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(GOOD.encode() + "2|t|Caf\xe9.\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r"latin1.txt: line 5: not valid UTF-8 \(byte 0xe9"):
        list(read_documents(bad))


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_file_is_an_error(tmp_path, content):
    (tmp_path / "e.txt").write_bytes(content)
    with pytest.raises(FormatError, match="e.txt: no documents"):
        list(read_documents(tmp_path / "e.txt"))
