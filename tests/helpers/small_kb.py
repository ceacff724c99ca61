"""A five-concept KB and a one-passage document builder for the normalizer's tests."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept


def small_kb() -> KB:
    """Two neoplasms, a temporal-lobe epilepsy, aspirin and a myocardial infarction."""
    return KB([
        Concept("D001943", "Breast Neoplasms", ["breast cancer"], "Disease"),
        Concept("D010051", "Ovarian Neoplasms", ["ovarian cancer"], "Disease"),
        Concept("D004833", "Epilepsy, Temporal Lobe", ["temporal lobe epilepsy"], "Disease"),
        Concept("C001", "aspirin", ["acetylsalicylic acid"], "Chemical"),
        Concept("D009203", "Myocardial Infarction", [], "Disease"),
    ])


def doc_with(text: str, spans: list[tuple[str, str]]) -> Document:
    """Document "1" whose annotations are the given (surface, type) spans, found in order."""
    doc = Document("1", [Passage(0, text, {"type": "abstract"})])
    pos = 0
    for surface, type_ in spans:
        start = text.index(surface, pos)
        doc.add_annotation(Annotation(start, start + len(surface), surface, type_, ["GOLD"]))
        pos = start + 1
    return doc
