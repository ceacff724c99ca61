"""Map between our Document and the ``bioc`` package's BioCDocument (shared by XML and JSON).

Infons that have a field of their own are moved into it on reading and written back from it:
``type`` → ``Annotation.type``, ``composite_texts`` → parts of a composite, ``mention_score`` /
``link_score``. The concept ID stays in the infon key the file used (``MESH`` in BC5CDR,
``identifier`` in PubTator Central exports, ``CUI``...), and is re-synchronised from
``concept_ids`` when writing, so edits to the IDs win over stale infons.
"""

from __future__ import annotations

import bioc

from data_tools.documents import Annotation, Document, FormatError, Passage, Relation
from data_tools.formats.pubtator import parse_ids

ID_KEYS = ("identifier", "MESH", "CUI", "concept_id", "Identifier", "NCBI Gene", "ID")
DEFAULT_ID_KEY = "identifier"


def id_key(infons: dict[str, str]) -> str | None:
    return next((k for k in ID_KEYS if k in infons), None)


def annotation_from_bioc(ann: bioc.BioCAnnotation, where: str) -> Annotation:
    infons = {k: ("" if v is None else str(v)) for k, v in ann.infons.items()}
    if not ann.locations:
        raise FormatError(f"annotation {ann.id} has no location", where=where)
    locations = [(loc.offset, loc.offset + loc.length) for loc in ann.locations]
    for start, end in locations:
        if start < 0 or end < start:
            raise FormatError(f"annotation {ann.id} has a bad location {start}-{end}", where=where)
    type_ = infons.pop("type", "")
    composite = infons.pop("composite_texts", None)
    scores = {k: infons.pop(k) for k in ("mention_score", "link_score") if k in infons}
    key = id_key(infons)
    out = Annotation(
        start=locations[0][0], end=locations[0][1], text=ann.text or "", type=type_,
        concept_ids=parse_ids(infons[key]) if key else [], id=ann.id, infons=infons,
        composite_texts=composite.split("|") if composite is not None else None,
        extra_locations=locations[1:], no_id=key is None,
    )
    try:
        if "mention_score" in scores:
            out.mention_score = float(scores["mention_score"])
        if "link_score" in scores:
            out.link_score = float(scores["link_score"])
    except ValueError:
        raise FormatError(f"annotation {ann.id} has a non-numeric score", where=where) from None
    return out


def relation_from_bioc(rel: bioc.BioCRelation) -> Relation:
    return Relation(id=rel.id, infons={k: ("" if v is None else str(v)) for k, v in rel.infons.items()},
                    nodes=[(n.refid, n.role) for n in rel.nodes])


def document_from_bioc(doc: bioc.BioCDocument, source: str | None = None) -> Document:
    """Our Document from a BioCDocument; document-level annotations go to their passage."""
    where = f"document {doc.id}"
    if not doc.id:
        raise FormatError("document without an <id>", path=source)
    out = Document(id=str(doc.id), infons=dict(doc.infons),
                   relations=[relation_from_bioc(r) for r in doc.relations])
    for passage in doc.passages:
        if passage.sentences and not passage.text:
            raise FormatError("sentence-level BioC passages are not supported", path=source,
                              where=where)
        p = Passage(int(passage.offset), passage.text or "", dict(passage.infons))
        p.annotations = [annotation_from_bioc(a, where) for a in passage.annotations]
        p.relations = [relation_from_bioc(r) for r in passage.relations]
        out.passages.append(p)
    for ann in doc.annotations:
        try:
            out.add_annotation(annotation_from_bioc(ann, where))
        except IndexError as exc:
            raise FormatError(str(exc), path=source, where=where) from None
    for p in out.passages:
        for a in p.annotations:
            if a.start < p.offset or a.end > p.end:
                raise FormatError(f"annotation {a.id} at {a.start}-{a.end} lies outside its "
                                  f"passage ({p.offset}-{p.end})", path=source, where=where)
    return out


def _score(value: float) -> str:
    return f"{value:.4f}"


def annotation_to_bioc(ann: Annotation, fallback_id: str) -> bioc.BioCAnnotation:
    out = bioc.BioCAnnotation()
    out.id = ann.id if ann.id is not None else fallback_id
    infons: dict[str, str] = {}
    if ann.type or "type" in ann.infons:
        infons["type"] = ann.type
    key = id_key(ann.infons)
    for k, v in ann.infons.items():
        if k == key:
            infons[k] = v if parse_ids(v) == ann.concept_ids else ann.concept_id
        else:
            infons[k] = v
    if key is None and (ann.concept_ids or not ann.no_id):
        raw = ann.infons.get("pubtator_id")
        infons[DEFAULT_ID_KEY] = raw if raw is not None and parse_ids(raw) == ann.concept_ids \
            else ann.concept_id
    if ann.composite_texts is not None:
        infons["CompositeRole"] = infons.get("CompositeRole", "CompositeMention")
        infons["composite_texts"] = "|".join(ann.composite_texts)
    if ann.mention_score is not None:
        infons["mention_score"] = _score(ann.mention_score)
    if ann.link_score is not None:
        infons["link_score"] = _score(ann.link_score)
    out.infons = infons
    for start, end in ann.locations:
        out.add_location(bioc.BioCLocation(start, end - start))
    out.text = ann.text
    return out


def relation_to_bioc(rel: Relation, fallback_id: str) -> bioc.BioCRelation:
    out = bioc.BioCRelation()
    out.id = rel.id if rel.id is not None else fallback_id
    out.infons = dict(rel.infons)
    for refid, role in rel.nodes:
        out.add_node(bioc.BioCNode(refid, role))
    return out


def document_to_bioc(doc: Document) -> bioc.BioCDocument:
    """A BioCDocument; PubTator markers (raw ID string, 5-column row) travel as infons."""
    out = bioc.BioCDocument()
    out.id = doc.id
    out.infons = dict(doc.infons)
    n = 0
    for passage in doc.passages:
        p = bioc.BioCPassage()
        p.offset = passage.offset
        p.text = passage.text
        p.infons = dict(passage.infons)
        for ann in passage.annotations:
            p.add_annotation(annotation_to_bioc(ann, str(n)))
            n += 1
        for k, rel in enumerate(passage.relations):
            p.add_relation(relation_to_bioc(rel, f"P{k}"))
        out.add_passage(p)
    for k, rel in enumerate(doc.relations):
        out.add_relation(relation_to_bioc(rel, f"R{k}"))
    return out
