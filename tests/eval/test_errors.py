"""eval.errors: each error lands in the cause its rule names."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from eval.errors import classify

TEXT = "Temporal lobe epilepsy (TLE) after cocaine and aspirin; breast and ovarian cancer; nigra."


def _ann(start: int, end: int, type_: str, ids: list[str], method: str | None = None
         ) -> Annotation:
    ann = Annotation(start=start, end=end, text=TEXT[start:end], type=type_, concept_ids=ids)
    if method:
        ann.infons["link_method"] = method
    return ann


def _doc(anns: list[Annotation]) -> Document:
    return Document(id="1", passages=[Passage(offset=0, text=TEXT, annotations=anns,
                                              infons={"type": "abstract"})])


def _span(text: str) -> tuple[int, int]:
    start = TEXT.index(text)
    return start, start + len(text)


def _kb() -> KB:
    kb = KB()
    for cid, name, type_ in (("D004833", "temporal lobe epilepsy", "Disease"),
                             ("D003042", "cocaine", "Chemical"),
                             ("D001241", "aspirin", "Chemical")):
        kb.add(Concept(cid, name, [], type_))
    return kb


def test_every_cause_is_counted_once():
    gold = _doc([
        _ann(*_span("Temporal lobe epilepsy"), "Disease", ["D004833"]),
        _ann(*_span("TLE"), "Disease", ["D004833"]),
        _ann(*_span("cocaine"), "Chemical", ["D003042"]),
        _ann(*_span("aspirin"), "Chemical", ["D001241"]),
        _ann(*_span("breast and ovarian cancer"), "Disease", ["D001943", "D010051"]),
    ])
    pred = _doc([
        _ann(*_span("Temporal lobe epilepsy"), "Disease", ["D004833"], "exact"),  # right
        _ann(*_span("cocaine"), "Chemical", ["D001241"], "dense"),  # dense wrong
        _ann(*_span("aspirin"), "Disease", ["D000001"], "dense"),  # type (and so concept)
        _ann(*_span("ovarian cancer"), "Disease", ["D010051"], "dense"),  # boundary FP
        _ann(*_span("nigra"), "Chemical", ["D009420"], "dense"),  # spurious
    ])
    out = classify([gold], [pred], _kb())
    assert out["linking"] == {("dense wrong", "Chemical"): 1}
    assert out["fn"] == {("abbreviation", "Disease"): 1, ("type", "Chemical"): 1,
                         ("composite", "Disease"): 1}
    assert out["fp"] == {("type", "Disease"): 1, ("boundary", "Disease"): 1,
                         ("missed / spurious", "Chemical"): 1}
    assert out["examples"][("FP", "missed / spurious", "Chemical")] == {"nigra": 1}
    assert out["by_method"]["exact"] == {"predicted": 1, "strict_correct": 1}
    assert out["by_method"]["dense"] == {"predicted": 4, "strict_correct": 0}


def test_a_gold_concept_outside_the_kb_is_not_blamed_on_the_linker():
    gold = _doc([_ann(*_span("cocaine"), "Chemical", ["C000001"])])
    pred = _doc([_ann(*_span("cocaine"), "Chemical", ["D003042"], "exact")])
    assert classify([gold], [pred], KB())["linking"] == {
        ("concept outside the KB", "Chemical"): 1}


def test_a_wrong_link_a_written_form_or_gene_name_step_decided_is_a_sieve_error():
    """Link methods a lexical step decided count as sieve errors, not dense ones."""
    gold = _doc([_ann(*_span("cocaine"), "Chemical", ["D003042"]),
                 _ann(*_span("aspirin"), "Chemical", ["D001241"])])
    pred = _doc([_ann(*_span("cocaine"), "Chemical", ["D001241"], "written_form"),
                 _ann(*_span("aspirin"), "Chemical", ["D003042"], "name_form")])
    out = classify([gold], [pred], _kb())
    assert out["linking"] == {("sieve wrong (written_form)", "Chemical"): 1,
                              ("sieve wrong (name_form)", "Chemical"): 1}


def test_disabled_steps_reach_the_annotator_and_the_report(monkeypatch, tmp_path):
    """``--disable`` is annotate's: the annotator runs without those steps and the report
    names the steps it ran."""
    import json

    import data_tools.registry
    import e2e_linker.collective.loading
    from eval import errors
    from tests.helpers.synthetic import synthetic_docs
    from tests.helpers.tiny_linker import tiny_annotator

    annotator = tiny_annotator(tmp_path / "tiny", threshold=0.3)
    seen = []

    def load_annotator(settings):
        seen.append(settings)
        return annotator.with_pipeline(annotator.pipeline.changed(settings.disable))

    monkeypatch.setattr(e2e_linker.collective.loading, "load_annotator", load_annotator)
    monkeypatch.setattr(data_tools.registry, "load_corpus",
                        lambda spec, max_docs=None: synthetic_docs(3))
    monkeypatch.setattr(errors, "model_with_names_from", lambda *args, **kwargs: None)
    out = tmp_path / "out"
    assert errors.main(["--disable", "sieve_stack,name_extension", "--out", str(out)]) == 0
    assert seen[0].disable == ("sieve_stack", "name_extension")
    result = json.loads((out / "results.json").read_text())
    assert result["disabled"] == ["sieve_stack", "name_extension"]
    assert result["steps"] == [n for n in annotator.pipeline.names
                               if n not in ("sieve_stack", "name_extension")]
    assert "steps gene_named_chemicals, never_a_mention, score_floor" in \
        (out / "results.md").read_text()
