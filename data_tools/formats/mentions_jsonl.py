"""Mentions as JSON Lines: one object per annotation, for tools that want mentions, not
documents (``linker annotate --format jsonl``).

Each line holds ``document``, ``start``, ``end``, ``text``, ``type``, ``concept_id`` (IDs
joined with ``|``; null when none), ``concept_name`` (only when known: the annotation's
``concept_name`` infon, which ``linker annotate`` fills from its KB), ``mention_score`` and
``link_score`` (null when the annotation has none). Offsets are the document's character
offsets. The format is written only: it drops the text around the mentions, so it cannot be
read back as a corpus (BioC JSON Lines, ``.jsonl``, is the lossless one).
"""

from __future__ import annotations

import json
from typing import IO

from data_tools.documents import Document

#: the annotation infon the writer takes a concept's name from
CONCEPT_NAME = "concept_name"


def mention_records(doc: Document) -> list[dict]:
    """The JSON objects of a document's annotations, in offset order as stored."""
    records = []
    for ann in doc.annotations:
        record: dict = {"document": doc.id, "start": ann.start, "end": ann.end,
                        "text": ann.text, "type": ann.type,
                        "concept_id": "|".join(ann.concept_ids) or None}
        name = ann.infons.get(CONCEPT_NAME)
        if name:
            record["concept_name"] = name
        record["mention_score"] = ann.mention_score
        record["link_score"] = ann.link_score
        records.append(record)
    return records


class MentionJSONLWriter:
    """Streams :func:`mention_records` to a text handle, one compact JSON object a line
    (non-ASCII kept as is, so ``text`` reads as in the document)."""

    def __init__(self, handle: IO[str]):
        self.handle = handle

    def write(self, doc: Document) -> None:
        for record in mention_records(doc):
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def close(self) -> None:
        self.handle.flush()
