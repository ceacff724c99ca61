"""The text pools a normalizer searches: the KB's names (O), extra synonyms, and the training
mentions (D), each as :class:`~e2e_linker.kb_search.label_index.LabeledTexts` folded by the
model's :class:`~e2e_linker.lexical.text_forms.TextNormalizer`.
"""

from __future__ import annotations

from collections.abc import Iterable

from data_tools.documents import Annotation, Document, strip_prefix
from e2e_linker.kb_search.label_index import LabeledTexts
from e2e_linker.lexical.abbreviations import (
    DocumentAbbreviations,
    document_mentions,
    expand_mention,
)
from e2e_linker.lexical.text_forms import TextNormalizer, split_composite

#: Annotation types of other corpora that mean a KB type: NCBI disease's four classes are all
#: diseases, so over a KB holding chemicals too (bc5cdr) they search the diseases only; BioRED's
#: genes and species are the types ``linker normalize`` links by name
#: (:mod:`e2e_linker.normalizer.given_mentions`).
TYPE_ALIASES = {"SpecificDisease": "Disease", "DiseaseClass": "Disease",
                "Modifier": "Disease", "CompositeMention": "Disease",
                "ChemicalEntity": "Chemical", "DiseaseOrPhenotypicFeature": "Disease",
                "GeneOrGeneProduct": "Gene", "OrganismTaxon": "Species"}


def ontology_pool(kb, text: TextNormalizer) -> LabeledTexts:
    """Every KB name, normalised, labelled with its concept ID and typed with the KB type."""
    return LabeledTexts.from_pairs(
        (text(name), c.id, c.type) for c in kb for name in c.all_names())


def synonym_pool(kb, text: TextNormalizer, pairs: Iterable[tuple[str, str]]) -> LabeledTexts:
    """Extra ``(concept_id, name)`` synonyms as a pool (IDs resolved through the KB)."""
    def triples():
        for cid, name in pairs:
            primary = kb.resolve(cid) if kb is not None else strip_prefix(cid)
            concept = kb.get(primary) if kb is not None else None
            yield text(name), primary, concept.type if concept else ""
    return LabeledTexts.from_pairs(triples())


def mention_ids(ann: Annotation, kb=None) -> list[str]:
    """An annotation's concept IDs without prefixes, mapped to the KB's primary IDs."""
    ids = [strip_prefix(c) for c in ann.concept_ids if c.strip()]
    return [kb.resolve(c) for c in ids] if kb is not None else ids


def training_triples(docs: Iterable[Document], text: TextNormalizer, kb=None,
                     abbreviations: bool = True, types: Iterable[str] | None = None
                     ) -> list[tuple[str, str, str]]:
    """``(normalised text, label, type)`` for each training mention with a concept.

    Composite mentions contribute their parts (gold ``composite_texts`` when present, else the
    heuristic split paired with the IDs by :func:`align_parts`) and, labelled ``D1|D2``,
    their whole text. With ``abbreviations`` a mention holding a short form defined in its document is
    added a second time with the long form, as queries are expanded the same way.
    """
    wanted = set(types) if types is not None else None
    out: list[tuple[str, str, str]] = []
    for doc in docs:
        expansions = DocumentAbbreviations.scan(doc.text).expansions(document_mentions(doc)) \
            if abbreviations else {}
        for ann in doc.annotations:
            if wanted is not None and ann.type not in wanted:
                continue
            ids = mention_ids(ann, kb)
            if not ids:
                continue

            def type_of(cid: str, ann: Annotation = ann) -> str:
                concept = kb.get(cid) if kb is not None else None
                if concept is not None and concept.type:
                    return concept.type
                return TYPE_ALIASES.get(ann.type, ann.type)

            surfaces = {ann.text}
            if expansions:
                surfaces.add(expand_mention(ann.text, expansions))
            for surface in sorted(surfaces):
                if len(ids) == 1:
                    out.append((text(surface), ids[0], type_of(ids[0])))
                    continue
                out.append((text(surface), "|".join(ids), TYPE_ALIASES.get(ann.type, ann.type)))
                parts = ann.composite_texts if surface == ann.text else None
                aligned: list[str] | None = list(parts) if parts and len(parts) == len(ids) \
                    else None
                if aligned is None:
                    aligned = align_parts(split_composite(surface), ids, kb, text)
                if aligned is not None:
                    out.extend((text(p), cid, type_of(cid))
                               for p, cid in zip(aligned, ids, strict=True))
    return out


def align_parts(parts: list[str], ids: list[str], kb, text: TextNormalizer
                ) -> list[str] | None:
    """``parts`` reordered to match ``ids``, or None when no confident pairing exists.

    Why: corpora do not always list a composite's IDs in text order (NCBI writes
    "breast and ovarian cancer" as ``D010051|D001943`` as often as the other way round), and a
    positional pairing would teach "ovarian cancer" the breast-cancer ID. Each (part, ID) pair
    scores the best word overlap (Jaccard) between the part and the concept's KB names; the
    permutation with the highest total wins if every part overlaps its concept. Without a KB,
    or for more than 5 parts, parts are paired in order.
    """
    if len(parts) != len(ids) or len(parts) < 2:
        return None
    if kb is None or len(parts) > 5:
        return parts
    from itertools import permutations

    def words(value: str) -> set[str]:
        return set(text(value).lower().split())

    def overlap(part: str, cid: str) -> float:
        concept = kb.get(cid)
        if concept is None:
            return 0.0
        mine = words(part)
        return max((len(mine & words(n)) / len(mine | words(n)) for n in concept.all_names()),
                   default=0.0)

    scores = [[overlap(part, cid) for cid in ids] for part in parts]
    best, best_total = None, 0.0
    for perm in permutations(range(len(parts))):  # perm[j]: the part paired with ids[j]
        pair_scores = [scores[perm[j]][j] for j in range(len(ids))]
        total = sum(pair_scores)
        if min(pair_scores) > 0 and total > best_total:
            best, best_total = perm, total
    return None if best is None else [parts[best[j]] for j in range(len(ids))]


def distinct_mentions(triples: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``(text, label, type)`` triples as a model directory saves them (``mentions.tsv``):
    whitespace collapsed, each distinct triple once, sorted by label, type and text."""
    rows = sorted({(label, type_, " ".join(text.split())) for text, label, type_ in triples})
    return [(text, label, type_) for label, type_, text in rows]


def mention_pool(text: TextNormalizer, kb, training: Iterable[Document] | None = None,
                 saved: Iterable[tuple[str, str, str]] | None = None,
                 abbreviations: bool = True) -> LabeledTexts | None:
    """The D pool: training mentions from annotated ``training`` documents and/or ``saved``
    raw triples, as one pool (None when there are none).

    Why one builder: the pool used to be built from documents (every occurrence counted,
    folded at once) or from a model's saved triples (distinct raw texts), so the same corpora
    gave two pools and two outputs. Both now go the saved way: raw triples
    (:func:`training_triples` without folding), :func:`distinct_mentions`, then folded with
    ``text`` and the labels resolved to the KB's primary IDs.
    """
    raw = TextNormalizer(lowercase=False, punctuation=False)
    triples: list[tuple[str, str, str]] = []
    if training is not None:
        triples += training_triples(training, raw, kb, abbreviations)
    if saved is not None:
        triples += list(saved)
    if not triples:
        return None
    return LabeledTexts.from_pairs(
        (text(t), "|".join(kb.resolve(i) for i in label.split("|")), type_)
        for t, label, type_ in distinct_mentions(triples))
