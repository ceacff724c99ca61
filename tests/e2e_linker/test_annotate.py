"""annotate keeps every document, passage and annotation; spans and links are well formed."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.collective.annotator import Annotator, SpanPrediction, resolve_overlaps
from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.kb_search.entity_index import EntityIndex
from e2e_linker.kb_search.sieves import NameDictionary, choose_concept, normalize_name
from tests.e2e_linker.synthetic import synthetic_docs, synthetic_kb
from tests.e2e_linker.tiny import tiny_encoder_dir


@pytest.fixture(scope="module")
def annotator(tmp_path_factory):
    directory = tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "bert")
    model = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(directory), max_length=64))
    kb = synthetic_kb()
    index = EntityIndex.build(kb, model.entity_encoder, cache_dir=False, progress=False)
    # threshold 0: every valid span is a candidate, so overlap resolution is exercised
    return Annotator(model, index, NameDictionary.from_kb(kb), threshold=0.0, batch_size=3)


@pytest.mark.parametrize("mode", ["collective", "per-mention"])
def test_annotate_preserves_documents(annotator, mode):
    docs = synthetic_docs(5)
    annotator.mode = mode
    out = annotator.annotate(docs)
    annotator.mode = "collective"
    assert [d.id for d in out] == [d.id for d in docs]
    for before, after in zip(docs, out, strict=True):
        assert [p.text for p in after.passages] == [p.text for p in before.passages]
        assert [p.infons for p in after.passages] == [p.infons for p in before.passages]
        old = {(a.start, a.end, tuple(a.concept_ids)) for a in before.annotations}
        kept = {(a.start, a.end, tuple(a.concept_ids)) for a in after.annotations
                if a.infons.get("annotator") != "e2e_linker"}
        assert kept == old
        new = [a for a in after.annotations if a.infons.get("annotator") == "e2e_linker"]
        assert new, "threshold 0 must produce predictions"
        spans = sorted((a.start, a.end) for a in new)
        for (_s1, e1), (s2, _) in zip(spans, spans[1:], strict=False):
            assert e1 <= s2  # overlaps resolved
        for a in new:
            assert after.text_at(a.start, a.end) == a.text
            assert a.concept_ids and a.concept_ids[0] in synthetic_kb().concepts
            assert 0.0 <= a.mention_score <= 1.0


def test_replace_drops_old_annotations(annotator):
    out = annotator.annotate(synthetic_docs(2), replace=True)
    assert all(a.infons.get("annotator") == "e2e_linker" for d in out for a in d.annotations)


def test_encode_spans_matches_detected_vectors(annotator):
    docs = synthetic_docs(2)
    spans, _ = annotator.detect(docs)
    vecs, ok = annotator.encode_spans(docs, [(s.doc_index, s.start, s.end) for s in spans[:5]])
    assert all(ok)
    np.testing.assert_allclose(vecs, np.stack([s.vector for s in spans[:5]]), atol=1e-4)


def test_resolve_overlaps_keeps_most_probable():
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, 0, 10, 0.6, "Disease", v), SpanPrediction(0, 5, 12, 0.9, "Disease", v),
             SpanPrediction(0, 12, 15, 0.5, "Disease", v), SpanPrediction(1, 0, 10, 0.1, "Chemical", v)]
    kept = resolve_overlaps(spans)
    assert [(s.doc_index, s.start, s.end) for s in kept] == [(0, 5, 12), (0, 12, 15), (1, 0, 10)]


def test_name_sieve_prefers_exact_names_and_dense_order():
    names = NameDictionary([("Renal failure", "D1"), ("renal-failure", "D2"), ("cold", "D3")],
                           {"D1": "Disease", "D2": "Disease", "D3": "Disease"})
    assert normalize_name("Renal-Failure ") == "renal failure"
    assert choose_concept("renal failure", "Disease", [("D2", 0.9), ("D1", 0.8)], names)[0] == "D2"
    assert choose_concept("cold", "Disease", [("D9", 0.9)], names) == ("D3", None, "exact")
    assert choose_concept("fever", "Disease", [("D9", 0.9)], names) == ("D9", 0.9, "dense")


def test_linking_matches_choose_concept_on_the_ranking(annotator):
    """link() makes choose_concept's choice on the index ranking (the tiny KB fits in k)."""
    docs = synthetic_docs(3)
    spans, _ = annotator.detect(docs)
    annotations = annotator.link(spans, docs)
    queries = np.stack([s.vector for s in spans]).astype(np.float32)
    ranked = annotator.index.link(queries, [s.type for s in spans], k=len(annotator.index))
    for span, ann, dense in zip(spans, annotations, ranked, strict=True):
        text = docs[span.doc_index].text_at(span.start, span.end)
        cid, score, method = choose_concept(text, span.type, dense, annotator.names)
        assert ann.concept_ids == ([cid] if cid else [])
        assert ann.infons["link_method"] == method
        if score is not None:
            assert ann.link_score == pytest.approx(round(score, 4), abs=1e-3)
