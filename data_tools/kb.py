"""One knowledge-base object for every source: concept ID → preferred name, synonyms, type.

Loaders (data_tools.kb_loaders) turn MEDIC, MeSH, UMLS or TSV files into a :class:`KB`; KBs
merge by concept ID (names are unioned). IDs are stored without a ``MESH:`` prefix so they
compare directly with gold annotations under the scoring policy. ``content_hash`` keys
embedding caches and model manifests, so it depends on content only, never on load order of
files that produced the same content.

Gene concepts carry their species as an NCBI taxon ID (``Concept.taxon``, ``"9606"`` for
human), because gene symbols are shared across species (``TP53`` and mouse ``Trp53``'s
synonyms overlap). The taxon enters ``content_hash`` and the saved TSV only when it is set, so
KBs without genes hash and save exactly as they did before the field existed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import FormatError, strip_prefix


@dataclass
class Concept:
    """A concept: its primary ID, preferred name, synonyms, type and where it came from."""

    id: str
    name: str
    synonyms: list[str] = field(default_factory=list)
    type: str = ""
    source: str = ""
    alt_ids: list[str] = field(default_factory=list)
    #: NCBI taxon ID of the organism (genes: ``"9606"`` human, ``"10090"`` mouse...); ``""`` when
    #: the concept is not species-specific (diseases, chemicals)
    taxon: str = ""
    #: MeSH files this chemical under proteins or enzymes (D12.776, D08.811): a gene product,
    #: which other groups' guidelines annotate as a gene, not a chemical (annotate's
    #: ``gene_products`` setting; docs/decisions/0011-gene-products.md)
    gene_product: bool = False

    def all_names(self) -> list[str]:
        """Preferred name then synonyms, de-duplicated case-insensitively, in order."""
        seen: set[str] = set()
        out = []
        for name in (self.name, *self.synonyms):
            key = name.strip().lower()
            if key and key not in seen:
                seen.add(key)
                out.append(name.strip())
        return out

    def types(self) -> list[str]:
        """The concept's types: ``type`` holds them joined by "|" (MEDIC's and a TSV KB's
        "Chemical|Gene"), the one place that split is written."""
        return [t for t in self.type.split("|") if t]


def normalize_id(concept_id: str) -> str:
    """A concept ID as the KB keys it: spaces and a ``MESH:`` style prefix removed."""
    return strip_prefix(concept_id.strip())


class KB:
    """Concepts by ID, in insertion order; alternative IDs resolve to their primary ID."""

    def __init__(self, concepts: Iterable[Concept] = ()):
        self.concepts: dict[str, Concept] = {}
        self._alt: dict[str, str] = {}
        for concept in concepts:
            self.add(concept)

    def __len__(self) -> int:
        return len(self.concepts)

    def __contains__(self, concept_id: str) -> bool:
        return self.resolve(concept_id) in self.concepts

    def __iter__(self) -> Iterator[Concept]:
        return iter(self.concepts.values())

    def __repr__(self) -> str:
        return f"KB({len(self)} concepts, {self.num_names} names, types={self.types()})"

    def resolve(self, concept_id: str) -> str:
        """The primary ID for ``concept_id`` (itself if it is primary or unknown)."""
        cid = normalize_id(concept_id)
        return cid if cid in self.concepts else self._alt.get(cid, cid)

    def get(self, concept_id: str) -> Concept | None:
        return self.concepts.get(self.resolve(concept_id))

    def add(self, concept: Concept) -> None:
        """Insert, or merge into the existing concept with that ID (names unioned in order)."""
        concept.id = normalize_id(concept.id)
        existing = self.concepts.get(concept.id)
        if existing is None:
            self.concepts[concept.id] = Concept(concept.id, concept.name, list(concept.synonyms),
                                                concept.type, concept.source,
                                                list(concept.alt_ids), concept.taxon,
                                                concept.gene_product)
            for alt in concept.alt_ids:
                self._alt.setdefault(normalize_id(alt), concept.id)
            return
        known = {n.lower() for n in existing.all_names()}
        if not existing.name:
            existing.name = concept.name
        for name in (concept.name, *concept.synonyms):
            if name and name.lower() not in known:
                existing.synonyms.append(name)
                known.add(name.lower())
        if not existing.type:
            existing.type = concept.type
        if not existing.taxon:
            existing.taxon = concept.taxon
        existing.gene_product = existing.gene_product or concept.gene_product
        for alt in concept.alt_ids:
            if alt not in existing.alt_ids:
                existing.alt_ids.append(alt)
                self._alt.setdefault(normalize_id(alt), existing.id)

    def add_names(self, concept_id: str, names: Iterable[str], type: str | None = None,
                  source: str = "") -> None:
        """Add a concept whose first non-empty name is preferred and the rest synonyms
        (merged into an existing concept of the same ID)."""
        names = [n for n in names if n]
        if not names:
            return
        self.add(Concept(concept_id, names[0], names[1:], type or "", source))

    def merge(self, other: KB) -> KB:
        """A new KB with this one's concepts, then ``other``'s merged in."""
        out = KB()
        for kb in (self, other):
            for concept in kb:
                out.add(concept)
        return out

    def names(self) -> list[tuple[str, str]]:
        """Every ``(name, concept_id)`` pair: the index and sieves search these."""
        return [(name, c.id) for c in self.concepts.values() for name in c.all_names()]

    def name_columns(self) -> tuple[list[str], list[str], list[str]]:
        """:meth:`names` as three lists of the same length: each name, its concept's ID and its
        concept's type (``""`` where the concept has none).

        Why: an index over the names keeps all three per name; asking them this way lets a KB
        that stores its names and types as arrays (the compiled KB) gather them at once
        instead of looking up the concept of each of its 744k names."""
        names: list[str] = []
        ids: list[str] = []
        types: list[str] = []
        for concept in self.concepts.values():
            own = concept.all_names()
            names += own
            ids += [concept.id] * len(own)
            types += [concept.type or ""] * len(own)
        return names, ids, types

    @property
    def num_names(self) -> int:
        return sum(len(c.all_names()) for c in self.concepts.values())

    def alternate_ids(self) -> dict[str, str]:
        """Each alternative ID (normalized) → the primary ID it resolves to: what
        :meth:`resolve` reads besides the primary IDs (the compiled KB stores it)."""
        return dict(self._alt)

    def taxa(self) -> dict[str, str]:
        """Concept ID → NCBI taxon of every species-specific concept (genes)."""
        return {c.id: c.taxon for c in self.concepts.values() if c.taxon}

    def gene_products(self) -> frozenset[str]:
        """IDs of the concepts flagged :attr:`Concept.gene_product` (the compiled KB stores
        them)."""
        return frozenset(c.id for c in self.concepts.values() if c.gene_product)

    def types(self) -> list[str]:
        """The distinct type strings of the concepts (``|``-joined types as written)."""
        return sorted({c.type for c in self.concepts.values()})

    def filter(self, types: Iterable[str]) -> KB:
        """Concepts whose type (any part of a ``|``-joined type) is in ``types``."""
        wanted = set(types)
        return KB(c for c in self if wanted & set(c.type.split("|")))

    def content_hash(self) -> str:
        """sha256 over the sorted canonical content (IDs, names, types, and taxa where set).

        A concept's taxon enters only when it is non-empty, so the hash of a KB without taxa
        (every KB before genes were added) is unchanged: model manifests record it. The
        :attr:`Concept.gene_product` flag stays out for the same reason: it is read from the
        same MeSH tree numbers as the type, so it adds nothing a manifest must pin.
        """
        digest = hashlib.sha256()
        for cid in sorted(self.concepts):
            c = self.concepts[cid]
            taxon = f"\ttaxon={c.taxon}" if c.taxon else ""
            digest.update(f"{cid}\t{c.type}\t{'|'.join(c.all_names())}{taxon}\n".encode())
        return digest.hexdigest()

    # ---- persistence: a plain TSV, no pickle ---------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """``id<TAB>type<TAB>source<TAB>alt ids<TAB>name<TAB>synonym|synonym...[<TAB>taxon]``

        The 7th column is written only for a concept with a taxon, so a KB without taxa saves
        byte for byte as before and older readers still read it.
        """
        with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
            for c in self:
                fields = [c.id, c.type, c.source, "|".join(c.alt_ids), c.name, "|".join(c.synonyms)]
                if c.taxon:
                    fields.append(c.taxon)
                handle.write("\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields))
                handle.write("\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> KB:
        """Read a file written by :meth:`save` (6 columns, or 7 where a taxon is set)."""
        kb = cls()
        with Path(path).open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) not in (6, 7):
                    raise FormatError(f"expected 6 or 7 columns, got {len(fields)}",
                                      path=str(path), where=f"line {lineno}")
                cid, type_, source, alts, name, syns = fields[:6]
                kb.add(Concept(cid, name, [s for s in syns.split("|") if s], type_, source,
                               [a for a in alts.split("|") if a],
                               fields[6] if len(fields) == 7 else ""))
        return kb
