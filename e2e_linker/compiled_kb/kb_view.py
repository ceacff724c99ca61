"""One KB as flat arrays, and :class:`CompiledKB`: the :class:`data_tools.kb.KB` interface and
the sieves' dictionaries read from them.

Why arrays: a :class:`~data_tools.kb.KB` is a dict of 340k :class:`~data_tools.kb.Concept`
objects (744k names for ``bc5cdr``) parsed from the vocabulary files on every start; the
arrays (:func:`kb_arrays`) are written once and memory-mapped afterwards, and a concept becomes
an object only when something asks for it. The answers are the KB's own: every array is
derived from a built :class:`~data_tools.kb.KB` (its concepts in order, its
:meth:`~data_tools.kb.KB.alternate_ids`, its :meth:`~data_tools.kb.KB.content_hash`), and the
methods that make new KBs (``filter``, ``merge``, ``save``) are the KB's, run over this view.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import get_type_hints

import numpy as np

from data_tools.kb import KB, Concept, normalize_id
from e2e_linker.lexical.key_table import KeyTable, StringTable
from e2e_linker.lexical.sieve_stack import ontology_key_index
from e2e_linker.lexical.sieves import CompactKeyIndex, NameDictionary

#: array name prefixes of the sieves' dictionaries
NAME_DICTIONARY = "name_dictionary"
ONTOLOGY_KEYS = "ontology_keys"


def concept_columns() -> dict[str, str]:
    """Each :class:`Concept` field and how it is stored: ``"str"`` (a string table), ``"list"``
    (a string table of every concept's items, with each concept's start) or ``"bool"``.

    Why from the dataclass: a field added to :class:`Concept` is compiled without a change
    here, or refused at compile time when it is of a kind not listed, never silently dropped."""
    kinds = {str: "str", list[str]: "list", bool: "bool"}
    hints = get_type_hints(Concept)
    columns = {}
    for item in fields(Concept):
        if hints[item.name] not in kinds:
            raise TypeError(f"Concept.{item.name}: a {hints[item.name]} field cannot be "
                            "compiled; give kb_view.concept_columns a way to store it")
        columns[item.name] = kinds[hints[item.name]]
    return columns


def kb_arrays(kb: KB, sieves: bool = True) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, meta)`` of a built KB: each concept field (:func:`concept_columns`), the names
    in order (:meth:`KB.names`), each concept's type as its place in the distinct types
    (:meth:`KB.types`), the alternative IDs and, with ``sieves``, the exact-name
    dictionary (:class:`NameDictionary`) and the salt-free compact-key index
    (:func:`~e2e_linker.lexical.sieve_stack.ontology_key_index`): annotate's, about two thirds
    of the compile time, which ``linker normalize`` (its own folded texts) does without.
    ``meta`` holds the distinct types and the KB's content hash."""
    concepts = list(kb)
    arrays: dict[str, np.ndarray] = {}
    for name, kind in concept_columns().items():
        values = [getattr(c, name) for c in concepts]
        if kind == "str":
            arrays.update(StringTable.from_strings(values).arrays(f"concepts.{name}"))
        elif kind == "list":
            arrays.update(StringTable.from_strings(v for items in values for v in items
                                                   ).arrays(f"concepts.{name}"))
            starts = np.zeros(len(values) + 1, np.int64)
            np.cumsum([len(items) for items in values], out=starts[1:])
            arrays[f"concepts.{name}.starts"] = starts
        else:
            arrays[f"concepts.{name}"] = np.asarray(values, np.bool_)
    names: list[str] = []
    name_concept: list[int] = []
    for row, concept in enumerate(concepts):
        own = concept.all_names()
        names += own
        name_concept += [row] * len(own)
    row_of = {c.id: row for row, c in enumerate(concepts)}
    types = kb.types()
    type_index = {type_: n for n, type_ in enumerate(types)}
    arrays.update({
        "concepts.type_index": np.asarray([type_index[c.type] for c in concepts], np.int32),
        **KeyTable.from_runs({cid: [row] for cid, row in row_of.items()}).arrays(
            "concepts.id_rows"),
        **KeyTable.from_runs({alt: [row_of[cid]] for alt, cid in kb.alternate_ids().items()}
                             ).arrays("concepts.alt_rows"),
        **StringTable.from_strings(names).arrays("names.texts"),
        "names.concept": np.asarray(name_concept, np.int32),
    })
    if sieves:
        # NameDictionary.from_kb(kb), from the names just listed (one walk of the KB fewer)
        arrays.update(NameDictionary(
            zip(names, [concepts[row].id for row in name_concept], strict=True),
            {c.id: c.type for c in concepts}).arrays(NAME_DICTIONARY))
        arrays.update(ontology_key_index(kb, salt_free=True).arrays(ONTOLOGY_KEYS))
    meta = {"types": types, "content_hash": kb.content_hash(), "sieves": sieves,
            "columns": concept_columns(), "concepts": len(concepts), "names": len(names)}
    return arrays, meta


class CompiledKB:
    """The KB interface over :func:`kb_arrays`' arrays (memory-mapped or in memory).

    Lookups (``get``, ``resolve``, ``in``) go through sorted-hash tables; iteration,
    :meth:`names` and :attr:`concepts` decode what they need when asked."""

    def __init__(self, arrays: Mapping[str, np.ndarray], meta: dict):
        self.arrays = arrays
        self.meta = meta
        #: each :class:`Concept` field's string table (``str`` and ``list`` fields)
        self.tables = {name: StringTable.from_arrays(arrays, f"concepts.{name}")
                       for name, kind in meta["columns"].items() if kind != "bool"}
        self.ids = self.tables["id"]
        self.id_rows = KeyTable.from_arrays(arrays, "concepts.id_rows")
        self.alt_rows = KeyTable.from_arrays(arrays, "concepts.alt_rows")
        self.name_texts = StringTable.from_arrays(arrays, "names.texts")
        #: arrays decoded into Python lists or dicts, when first needed
        self._columns: dict = {}
        #: primary ID → row (None: no such primary ID), for the IDs looked up so far
        self._rows: dict[str, int | None] = {}
        #: row → its concept, for the rows :class:`ConceptRow` has asked so far
        self._concepts: dict[int, Concept] = {}

    # ---- the KB interface ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, concept_id: str) -> bool:
        return self.primary_row(concept_id) is not None

    def __iter__(self) -> Iterator[Concept]:
        return (self.decoded_concept(row) for row in range(len(self)))

    def resolve(self, concept_id: str) -> str:
        """The primary ID for ``concept_id`` (itself if it is primary or unknown)."""
        cid = normalize_id(concept_id)
        if cid in self.id_rows:
            return cid
        rows = self.alt_rows.get(cid)
        return self.ids[rows[0]] if rows else cid

    def get(self, concept_id: str) -> Concept | None:
        row = self.primary_row(concept_id)
        return None if row is None else self.concept(row)

    def names(self) -> list[tuple[str, str]]:
        """Every ``(name, concept_id)`` pair, in the KB's order."""
        return list(zip(self.name_texts.to_list(), self._per_name(self.ids.to_list()),
                        strict=True))

    def name_columns(self) -> tuple[list[str], list[str], list[str]]:
        """:meth:`KB.name_columns`: each name, its concept's ID and type, in :meth:`names`
        order, gathered from the arrays.

        Why: the entity index keeps the three per name; read through :attr:`concepts`
        (``kb.concepts[cid].type`` for each of the 744k names of ``bc5cdr``) the types alone
        took about a second of every load, gathered by row they take a few hundredths."""
        return (list(self.name_texts.to_list()), self._per_name(self.ids.to_list()),
                self._per_name(self.row_types()))

    @property
    def num_names(self) -> int:
        return len(self.name_texts)

    def types(self) -> list[str]:
        """The distinct type strings of the concepts (:meth:`KB.types`, stored)."""
        return list(self.meta["types"])

    def content_hash(self) -> str:
        """The built KB's :meth:`~data_tools.kb.KB.content_hash`, stored when compiled."""
        return self.meta["content_hash"]

    def alternate_ids(self) -> dict[str, str]:
        """Each alternative ID → its primary ID (as :meth:`KB.alternate_ids`)."""
        ids = self.ids.to_list()
        return {self.alt_rows.keys[r]: ids[int(self.alt_rows.values[self.alt_rows.starts[r]])]
                for r in range(len(self.alt_rows))}

    def taxa(self) -> TaxonView:
        """Concept ID → NCBI taxon of every species-specific concept (as :meth:`KB.taxa`),
        read from the arrays when asked (:class:`TaxonView`)."""
        return TaxonView(self)

    @property
    def concepts(self) -> ConceptsView:
        """Primary ID → concept (a :class:`ConceptRow`), as :attr:`KB.concepts` (one view,
        kept: callers index it once per name)."""
        if "view" not in self._columns:
            self._columns["view"] = ConceptsView(self)
        return self._columns["view"]

    filter = KB.filter
    merge = KB.merge
    save = KB.save
    __repr__ = KB.__repr__

    # ---- rows ------------------------------------------------------------------------------
    def primary_row(self, concept_id: str) -> int | None:
        """The row of the concept ``concept_id`` resolves to (None when unknown)."""
        return self.row_of(self.resolve(concept_id))

    def row_of(self, primary_id: str) -> int | None:
        """The row of the concept whose primary ID is ``primary_id`` (None: no such concept,
        alternative IDs included), remembered once looked up.

        Why not a dict of every ID: making it was a third of a second of every load of the
        default KB; the views look up only the few IDs a document's candidates have."""
        if primary_id not in self._rows:
            found = self.id_rows.row(primary_id)
            self._rows[primary_id] = (None if found is None else
                                      int(self.id_rows.values[self.id_rows.starts[found]]))
        return self._rows[primary_id]

    def column(self, name: str) -> list:
        """An integer array as a Python list, decoded once (iteration reads them per row)."""
        if name not in self._columns:
            self._columns[name] = np.asarray(self.arrays[name]).tolist()
        return self._columns[name]

    def concept(self, row: int) -> Concept:
        """The concept of ``row``, equal to the built KB's (its strings decoded one by one)."""
        values = {}
        for name, kind in self.meta["columns"].items():
            if kind == "str":
                values[name] = self.tables[name][row]
            elif kind == "list":
                starts = self.arrays[f"concepts.{name}.starts"]
                values[name] = [self.tables[name][i]
                                for i in range(int(starts[row]), int(starts[row + 1]))]
            else:
                values[name] = bool(self.arrays[f"concepts.{name}"][row])
        return Concept(**values)

    def decoded_concept(self, row: int) -> Concept:
        """:meth:`concept` from the columns decoded whole (what walking every concept needs:
        seconds faster over 340k concepts than decoding strings one by one)."""
        values = {}
        for name, kind in self.meta["columns"].items():
            if kind == "str":
                values[name] = self.tables[name].to_list()[row]
            elif kind == "list":
                starts = self.column(f"concepts.{name}.starts")
                values[name] = self.tables[name].to_list()[starts[row]:starts[row + 1]]
            else:
                values[name] = self.column(f"concepts.{name}")[row]
        return Concept(**values)

    def _per_name(self, values: Sequence[str] | np.ndarray) -> list[str]:
        """``values`` (one per concept row) spread over the names: each name gets its concept
        row's value, in :meth:`names` order (gathered by numpy: a list comprehension over the
        names took a tenth of a second per column)."""
        return np.asarray(values, dtype=object)[self.arrays["names.concept"]].tolist()

    def row_type(self, row: int) -> str:
        """The type string of ``row`` (:class:`ConceptRow` reads it), without decoding the type
        column."""
        return self.meta["types"][int(self.arrays["concepts.type_index"][row])]

    def row_types(self) -> np.ndarray:
        """Each row's type string, as an object array of the few distinct strings (gathered by
        the stored type index: the type column is never decoded for it)."""
        return np.asarray(self.meta["types"], dtype=object)[self.arrays["concepts.type_index"]]

    def row_concept(self, row: int) -> Concept:
        """:meth:`concept` of ``row``, kept for the next ask (:class:`ConceptRow`'s fields).

        Why not :meth:`decoded_concept`: its first call decodes every column whole (a quarter
        of a second, then every concept's strings held), and linking asks the concepts of a
        document's candidates only."""
        if row not in self._concepts:
            self._concepts[row] = self.concept(row)
        return self._concepts[row]

    # ---- the sieves' dictionaries ----------------------------------------------------------
    @property
    def has_sieves(self) -> bool:
        """Whether it was compiled with the sieves' dictionaries (``kb_arrays(sieves=True)``)."""
        return bool(self.meta.get("sieves"))

    def name_dictionary(self) -> NameDictionary:
        """:meth:`NameDictionary.from_kb` of the built KB, read from the arrays."""
        self._require_sieves()
        return NameDictionary.from_arrays(self.arrays, NAME_DICTIONARY)

    def ontology_keys(self) -> CompactKeyIndex:
        """``ontology_key_index(kb, salt_free=True)`` of the built KB, read from the arrays."""
        self._require_sieves()
        return CompactKeyIndex.from_arrays(self.arrays, ONTOLOGY_KEYS)

    def _require_sieves(self) -> None:
        if not self.has_sieves:
            raise ValueError("this KB was compiled without the sieves' dictionaries "
                             "(open_kb(..., sieves=True) compiles them)")


class ConceptRow:
    """One concept of a compiled KB as :attr:`CompiledKB.concepts` gives it: its ``type`` at
    hand, every other field of :class:`Concept` from the concept made on access.

    Why not the :class:`Concept` itself: code written for a :class:`KB` asks the types of
    every concept through ``kb.concepts`` (``NameDictionary.from_kb``: 340k of them); making
    340k concepts for that costs seconds. (The entity index reads its per-name types from
    :meth:`CompiledKB.name_columns` instead.)"""

    __slots__ = ("kb", "row", "type")

    def __init__(self, kb: CompiledKB, row: int, type_: str):
        self.kb = kb
        self.row = row
        self.type = type_

    def __getattr__(self, name: str):
        return getattr(self.kb.row_concept(self.row), name)


class ConceptsView(Mapping):
    """:attr:`CompiledKB.concepts`: primary ID → :class:`ConceptRow`, each ID looked up in
    the arrays when asked (:meth:`CompiledKB.row_of`)."""

    def __init__(self, kb: CompiledKB):
        self.kb = kb

    def __getitem__(self, concept_id: str) -> ConceptRow:
        row = self.kb.row_of(concept_id) if isinstance(concept_id, str) else None
        if row is None:
            raise KeyError(concept_id)
        return ConceptRow(self.kb, row, self.kb.row_type(row))

    def __contains__(self, concept_id: object) -> bool:
        return isinstance(concept_id, str) and self.kb.row_of(concept_id) is not None

    def items(self) -> ConceptItems:
        return ConceptItems(self)

    def __iter__(self) -> Iterator[str]:
        return iter(self.kb.ids.to_list())

    def __len__(self) -> int:
        return len(self.kb)


class ConceptItems(ItemsView):
    """:meth:`ConceptsView.items`: every ``(ID, ConceptRow)`` in row order, read off the columns.

    Why: code written for a :class:`KB` walks ``kb.concepts.items()`` for every concept's type
    (``NameDictionary.from_kb``); a lookup per ID, as ``Mapping.items`` makes, is several
    times slower over the whole KB."""

    def __init__(self, view: ConceptsView):
        super().__init__(view)
        self.kb = view.kb

    def __iter__(self) -> Iterator[tuple[str, ConceptRow]]:
        kb = self.kb
        for row, (cid, type_) in enumerate(zip(kb.ids.to_list(), kb.row_types().tolist(),
                                               strict=True)):
            yield cid, ConceptRow(kb, row, type_)


class TaxonView(Mapping):
    """:meth:`CompiledKB.taxa`: concept ID → NCBI taxon, for the concepts that have one (a
    primary ID of a concept without a taxon is not a key, as in :meth:`KB.taxa`).

    Why a view: the dict of every gene's taxon took a tenth of a second of every load of the
    default KB, and linking asks the taxa of a document's candidates only."""

    def __init__(self, kb: CompiledKB):
        self.kb = kb
        self.taxon = kb.tables["taxon"]
        #: the rows with a taxon (an empty string's offsets are one separator apart)
        self.rows = np.flatnonzero(np.diff(self.taxon.offsets) > 1)
        #: concept ID → its taxon ("": none), for the IDs looked up so far (a document's
        #: candidates are asked again at every step of the species order)
        self._found: dict[str, str] = {}

    def _taxon(self, concept_id: str) -> str:
        """The concept's taxon, "" when it has none or is not in the KB."""
        taxon = self._found.get(concept_id)
        if taxon is None:
            row = self.kb.row_of(concept_id) if isinstance(concept_id, str) else None
            taxon = self._found[concept_id] = self.taxon[row] if row is not None else ""
        return taxon

    def __getitem__(self, concept_id: str) -> str:
        taxon = self._taxon(concept_id)
        if not taxon:
            raise KeyError(concept_id)
        return taxon

    def __contains__(self, concept_id: object) -> bool:
        # not Mapping's (a KeyError raised and caught per ID): linking asks it of every
        # candidate of every span
        return bool(self._taxon(concept_id))  # type: ignore[arg-type]

    def get(self, concept_id: str, default=None):
        return self._taxon(concept_id) or default

    def __iter__(self) -> Iterator[str]:
        ids = self.kb.ids.to_list()
        return (ids[row] for row in self.rows.tolist())

    def __len__(self) -> int:
        return len(self.rows)
