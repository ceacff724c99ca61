"""No loss and determinism through the annotate engine, on all three BC5CDR splits.

The transform is a stand-in annotator that adds one linked mention per passage through the
real :func:`attach_annotations` (a model over 1,500 documents would take minutes here and
adds nothing to what is tested: what the run does with documents around the model). Every
input document, document/passage infon, passage, relation and existing annotation must come
out unchanged, output must be byte-identical from run to run and between the one-file and
the shard-directory modes, and BioC XML output must validate against the BioC DTD.
"""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Annotation, Document
from data_tools.formats import read_documents
from e2e_linker.collective.annotator import attach_annotations
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.jobs.corpus_run import merge_shards, run_to_directory, run_to_file
from tests.helpers.bioc_dtd import validate_bioc

SPLITS = ["CDR_TrainingSet", "CDR_DevelopmentSet", "CDR_TestSet"]


def first_word_annotator(docs: list[Document]) -> list[Document]:
    """Links the first word of every non-empty passage to a made-up concept."""
    spans, links = [], []
    for n, doc in enumerate(docs):
        for passage in doc.passages:
            word = passage.text.split(" ")[0]
            if not word:
                continue
            start, end = passage.offset, passage.offset + len(word)
            spans.append(SpanPrediction(n, start, end, 0.5, "Chemical", np.zeros(1)))
            links.append(Annotation(start, end, word, "Chemical", ["D000001"],
                                    infons={"annotator": "e2e_linker"}, mention_score=0.5,
                                    link_score=0.25))
    return attach_annotations(docs, spans, links)


def _annotation(a: Annotation) -> tuple:
    return (a.id, a.locations, a.text, a.type, a.concept_ids, a.infons, a.composite_texts,
            a.no_id)


def _everything_but_new_annotations(doc: Document) -> tuple:
    return (doc.id, doc.infons, [(r.id, r.infons, r.nodes) for r in doc.relations],
            [(p.offset, p.text, p.infons, [(r.id, r.infons, r.nodes) for r in p.relations],
              [_annotation(a) for a in p.annotations if a.infons.get("annotator") != "e2e_linker"])
             for p in doc.passages])


@pytest.mark.parametrize("split", SPLITS)
def test_annotate_engine_loses_nothing_and_is_deterministic(shared_data, tmp_path, split):
    source = shared_data / "bc5cdr" / f"{split}.BioC.xml"
    report = run_to_file([source], tmp_path / "a.xml", first_word_annotator, progress=False)
    before = list(read_documents(source))
    after = list(read_documents(tmp_path / "a.xml"))
    assert report.documents == len(before) == len(after) == 500 and not report.skipped
    for old, new in zip(before, after, strict=True):
        assert _everything_but_new_annotations(new) == _everything_but_new_annotations(old)
        added = [a for a in new.annotations if a.infons.get("annotator") == "e2e_linker"]
        assert len(added) == sum(1 for p in old.passages if p.text.split(" ")[0])
    validate_bioc(tmp_path / "a.xml")

    run_to_file([source], tmp_path / "b.xml", first_word_annotator, progress=False)
    assert (tmp_path / "b.xml").read_bytes() == (tmp_path / "a.xml").read_bytes()

    run_to_directory([source], tmp_path / "shards", first_word_annotator, shard_size=128,
                     progress=False)
    for shard in sorted((tmp_path / "shards" / "shards").glob("*.xml")):
        validate_bioc(shard)
    merge_shards(tmp_path / "shards", tmp_path / "c.xml")
    assert (tmp_path / "c.xml").read_bytes() == (tmp_path / "a.xml").read_bytes()


@pytest.mark.parametrize("name", ["x.json", "x.txt"])
def test_other_formats_are_byte_stable_too(bc5cdr_test_docs, tmp_path, name):
    from data_tools.formats import write_documents

    write_documents(bc5cdr_test_docs[:40], tmp_path / "in.txt")
    run_to_file([tmp_path / "in.txt"], tmp_path / "a" / name, first_word_annotator,
                progress=False)
    run_to_file([tmp_path / "in.txt"], tmp_path / "b" / name, first_word_annotator,
                progress=False)
    assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert [d.id for d in read_documents(tmp_path / "a" / name)] == \
        [d.id for d in bc5cdr_test_docs[:40]]


def _flaky_annotator(docs: list[Document]) -> list[Document]:
    if any(d.id == "bad" for d in docs):
        raise ValueError("boom\nsecond line")
    return first_word_annotator(docs)


def _docs(*ids: str) -> list[Document]:
    from data_tools.documents import Passage

    return [Document(i, [Passage(0, f"Aspirin {i}.", {})]) for i in ids]


def test_a_document_that_breaks_the_annotator_is_named_or_skipped(tmp_path):
    from data_tools.formats import write_documents
    from e2e_linker.errors import DocumentFailed

    write_documents(_docs("a", "bad", "c"), tmp_path / "in.json")
    with pytest.raises(DocumentFailed, match=r"in.json: document bad: annotating failed: "
                                             r"ValueError: boom$"):
        run_to_file([tmp_path / "in.json"], tmp_path / "o.json", _flaky_annotator,
                    progress=False)
    assert not (tmp_path / "o.json").exists()
    report = run_to_file([tmp_path / "in.json"], tmp_path / "o.json", _flaky_annotator,
                         on_error="skip", progress=False)
    assert [d.id for d in read_documents(tmp_path / "o.json")] == ["a", "c"]
    assert [(s.where, s.message) for s in report.skipped] == \
        [("document bad", "annotating failed: ValueError: boom")]
    assert all(len(d.annotations) == 1 for d in read_documents(tmp_path / "o.json"))


def test_an_annotator_that_drops_a_document_is_caught(tmp_path):
    from data_tools.formats import write_documents

    write_documents(_docs("a", "b"), tmp_path / "in.json")
    with pytest.raises(RuntimeError, match="a document would be lost"):
        run_to_file([tmp_path / "in.json"], tmp_path / "o.json", lambda docs: docs[:1],
                    progress=False)
    assert not (tmp_path / "o.json").exists()
