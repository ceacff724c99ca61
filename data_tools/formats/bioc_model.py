"""BioC documents as plain dicts (the BioC JSON layout) ⇄ our Document, validated in one place.

Both BioC readers turn their input into the same dict shape (JSON is already that; the XML
reader builds it from each ``<document>`` element) and both writers start from it, so the rules
below hold for XML and JSON alike and a bad file gets the same message in either format.

Infons that have a field of their own move into it on reading and come back on writing:
``type`` → ``Annotation.type``; ``composite_texts`` (``"p1|p2"``) → ``Annotation.composite_texts``;
``mention_score``/``link_score`` (written with 4 decimals) → the score fields. The concept ID
stays under the infon key the file used (``MESH`` in BC5CDR, ``identifier`` in PubTator Central
exports, ``CUI``...): on writing, that infon is re-derived from ``concept_ids`` when they were
edited. Annotations that never had an ID key get ``identifier``.

BioC sentences are not kept as such: their annotations and relations are lifted into the
passage, and a passage without text gets its text from its sentences. Our model has no
sentences, and the linker only needs document offsets.
"""

from __future__ import annotations

from typing import Any

from data_tools.documents import Annotation, Document, FormatError, Passage, Relation
from data_tools.formats.ids import DEFAULT_ID_KEY, id_key, parse_ids, written_id

COMPOSITE_ROLE = "CompositeRole"
COMPOSITE_TEXTS = "composite_texts"
INDIVIDUAL = "IndividualMention"
SCORE_KEYS = ("mention_score", "link_score")


class _Where:
    """Names the place of a problem: the file and ``document <id>``."""

    def __init__(self, path: str | None, doc: str):
        self.path = path
        self.doc = doc

    def error(self, message: str) -> FormatError:
        return FormatError(message, path=self.path, where=self.doc)


def _str(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _int(value: Any, what: str, where: _Where) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise where.error(f"{what} is {value!r}, not an integer")
    try:
        number = int(value)
    except ValueError:
        raise where.error(f"{what} is {value!r}, not an integer") from None
    if number < 0:
        raise where.error(f"{what} is negative ({number})")
    return number


def _dict(value: Any, what: str, where: _Where) -> dict:
    if not isinstance(value, dict):
        raise where.error(f"{what} is a {type(value).__name__}, expected an object")
    return value


def _list(obj: dict, key: str, what: str, where: _Where) -> list:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(f"'{key}' of {what} is a {type(value).__name__}, expected a list")
    return value


def _infons(obj: dict, what: str, where: _Where) -> dict[str, str]:
    value = obj.get("infons")
    if value is None:
        return {}
    return {_str(k): _str(v) for k, v in _dict(value, f"infons of {what}", where).items()}


def annotation_from_dict(obj: Any, where: _Where) -> Annotation:
    obj = _dict(obj, "an annotation", where)
    ann_id = obj.get("id")
    what = f"annotation {ann_id}" if ann_id is not None else "an annotation without id"
    infons = _infons(obj, what, where)
    locations = []
    for loc in _list(obj, "locations", what, where):
        loc = _dict(loc, f"a location of {what}", where)
        start = _int(loc.get("offset"), f"location offset of {what}", where)
        locations.append((start, start + _int(loc.get("length"), f"location length of {what}",
                                              where)))
    if not locations:
        raise where.error(f"{what} has no location")
    composite = infons.pop(COMPOSITE_TEXTS, None)
    scores = {k: infons.pop(k) for k in SCORE_KEYS if k in infons}
    key = id_key(infons)
    ann = Annotation(
        start=locations[0][0], end=locations[0][1], text=_str(obj.get("text")),
        type=infons.pop("type", ""), concept_ids=parse_ids(infons[key]) if key else [],
        id=None if ann_id is None else _str(ann_id), infons=infons,
        composite_texts=composite.split("|") if composite is not None else None,
        extra_locations=locations[1:], no_id=key is None)
    try:
        ann.mention_score = float(scores["mention_score"]) if "mention_score" in scores else None
        ann.link_score = float(scores["link_score"]) if "link_score" in scores else None
    except ValueError:
        raise where.error(f"{what} has a non-numeric score {scores}") from None
    return ann


def relation_from_dict(obj: Any, where: _Where) -> Relation:
    obj = _dict(obj, "a relation", where)
    what = f"relation {obj.get('id')}"
    nodes = [_dict(n, f"a node of {what}", where) for n in _list(obj, "nodes", what, where)]
    return Relation(id=None if obj.get("id") is None else _str(obj["id"]),
                    infons=_infons(obj, what, where),
                    nodes=[(_str(n.get("refid")), _str(n.get("role"))) for n in nodes])


def _sentences_into(passage: Passage, obj: dict, what: str, where: _Where) -> None:
    """Lift sentence annotations/relations into the passage; fill an empty passage text."""
    sentences = [_dict(s, f"a sentence of {what}", where)
                 for s in _list(obj, "sentences", what, where)]
    pieces = []
    for sentence in sentences:
        offset = _int(sentence.get("offset"), f"sentence offset in {what}", where)
        pieces.append((offset, _str(sentence.get("text"))))
        passage.annotations += [annotation_from_dict(a, where)
                                for a in _list(sentence, "annotations", "a sentence", where)]
        passage.relations += [relation_from_dict(r, where)
                              for r in _list(sentence, "relations", "a sentence", where)]
    if sentences and not passage.text:
        text = ""
        for offset, piece in sorted(pieces):
            gap = offset - passage.offset - len(text)
            if gap < 0:
                raise where.error(f"overlapping sentences in {what}")
            text += " " * gap + piece
        passage.text = text


def _check_span(ann: Annotation, passage: Passage, where: _Where, strict: bool) -> None:
    for start, end in ann.locations:
        if start < passage.offset or end > passage.end:
            raise where.error(f"annotation {ann.id} at {start}-{end} lies outside its passage "
                              f"({passage.offset}-{passage.end})")
    # BC5CDR's IndividualMention parts carry the part's name as text ("ventricular septal
    # defects") and sometimes shifted offsets: 154 of them in the release, so never checked.
    if strict and not ann.extra_locations and ann.infons.get(COMPOSITE_ROLE) != INDIVIDUAL:
        actual = passage.text[ann.start - passage.offset: ann.end - passage.offset]
        if actual != ann.text:
            raise where.error(f"annotation {ann.id} text {ann.text!r} differs from the "
                              f"passage text {actual!r} at {ann.start}-{ann.end}")


def document_from_dict(obj: Any, path: str | None = None, label: str | None = None,
                       strict: bool = False) -> Document:
    """Our Document from a BioC-JSON-shaped dict; every problem names the file and document.

    ``label`` names the document in errors when it has no id (e.g. ``document #3``).
    ``strict`` makes an annotation whose text differs from the passage text an error.
    """
    where = _Where(path, label or "a document")
    obj = _dict(obj, "the document", where)
    if obj.get("id") in (None, ""):
        raise where.error("document without an id")
    where.doc = f"document {obj['id']}"
    if "passages" not in obj:
        raise where.error("document has no 'passages'")
    doc = Document(id=_str(obj["id"]), infons=_infons(obj, "the document", where))
    for n, p in enumerate(_list(obj, "passages", "the document", where)):
        what = f"passage {n}"
        p = _dict(p, what, where)
        passage = Passage(_int(p.get("offset", 0), f"offset of {what}", where),
                          _str(p.get("text")), _infons(p, what, where))
        passage.annotations = [annotation_from_dict(a, where)
                               for a in _list(p, "annotations", what, where)]
        passage.relations = [relation_from_dict(r, where)
                             for r in _list(p, "relations", what, where)]
        _sentences_into(passage, p, what, where)
        doc.passages.append(passage)
    for a in _list(obj, "annotations", "the document", where):
        ann = annotation_from_dict(a, where)
        try:
            doc.add_annotation(ann)
        except IndexError:
            raise where.error(f"annotation {ann.id} at {ann.start}-{ann.end} is outside every "
                              "passage") from None
    doc.relations = [relation_from_dict(r, where)
                     for r in _list(obj, "relations", "the document", where)]
    for passage in doc.passages:
        for ann in passage.annotations:
            _check_span(ann, passage, where, strict)
    return doc


def _score(value: float) -> str:
    return f"{value:.4f}"


def _annotation_infons(ann: Annotation) -> dict[str, str]:
    infons: dict[str, str] = {}
    if ann.type:
        infons["type"] = ann.type
    infons.update((_str(k), _str(v)) for k, v in ann.infons.items())
    key = id_key(ann.infons)
    if key is not None or ann.concept_ids or not ann.no_id:
        # the file's own key (or ``identifier``); the value follows edited concept_ids
        infons[key or DEFAULT_ID_KEY] = written_id(ann)
    if ann.composite_texts is not None:
        infons.setdefault(COMPOSITE_ROLE, "CompositeMention")
        infons[COMPOSITE_TEXTS] = "|".join(ann.composite_texts)
    if ann.mention_score is not None:
        infons["mention_score"] = _score(ann.mention_score)
    if ann.link_score is not None:
        infons["link_score"] = _score(ann.link_score)
    return infons


class _Ids:
    """Fills in missing annotation/relation ids without colliding with existing ones."""

    def __init__(self, taken: set[str], prefix: str = ""):
        self.taken = taken
        self.prefix = prefix
        self.next = 0

    def get(self, given: str | None) -> str:
        if given is not None:
            return given
        while f"{self.prefix}{self.next}" in self.taken:
            self.next += 1
        new = f"{self.prefix}{self.next}"
        self.taken.add(new)
        return new


def _relation_dict(rel: Relation, ids: _Ids) -> dict:
    return {"id": ids.get(rel.id), "infons": {_str(k): _str(v) for k, v in rel.infons.items()},
            "nodes": [{"refid": refid, "role": role} for refid, role in rel.nodes]}


def document_to_dict(doc: Document) -> dict:
    """The BioC JSON layout of ``bioc.biocjson`` (so its reader accepts our output too)."""
    ann_ids = _Ids({a.id for a in doc.annotations if a.id is not None})
    rel_ids = _Ids({r.id for p in doc.passages for r in p.relations if r.id is not None}
                   | {r.id for r in doc.relations if r.id is not None}, "R")
    passages = []
    for passage in doc.passages:
        passages.append({
            "bioctype": "BioCPassage", "offset": passage.offset,
            "infons": {_str(k): _str(v) for k, v in passage.infons.items()},
            "text": passage.text, "sentences": [],
            "annotations": [
                {"id": ann_ids.get(a.id), "infons": _annotation_infons(a), "text": a.text,
                 "locations": [{"offset": s, "length": e - s} for s, e in a.locations]}
                for a in passage.annotations],
            "relations": [_relation_dict(r, rel_ids) for r in passage.relations],
        })
    return {"bioctype": "BioCDocument", "id": doc.id,
            "infons": {_str(k): _str(v) for k, v in doc.infons.items()},
            "passages": passages, "annotations": [],
            "relations": [_relation_dict(r, rel_ids) for r in doc.relations]}


def collection_header(info: dict | None) -> dict:
    """Collection source/date/key/infons for writing.

    Never today's date (bioc's default): the same input must give byte-identical output.
    """
    info = info or {}
    return {"source": _str(info.get("source")) or "e2e_linker", "date": _str(info.get("date")),
            "key": _str(info.get("key")),
            "infons": {_str(k): _str(v) for k, v in (info.get("infons") or {}).items()}}


def empty_info() -> dict:
    """Collection info of a format that has none (PubTator, JSON Lines)."""
    return {"source": "", "date": "", "key": "", "infons": {}}
