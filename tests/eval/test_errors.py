"""eval.errors: each error lands in the cause its rule names."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from eval.errors import classify_document

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


def test_every_cause_is_counted_once():
    kb = KB()
    for cid, name, type_ in (("D004833", "temporal lobe epilepsy", "Disease"),
                             ("D003042", "cocaine", "Chemical"),
                             ("D001241", "aspirin", "Chemical")):
        kb.add(Concept(cid, name, [], type_))
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
        _ann(*_span("aspirin"), "Disease", ["D001241"], "dense"),  # type
        _ann(*_span("ovarian cancer"), "Disease", ["D010051"], "dense"),  # boundary FP
        _ann(*_span("nigra"), "Chemical", ["D009420"], "dense"),  # spurious
    ])
    out = classify_document(gold, pred, kb)
    assert out["tp"][("Disease", "span")] == 1 and out["tp"][("Chemical", "span")] == 1
    assert out["link"] == {("Chemical", "dense wrong"): 1}
    assert out["fn"] == {("Disease", "abbreviation"): 1, ("Chemical", "type"): 1,
                         ("Disease", "composite"): 1}
    assert out["fp"] == {("Disease", "type"): 1, ("Disease", "boundary"): 1,
                         ("Chemical", "spurious"): 1}
    assert out["fp_texts"] == {("Chemical", "nigra"): 1}


def test_a_gold_concept_outside_the_kb_is_not_blamed_on_the_linker():
    gold = _doc([_ann(*_span("cocaine"), "Chemical", ["C000001"])])
    pred = _doc([_ann(*_span("cocaine"), "Chemical", ["D003042"], "exact")])
    assert classify_document(gold, pred, KB())["link"] == {("Chemical", "outside KB"): 1}
