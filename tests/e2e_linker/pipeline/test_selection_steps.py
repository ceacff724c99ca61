"""The select steps on hand-made spans, run as a pipeline runs them: the floors candidates
must be scored down to, propagation keeps weak repeats, the gate asks for lexical links, and
candidates with an unbalanced bracket or an ion cut before its charge are never kept."""

from __future__ import annotations

import numpy as np
import pytest

from data_tools.documents import Document, Passage
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.errors import UserError
from e2e_linker.lexical.abbreviations import scan_documents
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.declaration import Pipeline
from e2e_linker.pipeline.selection_steps import type_set
from e2e_linker.pipeline.step import STEPS, registry_order


class FakeLinker:
    """The linker lookups select steps read: which spans a lexical step links (``linked``:
    spans → bools; every one by default), which texts are KB names, which long forms link
    (``unlinked``: texts that link to nothing), no gene retyping."""

    def __init__(self, linked=None, names=(), unlinked=()):
        self.linked = linked or (lambda spans: [True] * len(spans))
        self.names = set(names)
        self.unlinked = set(unlinked)
        self.asked: list[list[int]] = []

    def links_above(self, span, text, floor):
        return text not in self.unlinked

    def lexically_linked(self, spans, texts, abbreviations):
        self.asked.append([s.start for s in spans])
        return self.linked(spans)

    def is_name(self, text, type_):
        return text in self.names

    def dense_concepts(self, spans, k):
        # each span's vector "links" to the concepts its first k components name
        return [{f"C{int(c)}" for c in s.vector[:k]} for s in spans]

    def name_concepts(self, text, type_):
        return [f"C{len(text)}"] if text in self.names else []

    def gene_named_chemicals(self, spans, texts):
        return list(spans)


def pipeline(**steps) -> Pipeline:
    """The required steps plus ``steps`` (name → parameters), in registry order."""
    wanted = {n: p for n, p in steps.items()} | {n: {} for n, c in STEPS.items() if c.required}
    names = [n for n in registry_order() if n in wanted]
    return Pipeline.from_mapping({"steps": names, **{n: p for n, p in wanted.items() if p}},
                                 "test")


def select(pipe: Pipeline, spans, docs, keep: float, linker=None) -> list[SpanPrediction]:
    batch = Batch(docs, scan_documents(docs), linker or FakeLinker(), keep,
                  pipe.selection_floor(keep))
    batch.replace_spans(list(spans))
    pipe.run_stage("select", batch)
    return batch.kept


def test_floors_are_the_thresholds_below_keep_and_name_extension_only_for_detection():
    assert pipeline().selection_floor(0.5) == pipeline().detection_floor(0.5) == 0.5
    both = pipeline(propagation={"threshold": 0.2}, dictionary={"threshold": 0.1})
    assert both.selection_floor(0.5) == 0.1
    above = pipeline(propagation={"threshold": 0.7}, dictionary={"threshold": 0.5})
    assert above.selection_floor(0.5) == above.detection_floor(0.5) == 0.5
    grow = pipeline(name_extension={"floor_score": 0.05}, propagation={"threshold": 0.2})
    assert grow.selection_floor(0.5) == 0.2 and grow.detection_floor(0.5) == 0.05
    assert pipeline(name_extension={"floor_score": 0.7}).detection_floor(0.5) == 0.5


def test_propagation_keeps_weak_repeats_of_a_detected_surface_form():
    text = "cisplatin and aspirin; later Cisplatin again, cisplatin-induced"
    doc = Document(id="p", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(4, np.float32)

    def span(start, end, p):
        return SpanPrediction(0, start, end, p, "Chemical", vec)

    later = text.index("Cisplatin")
    induced = text.index("cisplatin-induced")
    spans = [span(0, 9, 0.9),                      # detected: the surface form
             span(14, 21, 0.3),                    # weak, never detected strongly: dropped
             span(later, later + 9, 0.3),          # weak repeat, other case: kept
             span(induced, induced + 17, 0.95),    # strong, overlaps the weak repeat below
             span(induced, induced + 9, 0.35)]     # weak repeat inside a strong span: loses
    kept = select(pipeline(propagation={"threshold": 0.2}), spans, [doc], 0.6)
    assert [(s.start, s.end) for s in kept] == [(0, 9), (later, later + 9),
                                                (induced, induced + 17)]
    # off: the weak repeat goes
    assert [(s.start, s.end) for s in select(pipeline(), spans, [doc], 0.6)] == [
        (0, 9), (induced, induced + 17)]


def test_propagation_keeps_only_the_declared_types_repeats():
    text = "aspirin and TP53; aspirin, TP53"
    doc = Document(id="t", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(4, np.float32)
    spans = [SpanPrediction(0, 0, 7, 0.9, "Chemical", vec),
             SpanPrediction(0, 12, 16, 0.9, "Gene", vec),
             SpanPrediction(0, 18, 25, 0.3, "Chemical", vec),   # weak repeats
             SpanPrediction(0, 27, 31, 0.3, "Gene", vec)]
    every = select(pipeline(propagation={"threshold": 0.2}), spans, [doc], 0.6)
    assert [s.start for s in every] == [0, 12, 18, 27]
    typed = select(pipeline(propagation={"threshold": 0.2, "types": "Chemical,Disease"}),
                   spans, [doc], 0.6)
    assert [s.start for s in typed] == [0, 12, 18]
    with pytest.raises(UserError, match="propagation.types"):
        pipeline(propagation={"types": " , "})


def test_kept_repeats_fill_only_text_the_other_select_steps_left_free():
    text = "aspirin and TP53; aspirin, aspirin-TP53"
    doc = Document(id="k", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(4, np.float32)
    joined = text.index("aspirin-TP53")
    spans = [SpanPrediction(0, 0, 7, 0.9, "Chemical", vec),
             SpanPrediction(0, 12, 16, 0.9, "Gene", vec),
             SpanPrediction(0, 18, 25, 0.05, "Chemical", vec),            # weak repeat: kept
             SpanPrediction(0, joined, joined + 7, 0.05, "Chemical", vec),  # inside a kept span
             SpanPrediction(0, joined, joined + 12, 0.8, "Gene", vec)]
    pipe = pipeline(kept_repeats={"floor_score": 0.02})
    assert pipe.detection_floor(0.6) == 0.02 and pipe.selection_floor(0.6) == 0.6
    kept = select(pipe, spans, [doc], 0.6)
    assert [(s.start, s.type) for s in kept] == [(0, "Chemical"), (12, "Gene"),
                                                 (18, "Chemical"), (joined, "Gene")]
    assert [s.start for s in select(pipeline(), spans, [doc], 0.6)] == [0, 12, joined]
    with pytest.raises(UserError, match="kept_repeats.types"):
        pipeline(kept_repeats={"types": ","})


def test_the_dictionary_keeps_weak_exact_names_only():
    text = "aspirin and warfarin"
    doc = Document(id="d", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(1, np.float32)
    spans = [SpanPrediction(0, 0, 7, 0.3, "Chemical", vec),
             SpanPrediction(0, 12, 20, 0.3, "Chemical", vec)]
    kept = select(pipeline(dictionary={"threshold": 0.2}), spans, [doc], 0.5,
                  FakeLinker(names={"warfarin"}))
    assert [text[s.start:s.end] for s in kept] == ["warfarin"]


def test_the_gate_asks_for_lexical_links_and_spares_the_spans_it_links():
    doc = Document(id="g", passages=[Passage(offset=0, text="alpha beta gamma")])
    vec = np.zeros(1, np.float32)
    spans = [SpanPrediction(0, 0, 5, 0.7, "Chemical", vec),
             SpanPrediction(0, 6, 10, 0.7, "Chemical", vec),
             SpanPrediction(0, 11, 16, 0.995, "Chemical", vec)]
    linker = FakeLinker(linked=lambda found: [s.start == 0 for s in found])
    kept = select(pipeline(lexical_gate={"gate": 0.99}), spans, [doc], 0.5, linker)
    assert [s.start for s in kept] == [0, 11] and linker.asked == [[0, 6, 11]]
    assert [s.start for s in select(pipeline(), spans, [doc], 0.5, linker)] == [0, 6, 11]
    assert len(linker.asked) == 1  # no gate: no lookups


def test_a_candidate_with_an_unbalanced_bracket_is_never_kept():
    text = "glucose-6-phosphate dehydrogenase (G6PD) deficiency and 1,25-(OH)2D3 levels"
    doc = Document(id="b", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(1, np.float32)

    def at(phrase, p):
        start = text.index(phrase)
        return SpanPrediction(0, start, start + len(phrase), p, "Disease", vec)

    inside = at("G6PD) deficiency", 0.9)
    whole = at("glucose-6-phosphate dehydrogenase (G6PD) deficiency", 0.6)
    chemical = at("1,25-(OH)2D3", 0.8)
    kept = select(pipeline(never_a_mention={}), [inside, whole, chemical], [doc], 0.5)
    assert [text[s.start:s.end] for s in kept] == [
        "glucose-6-phosphate dehydrogenase (G6PD) deficiency", "1,25-(OH)2D3"]
    # without the step, the better-scored bracket fragment wins the overlap
    kept = select(pipeline(), [inside, whole, chemical], [doc], 0.5)
    assert [text[s.start:s.end] for s in kept] == ["G6PD) deficiency", "1,25-(OH)2D3"]


def test_an_ion_cut_before_its_charge_is_never_kept():
    text = "the Ca2+/calmodulin kinase and CA2 levels"
    doc = Document(id="c", passages=[Passage(offset=4, text=text)])
    vec = np.zeros(1, np.float32)

    def at(phrase, p, type_="Gene"):
        start = text.index(phrase) + 4
        return SpanPrediction(0, start, start + len(phrase), p, type_, vec)

    cut, ion, gene = at("Ca2", 0.9), at("Ca2+", 0.6, "Chemical"), at("CA2", 0.9)
    kept = select(pipeline(never_a_mention={}), [cut, ion, gene], [doc], 0.5)
    assert [doc.text_at(s.start, s.end) for s in kept] == ["Ca2+", "CA2"]


def test_a_defined_long_form_is_kept_at_a_lower_floor_and_its_short_forms_follow():
    text = ("Patients given otilonium bromide (OB) improved; OB was safe. "
            "A randomized trial (RT) of RT showed nothing.")
    doc = Document(id="l", passages=[Passage(offset=0, text=text)])
    vec = np.zeros(1, np.float32)

    def at(phrase, p, nth=0):
        start = -1
        for _ in range(nth + 1):
            start = text.index(phrase, start + 1)
        return SpanPrediction(0, start, start + len(phrase), p, "Chemical", vec)

    long_form, trial = at("otilonium bromide", 0.1), at("randomized trial", 0.1)
    short = at("OB", 0.9, 1)  # the detector kept a later "OB", not the long form
    spans = [long_form, short, trial]
    declared = pipeline(long_forms={"with_short": 0.05, "alone": 0.2}, short_forms={})
    kept = select(declared, spans, [doc], 0.5)
    assert [text[s.start:s.end] for s in kept] == ["otilonium bromide", "OB", "OB"]
    # without the step the long form stays out, and so does the first "OB"
    kept = select(pipeline(short_forms={}), spans, [doc], 0.5)
    assert [text[s.start:s.end] for s in kept] == ["OB"]
    # a long form whose short form was not kept needs the higher floor
    kept = select(pipeline(long_forms={"with_short": 0.05, "alone": 0.05}, short_forms={}),
                  [trial], [doc], 0.5)
    assert [text[s.start:s.end] for s in kept] == ["randomized trial", "RT", "RT"]


def test_a_kept_short_form_whose_long_form_links_to_nothing_is_dropped():
    text = "A randomized controlled trial (RCT) of otilonium bromide (OB). The RCT gave OB."
    doc = Document("d", [Passage(0, text)])
    vec = np.zeros(4, dtype=np.float32)

    def at(phrase, p, nth=0):
        start = -1
        for _ in range(nth + 1):
            start = text.index(phrase, start + 1)
        return SpanPrediction(0, start, start + len(phrase), p, "Chemical", vec)

    spans = [at("randomized controlled trial", 0.3), at("RCT", 0.9, 1),
             at("otilonium bromide", 0.3), at("OB", 0.9, 1)]
    declared = pipeline(long_forms={"with_short": 0.05, "alone": 0.2}, short_forms={})
    linker = FakeLinker(unlinked={"randomized controlled trial"})
    kept = select(declared, spans, [doc], 0.5, linker)
    # the trial's short form goes with its long form; the drug's long form links and is kept
    assert [text[s.start:s.end] for s in kept] == ["otilonium bromide", "OB", "OB"]
    # with every long form linked, the trial's long form is kept as the drug's is
    kept = select(declared, spans, [doc], 0.5, FakeLinker())
    assert [text[s.start:s.end] for s in kept] == [
        "randomized controlled trial", "RCT", "otilonium bromide", "OB", "RCT", "OB"]


def test_a_name_before_a_bracketed_gene_is_kept_below_keep_with_its_repeats():
    """``gene_appositions`` reads candidates down to its floor (0.02 by default) and keeps the
    name before a bracketed Gene span, with its repeats, as Gene spans."""
    from e2e_linker.collective.gene_appositions import ApposedName

    text = "Psoriasin (S100A7) rose; Psoriasin fell."
    docs = [Document("d", [Passage(0, text, {})])]
    v = np.zeros(2, np.float32)
    spans = [SpanPrediction(0, 0, 9, 0.1, "Chemical", v), SpanPrediction(0, 11, 17, 0.9, "Gene", v),
             SpanPrediction(0, 25, 34, 0.1, "Chemical", v)]
    assert pipeline(gene_appositions={}).detection_floor(0.5) == 0.02
    kept = select(pipeline(gene_appositions={}), spans, docs, 0.5)
    assert [(text[s.start:s.end], s.type, isinstance(s, ApposedName)) for s in kept] == [
        ("Psoriasin", "Gene", True), ("S100A7", "Gene", False), ("Psoriasin", "Gene", True)]
    kept = select(pipeline(gene_appositions={"floor_score": 0.2}), spans, docs, 0.5)
    assert [text[s.start:s.end] for s in kept] == ["S100A7"]


def test_named_parts_replaces_a_gated_span_above_keep_by_a_named_run_it_links_to():
    text = "allergic asthma, hereditary gout and mild gout"
    doc = Document(id="n", passages=[Passage(offset=0, text=text)])

    def span(phrase, p, concepts):
        start = text.index(phrase)
        vec = np.array(concepts, np.float32)
        return SpanPrediction(0, start, start + len(phrase), p, "Disease", vec)

    spans = [span("allergic asthma", 0.9, [7, 6]),    # "asthma" names C6, its 2nd concept
             span("hereditary gout", 0.9, [15, 9]),   # "gout" names C4, not linked: none
             span("mild gout", 0.4, [4, 4])]          # below keep: not replaced
    linker = FakeLinker(linked=lambda found: [False] * len(found),
                        names={"asthma", "gout", "allergic"})
    kept = select(pipeline(lexical_gate={}, named_parts={"top_k": 2}), spans, [doc], 0.5,
                  linker)
    assert [text[s.start:s.end] for s in kept] == ["asthma"]
    assert kept[0].mention_score == 0.9
    # by default only the concept the whole links to first counts: C7, which nothing names
    assert select(pipeline(lexical_gate={}, named_parts={}), spans, [doc], 0.5, linker) == []
    spans[0] = span("allergic asthma", 0.9, [6, 7])
    assert [text[s.start:s.end] for s in select(pipeline(lexical_gate={}, named_parts={}),
                                                spans, [doc], 0.5, linker)] == ["asthma"]
    assert select(pipeline(lexical_gate={}), spans, [doc], 0.5, linker) == []


def test_every_rescue_step_declared_with_its_defaults_acts_below_the_shipped_threshold():
    # the re-earning adds a left-out step with its defaults; a rescue threshold at or above γ
    # is no step at all, and its row measures nothing (docs/decisions/0006-dictionary.md)
    import json

    from e2e_linker.defaults import DEFAULT_MODEL_DIR

    gamma = json.loads((DEFAULT_MODEL_DIR / "linker_config.json").read_text())["threshold"]
    rescue = [name for name, step in STEPS.items() if step.rescues]
    assert {"propagation", "dictionary"} <= set(rescue)
    for name in rescue:
        assert pipeline(**{name: {}}).selection_floor(gamma) < gamma, name


def test_a_types_parameter_reads_all_or_the_types_listed():
    assert type_set("kept_repeats", "all") is None
    assert type_set("kept_repeats", " Chemical, Disease ,") == {"Chemical", "Disease"}
    with pytest.raises(ValueError, match="propagation.types"):
        type_set("propagation", " , ")


def test_a_types_parameter_naming_a_type_the_model_lacks_is_refused_once_a_model_is_at_hand():
    model = ("Chemical", "Disease", "Gene")
    pipeline(kept_repeats={"types": "Chemical,Gene"}).check_model_types(model)
    pipeline(propagation={"types": "all"}).check_model_types(model)
    for step in ("kept_repeats", "propagation"):
        with pytest.raises(UserError, match=rf"{step}.types names 'Chemcial'.*its types: "
                                            r"Chemical, Disease, Gene"):
            pipeline(**{step: {"types": "Chemcial,Disease"}}).check_model_types(model)
    # the default names types a model may lack (a disease-only model): not the user's choice
    pipeline(kept_repeats={}).check_model_types(("Disease",))
    with pytest.raises(UserError, match="'Gene'"):
        pipeline(kept_repeats={"types": "Gene"}).check_model_types(("Disease",))
