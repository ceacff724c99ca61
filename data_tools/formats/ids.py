"""Concept-ID strings as files write them, shared by the PubTator and BioC code.

Both formats write a mention's IDs as one string (``D1|D2``, ``-1``, NCBI's `` D015862+D058499``),
while the model keeps the clean list ``Annotation.concept_ids``. The string as written is kept
(PubTator: ``pubtator_id`` infon when it differs; BioC: the ID infon itself) and written back
as long as it still parses to the same list, so untouched mentions round-trip byte for byte and
edited ones get the clean ``"|".join(concept_ids)``.
"""

from __future__ import annotations

import re

from data_tools.documents import NO_CONCEPT, Annotation

#: infon holding PubTator's ID column as written when it differs from ``Annotation.concept_id``
RAW_ID = "pubtator_id"
#: BioC infon keys that hold a concept ID, most common first; the first one present is used
ID_KEYS = ("identifier", "MESH", "CUI", "concept_id", "Identifier", "NCBI Gene", "ID")
DEFAULT_ID_KEY = "identifier"
_ID_SPLIT = re.compile(r"[|+]")


def parse_ids(raw: str) -> list[str]:
    """``'D1|D2'`` → ``['D1', 'D2']`` (also ``+``-joined); ``'-1'`` or empty → ``[]``.

    A ``-1`` part of a composite (``D002544|-1``) is dropped: it names no concept.
    """
    if raw.strip() in ("", NO_CONCEPT):
        return []
    return [i for i in (part.strip() for part in _ID_SPLIT.split(raw)) if i and i != NO_CONCEPT]


def id_key(infons: dict[str, str]) -> str | None:
    """The BioC infon key holding the concept ID, if any."""
    return next((k for k in ID_KEYS if k in infons), None)


def written_id(ann: Annotation) -> str:
    """The ID string to write: as the source wrote it while still valid, else the clean one."""
    key = id_key(ann.infons)
    for raw in (ann.infons.get(RAW_ID), ann.infons.get(key) if key else None):
        if raw is not None and parse_ids(raw) == ann.concept_ids:
            return raw
    return ann.concept_id
