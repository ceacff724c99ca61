"""A synthetic corpus and KB small enough to train a tiny model on in seconds."""

from __future__ import annotations

import random

from data_tools.documents import Annotation, Document, Passage

CHEMICALS = {"C001": ["aspirin", "acetylsalicylic acid"], "C002": ["ibuprofen"],
             "C003": ["cisplatin"], "C004": ["haloperidol"]}
DISEASES = {"D001": ["headache", "cephalalgia"], "D002": ["nausea"],
            "D003": ["renal failure", "kidney failure"], "D004": ["delirium"]}
TEMPLATES = [
    "The patient was given {c} and later reported {d}.",
    "Treatment with {c} caused {d} in two cases.",
    "We observed {d} after {c} exposure.",
]


def synthetic_kb():
    from data_tools.kb import KB, Concept

    kb = KB()
    for table, type_ in ((CHEMICALS, "Chemical"), (DISEASES, "Disease")):
        for cid, names in table.items():
            kb.add(Concept(id=cid, name=names[0], synonyms=names[1:], type=type_, source="test"))
    return kb


def synthetic_docs(n: int, seed: int = 0) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for k in range(n):
        title = f"Report {k}."
        text_parts: list[str] = []
        anns: list[Annotation] = []
        offset = len(title) + 1
        for _ in range(3):
            c_id = rng.choice(sorted(CHEMICALS))
            d_id = rng.choice(sorted(DISEASES))
            c = rng.choice(CHEMICALS[c_id])
            d = rng.choice(DISEASES[d_id])
            sentence = rng.choice(TEMPLATES).format(c=c, d=d)
            base = offset + sum(len(p) + 1 for p in text_parts)
            for surface, cid, type_ in ((c, c_id, "Chemical"), (d, d_id, "Disease")):
                at = sentence.index(surface)
                anns.append(Annotation(base + at, base + at + len(surface), surface, type_, [cid]))
            text_parts.append(sentence)
        abstract = " ".join(text_parts)
        doc = Document(str(1000 + k), [Passage(0, title, {"type": "title"}),
                                       Passage(offset, abstract, {"type": "abstract"})])
        for a in anns:
            doc.add_annotation(a)
        docs.append(doc)
    return docs
