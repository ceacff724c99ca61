"""annotate keeps every document, passage and annotation; spans and links are well formed;
selection runs the annotator's pipeline with its own KB lookups (the lexical gate,
propagation, the dictionary threshold), declared by the model's config unless changed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.sieves import choose_concept
from tests.helpers.synthetic import synthetic_docs, synthetic_kb
from tests.helpers.tiny_linker import pipeline_changed, settings_changed, tiny_annotator


@pytest.fixture(scope="module")
def annotator(tmp_path_factory):
    return tiny_annotator(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("mode", ["collective", "per-mention"])
def test_annotate_preserves_documents(annotator, mode):
    docs = synthetic_docs(5)
    with settings_changed(annotator, mode=mode):
        out = annotator.annotate(docs)
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


def _predicted(docs) -> list[list[tuple]]:
    return [[(a.start, a.end, a.type, tuple(a.concept_ids), a.mention_score, a.link_score,
              sorted(a.infons.items())) for a in d.annotations] for d in docs]


def test_a_documents_annotations_do_not_depend_on_what_shares_its_call(annotator):
    # documents of many lengths, so chunks of several padded lengths meet in one call
    docs = synthetic_docs(12, seed=3)
    for k, doc in enumerate(docs):
        doc.passages[-1].text = doc.passages[-1].text[:40 + 23 * k]
        doc.passages[-1].annotations = []
    together = _predicted(annotator.annotate(docs, replace=True))
    assert sum(map(len, together)) > 12
    for size in (1, 5):
        alone = [p for k in range(0, len(docs), size)
                 for p in _predicted(annotator.annotate(docs[k:k + size], replace=True))]
        assert alone == together  # every score equal to the bit


def test_each_encoder_batch_holds_chunks_of_one_padded_length(annotator, monkeypatch):
    from e2e_linker.collective.batches import PAD_MULTIPLE

    docs = synthetic_docs(12, seed=3)
    for k, doc in enumerate(docs):
        doc.passages[-1].text = doc.passages[-1].text[:40 + 23 * k]
    seen = []
    forward = annotator.model.token_states
    monkeypatch.setattr(annotator.model, "token_states",
                        lambda batch: seen.append(batch["attention_mask"]) or forward(batch))
    annotator.annotate(docs)
    assert len(seen) > 1
    for mask in seen:
        width = mask.shape[1]
        assert width % PAD_MULTIPLE == 0
        assert all(width - PAD_MULTIPLE < n <= width for n in mask.sum(1).tolist())


def test_one_spans_type_logits_are_its_row_of_a_larger_batch(annotator):
    import torch

    vecs = torch.randn(64, annotator.model.type_head.in_features,
                       generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        together = annotator.model.type_logits(vecs)
        for k in range(len(vecs)):
            assert torch.equal(annotator.model.type_logits(vecs[k:k + 1])[0], together[k])


class RecordingTextLinker:
    """Links every span it is given to "TEXT:<span text>" and records what it saw."""

    def __init__(self):
        self.seen: list[tuple[str, list[tuple[int, int]], str]] = []

    def normalize(self, docs, abbreviations=None):
        for doc in docs:
            self.seen.append((doc.id, [(a.start, a.end) for a in doc.annotations], doc.text))
            for ann in doc.annotations:
                ann.concept_ids, ann.link_score = [f"TEXT:{ann.text}"], 0.5
                ann.infons["candidates"] = "TEXT:x 0.5"
        return docs


def test_text_linking_relinks_only_the_detected_spans(annotator):
    docs = synthetic_docs(3)
    plain = annotator.annotate(docs)
    recording = RecordingTextLinker()
    annotator.linker.text_linker = recording
    try:
        out = annotator.annotate(docs)
    finally:
        seen, annotator.linker.text_linker = recording.seen, None
    for before, collective, by_text in zip(docs, plain, out, strict=True):
        old = [(a.start, a.end, a.concept_ids) for a in before.annotations]
        assert [(a.start, a.end, a.concept_ids) for a in by_text.annotations
                if a.infons.get("annotator") != "e2e_linker"] == old  # input untouched
        new = [a for a in by_text.annotations if a.infons.get("annotator") == "e2e_linker"]
        assert [(a.start, a.end) for a in new] == [
            (a.start, a.end) for a in collective.annotations
            if a.infons.get("annotator") == "e2e_linker"]  # same detection
        for a in new:
            assert a.concept_ids == [f"TEXT:{a.text}"] and a.link_score == 0.5
            assert a.infons["link_method"] == "text" and "candidates" not in a.infons
    # the linker saw each document's whole text with the detected spans only
    for (doc_id, spans, text), doc in zip(seen, out, strict=True):
        assert doc_id == doc.id and text == doc.text
        assert spans == [(a.start, a.end) for a in doc.annotations
                         if a.infons.get("annotator") == "e2e_linker"]


def test_linking_matches_choose_concept_on_the_ranking(annotator):
    """link() makes choose_concept's choice on the index ranking (the tiny KB fits in k)."""
    docs = synthetic_docs(3)
    spans, _ = annotator.detect(docs)
    annotations = annotator.link(spans, docs)
    queries = np.stack([s.vector for s in spans]).astype(np.float32)
    index = annotator.linker.index
    ranked = index.link(queries, [s.type for s in spans], k=len(index))
    for span, ann, dense in zip(spans, annotations, ranked, strict=True):
        text = docs[span.doc_index].text_at(span.start, span.end)
        cid, score, method = choose_concept(text, span.type, dense, annotator.linker.names)
        assert ann.concept_ids == ([cid] if cid else [])
        assert ann.infons["link_method"] == method
        if score is not None:
            assert ann.link_score == pytest.approx(round(score, 4), abs=1e-3)


def _chemical(start: int, end: int, p: float) -> SpanPrediction:
    """A candidate Chemical span of document 0 (its vector does not matter to selection)."""
    return SpanPrediction(0, start, end, p, "Chemical", np.zeros(4, np.float32))


def _select_gated(annotator, spans, text: str, gate: float) -> list[tuple[int, int]]:
    """The offsets ``select`` keeps from ``spans`` of a one-passage document under ``gate``."""
    from data_tools.documents import Document, Passage

    doc = Document(id="g", passages=[Passage(offset=0, text=text)])
    changes = {"disable": ("lexical_gate",)} if gate is None \
        else {"overrides": (f"lexical_gate.gate={gate}",)}
    with pipeline_changed(annotator, **changes):
        return [(s.start, s.end) for s in annotator.select(spans, [doc], keep=0.5)]


def test_lexical_gate_drops_unnamed_spans_before_overlaps_are_resolved(annotator):
    from tests.helpers.synthetic import CHEMICALS

    name = CHEMICALS[sorted(CHEMICALS)[0]][0]
    text = f"{name} given; later zorblatin, high zorblatin x and lower esophageal sphincter (LES)"
    z = text.index("zorblatin")
    z2 = text.index("zorblatin x")
    les = text.index("LES")
    spans = [_chemical(0, len(name), 0.7),               # a KB name: kept whatever its score
             _chemical(z, z + 9, 0.7),                   # unnamed, under the gate: dropped
             _chemical(z2 - 5, z2 + 11, 0.995),          # unnamed, sure enough: kept
             _chemical(les, les + 3, 0.8),               # short form of an unnamed long form
             _chemical(z2 - 5, z2 + 9, 0.9)]             # unnamed, overlaps the sure one
    assert _select_gated(annotator, spans, text, 0.99) == [(0, len(name)), (z2 - 5, z2 + 11)]
    # without the gate the unnamed spans stay, and a higher-scored overlap wins
    assert _select_gated(annotator, spans, text, None) == [
        (0, len(name)), (z, z + 9), (z2 - 5, z2 + 11), (les, les + 3)]


def test_lexical_gate_keeps_short_forms_of_named_or_detected_long_forms(annotator):
    text = ("acetylsalicylic acid (ASA) helped; ASA again. zorblatin hydrate (ZH) and ZH; "
            "quuxamine (QX) and QX")
    asa = text.index("ASA again")
    zh = text.index("ZH;")
    zorblatin = text.index("zorblatin hydrate")
    qx = text.rindex("QX")
    spans = [_chemical(asa, asa + 3, 0.7),                  # long form is a KB name
             _chemical(zorblatin, zorblatin + 17, 0.999),   # detected, unnamed, sure
             _chemical(zh, zh + 2, 0.7),                    # its short form: kept
             _chemical(qx, qx + 2, 0.7)]                    # long form neither: dropped
    assert _select_gated(annotator, spans, text, 0.99) == [
        (asa, asa + 3), (zorblatin, zorblatin + 17), (zh, zh + 2)]


def test_the_pipeline_defaults_to_the_model_config(annotator):
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.settings import AnnotateSettings

    config = annotator.model.config
    saved = (config.short_forms, config.propagation_threshold, config.lexical_gate,
             config.dictionary_threshold)
    (config.short_forms, config.propagation_threshold, config.lexical_gate,
     config.dictionary_threshold) = True, 0.3, 0.9, 0.1
    try:
        fresh = Annotator(annotator.model, annotator.linker).pipeline
        assert fresh.has("short_forms") and fresh.get("propagation").threshold == 0.3
        assert fresh.get("lexical_gate").gate == 0.9
        assert fresh.get("dictionary").threshold == 0.1
        override = Annotator(annotator.model, annotator.linker, AnnotateSettings(
            disable="short_forms", overrides=("propagation.threshold=0.5",
                                              "lexical_gate.gate=0", "dictionary.threshold=0.05"
                                              ))).pipeline
        assert not override.has("short_forms")
        assert (override.get("propagation").threshold, override.get("lexical_gate").gate,
                override.get("dictionary").threshold) == (0.5, 0.0, 0.05)
    finally:
        (config.short_forms, config.propagation_threshold, config.lexical_gate,
         config.dictionary_threshold) = saved


def test_select_propagates_only_above_the_propagation_threshold(annotator):
    from data_tools.documents import Document, Passage

    text = "cisplatin first; cisplatin again; cisplatin once more"
    doc = Document(id="c", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(4, np.float32)
    starts = [m.start() for m in re.finditer("cisplatin", text)]
    spans = [SpanPrediction(0, starts[0], starts[0] + 9, 0.9, "Chemical", vec),
             SpanPrediction(0, starts[1], starts[1] + 9, 0.45, "Chemical", vec),
             SpanPrediction(0, starts[2], starts[2] + 9, 0.25, "Chemical", vec)]
    with pipeline_changed(annotator, overrides=("propagation.threshold=0.4",)):
        assert [s.start for s in annotator.select(spans, [doc], keep=0.6)] == starts[:2]
    with pipeline_changed(annotator, overrides=("propagation.threshold=0.2",)):
        assert [s.start for s in annotator.select(spans, [doc], keep=0.6)] == starts


def test_dictionary_threshold_keeps_weak_exact_kb_names_only(annotator):
    from data_tools.documents import Document, Passage
    from tests.helpers.synthetic import CHEMICALS

    name = CHEMICALS[sorted(CHEMICALS)[0]][0]
    text = f"{name} given; zorblatin too; quuxamine"
    doc = Document(id="d", passages=[Passage(offset=0, text=text)])
    z = text.index("zorblatin")
    q = text.index("quuxamine")
    spans = [_chemical(0, len(name), 0.15),              # weak, a KB name: rescued
             _chemical(z, z + 9, 0.15),                  # weak, no KB name: dropped
             _chemical(q, q + 9, 0.7)]                   # strong: kept
    def kept(dictionary: float | None) -> list[int]:
        changes = () if dictionary is None else (f"dictionary.threshold={dictionary}",)
        with pipeline_changed(annotator, ("propagation", "dictionary"), changes):
            return [s.start for s in annotator.select(spans, [doc], keep=0.5)]

    assert kept(None) == [q]
    assert kept(0.1) == [0, q]
    assert kept(0.2) == [q]  # the name is scored below it
    assert kept(1.0) == [q]  # not below keep: off
    with pipeline_changed(annotator, ("propagation", "name_extension"),
                          ("dictionary.threshold=1.0",)):
        assert annotator.pipeline.detection_floor(0.5) == 0.5


def test_max_span_len_bounds_the_spans_scored_above_the_training_length(annotator):
    """The span score has no width term: annotate may score spans longer than the model's
    ``max_span_len`` (and shorter ones only, below it); threshold 0 makes every valid span a
    candidate."""
    docs = synthetic_docs(3)
    tokenizer = annotator.model.tokenizer

    def widths(max_span_len: int) -> set[tuple[int, int, int]]:
        with settings_changed(annotator, max_span_len=max_span_len):
            spans, _ = annotator.detect(docs, threshold=0.0, resolve=False)
        return {(s.doc_index, s.start, s.end) for s in spans}

    trained = annotator.model.config.max_span_len
    assert annotator.settings.max_span_len == trained  # unset: the model's
    default, short, longer = widths(trained), widths(3), widths(trained + 6)

    def tokens(span: tuple[int, int, int]) -> int:
        text = docs[span[0]].text_at(span[1], span[2])
        return len(tokenizer([text], add_special_tokens=False)["input_ids"][0])

    assert max(map(tokens, short)) <= 3 < max(map(tokens, default)) <= trained
    assert short < default < longer
    assert trained < max(map(tokens, longer)) <= trained + 6


def test_annotate_gives_the_record_after_every_step_sees_kb_keys(annotator):
    """What annotate returns carries the record (data_tools.formats.records): namespaced IDs
    and a gene's species; the pipeline's steps (link, and the annotate stage in it) work on
    the KB's keys, which the record then namespaces."""
    from data_tools.formats.mentions_jsonl import CONCEPT_NAME, SPECIES, SPECIES_NAME
    from data_tools.formats.namespaces import kb_key
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.kb_search.entity_index import EntityIndex
    from e2e_linker.lexical.sieves import NameDictionary

    kb = KB([Concept("D001241", "aspirin", ["acetylsalicylic acid"], "Chemical", "MeSH"),
             Concept("D007052", "ibuprofen", [], "Chemical", "MeSH"),
             *(Concept(str(24490 + n), name, [], "Gene", "NCBI Gene", taxon="10116")
               for n, name in enumerate(("Il6", "Tnf", "Renal1", "Nausea1", "Hdc", "Dlr"))),
             Concept("NCBITaxon:10116", "Rattus norvegicus", ["rats"], "Species",
                     "NCBI Taxonomy")])
    index = EntityIndex.build(kb, annotator.model.entity_encoder, cache_dir=False,
                              progress=False)
    real = Annotator.from_parts(annotator.model, index, NameDictionary.from_kb(kb),
                                annotator.settings, kb=kb)
    docs = synthetic_docs(4)
    spans, _ = real.detect(docs)
    keys = {(docs[s.doc_index].id, s.start, s.end): a.concept_ids
            for s, a in zip(spans, real.link(spans, docs), strict=True) if a is not None}
    assert all(cid in kb.concepts for ids in keys.values() for cid in ids)  # the KB's keys
    out = real.annotate(docs, replace=True)
    genes = 0
    for doc in out:
        for ann in doc.annotations:
            assert [kb_key(c) for c in ann.concept_ids] == keys[doc.id, ann.start, ann.end]
            assert all(c.startswith(("MESH:D", "NCBIGene:", "NCBITaxon:"))
                       for c in ann.concept_ids)
            assert ann.infons[CONCEPT_NAME] == kb.get(kb_key(ann.concept_ids[0])).name
            if ann.concept_ids[0].startswith("NCBIGene:"):
                genes += 1
                assert ann.infons[SPECIES] == "NCBITaxon:10116"
                assert ann.infons[SPECIES_NAME] == "Rattus norvegicus"
            else:
                assert SPECIES not in ann.infons
    assert genes and genes < sum(len(d.annotations) for d in out)


def test_the_engine_overlapping_groups_gives_annotates_bytes(annotator, tmp_path, monkeypatch):
    """linker annotate's transform (GroupAnnotation) run by the corpus engine with each
    group's scoring in a thread of its own beside the previous group's steps: the bytes of
    the run without the overlap, the same counts, and the tokenizer never used off the main
    thread (it is not thread-safe: Annotator.score_chunks must not touch it)."""
    import threading

    from data_tools.formats import write_documents
    from e2e_linker.collective.annotator import Annotator, GroupAnnotation
    from e2e_linker.collective.chunking import chunk_documents
    from e2e_linker.jobs.corpus_run import run_to_file

    source = tmp_path / "in.bioc.xml"
    write_documents(synthetic_docs(9, seed=5), source)
    main = threading.get_ident()
    scoring, chunking = set(), set()
    score_chunks = Annotator.score_chunks

    def scored(self, chunks, floor):
        scoring.add(threading.get_ident())
        return score_chunks(self, chunks, floor)

    def chunked(*args, **kwargs):
        chunking.add(threading.get_ident())
        return chunk_documents(*args, **kwargs)

    monkeypatch.setattr(Annotator, "score_chunks", scored)
    monkeypatch.setattr("e2e_linker.collective.annotator.chunk_documents", chunked)
    outputs, stats = [], []
    for overlap in (False, True):
        before = dict(annotator.stats)
        out = tmp_path / f"out{overlap}.bioc.xml"
        run_to_file([source], out, GroupAnnotation(annotator, replace=True), group_size=2,
                    progress=False, overlap=overlap)
        outputs.append(out.read_bytes())
        stats.append({k: annotator.stats[k] - before[k] for k in before})
    assert outputs[0] == outputs[1]
    assert stats[0] == stats[1] and stats[0]["mentions"] > 0
    assert len(scoring - {main}) == 1 and chunking == {main}


def test_host_workers_are_safe_on_a_cpu_and_refused_where_a_gpu_is_needed(annotator,
                                                                          monkeypatch):
    """A forked host worker cannot use a GPU initialised before the fork: on a CPU the
    second phase may always run in one; on a GPU only when it needs no model (every KB name
    encoded before, not the per-mention mode)."""
    import dataclasses
    import types

    import torch

    from e2e_linker.collective.annotator import GroupAnnotation

    assert GroupAnnotation(annotator).fork_unsafe_because is None
    monkeypatch.setattr(type(annotator.model), "device", property(
        lambda self: torch.device("cuda")), raising=False)
    assert annotator.model.device.type == "cuda"
    index = annotator.parts.index
    numpy_vectors = index.vectors
    assert not index.encodes_on_demand  # the fixture's KB is encoded whole
    assert GroupAnnotation(annotator).fork_unsafe_because is None
    monkeypatch.setattr(index, "vectors", types.SimpleNamespace(ensure=lambda rows: None))
    assert index.encodes_on_demand
    assert "--index exact" in GroupAnnotation(annotator).fork_unsafe_because
    monkeypatch.setattr(annotator, "settings",
                        dataclasses.replace(annotator.settings, mode="per-mention"))
    assert "per-mention" in GroupAnnotation(annotator).fork_unsafe_because
    monkeypatch.setattr(annotator, "settings",
                        dataclasses.replace(annotator.settings, mode="collective"))
    monkeypatch.setattr(index, "vectors", numpy_vectors)
    monkeypatch.setattr(annotator.linker, "text_linker", object())
    assert "--linking text" in GroupAnnotation(annotator).fork_unsafe_because


def test_the_annotator_overlaps_groups_by_default_only_off_the_cpu(annotator, monkeypatch):
    """docs/scaling.md, "Overlap": on a CPU the host work competes with the encoder's threads
    (measured slower), so the engine overlaps by default only when the encoder is elsewhere."""
    from e2e_linker.collective.annotator import GroupAnnotation
    from e2e_linker.jobs.corpus_run import GroupTransform
    from e2e_linker.jobs.lookahead import OVERLAP_VARIABLE

    monkeypatch.delenv(OVERLAP_VARIABLE, raising=False)
    on_cpu = GroupAnnotation(annotator, True)
    assert not on_cpu.overlap_by_default
    assert not GroupTransform(on_cpu, "raise").overlap
    monkeypatch.setenv(OVERLAP_VARIABLE, "1")
    assert GroupTransform(on_cpu, "raise").overlap


def test_learned_species_declared_without_its_file_is_said(annotator, monkeypatch, capsys):
    """A declaration that names ``learned_species`` for a model without species_choice.json
    links by the hand species order, and says so (``linker -v``)."""
    from e2e_linker.console import VERBOSE_ENV

    monkeypatch.setenv(VERBOSE_ENV, "1")
    assert annotator.parts.species_choice is None
    other = annotator.with_pipeline(annotator.pipeline.changed((), ("learned_species",)))
    assert other.linker.species_choice is None
    assert "no species_choice.json" in capsys.readouterr().err


def test_the_taxa_above_a_species_come_from_the_kb_specs_taxonomy(tmp_path):
    """The ``higher_taxa`` step's taxa: read from the OBO the spec names; none for a spec
    without a taxonomy, or no spec."""
    from e2e_linker.collective.annotator import higher_taxa

    obo = tmp_path / "tax.obo"
    obo.write_text("format-version: 1.2\n\n[Term]\nid: NCBITaxon:9606\nname: Homo sapiens\n"
                   "is_a: NCBITaxon:9605 ! Homo\nproperty_value: has_rank NCBITaxon:species\n",
                   encoding="utf-8")
    assert higher_taxa(f"species:{obo}") == {"NCBITaxon:9605"}
    assert higher_taxa("bc5cdr") is None and higher_taxa(None) is None
