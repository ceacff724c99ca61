"""The KB's answers that ``linker annotate`` asks for again and again, remembered.

Why: the steps of one annotate call ask the same questions many times — a span's text is
looked up as a name by the lexical gate, the gene-named-chemicals step, the exact-name sieve
and the gene ranking; the concept an annotation is linked to is fetched by three rule steps
and by its record — and the next documents ask most of them again. A compiled KB answers each
from its arrays, hashing the key and decoding strings every time: together that was about half
of annotate's host time on BC5CDR test (eval/results/bench/host_time.md). The KB does not
change while a linker holds it, so an answer can be kept; the least recently used go first,
which bounds the memory.
"""

from __future__ import annotations

import functools

#: how many concepts a :class:`RememberedKB` keeps (a concept holds all its names: fewer)
CONCEPTS = 1 << 13
#: how many lookups a :class:`RememberedNames` keeps
LOOKUPS = 1 << 15


class RememberedKB:
    """A KB's ``get`` (concept ID → concept, None when it lacks the ID), remembered: what the
    annotate-stage rule steps (:attr:`Batch.kb <e2e_linker.pipeline.batch.Batch.kb>`) and the
    annotations' records read. The concepts are shared, not copied, as a
    :class:`~data_tools.kb.KB`'s own are: nothing that reads them changes them."""

    def __init__(self, kb, size: int = CONCEPTS):
        self.kb = kb
        self.get = functools.lru_cache(maxsize=size)(kb.get)


class RememberedNames:
    """An exact-name dictionary's ``lookup`` (a :class:`~e2e_linker.lexical.sieves.NameDictionary`:
    text → the concepts it names), remembered; each call gets a list of its own."""

    def __init__(self, names, size: int = LOOKUPS):
        self.names = names
        self._found = functools.lru_cache(maxsize=size)(self._look_up)

    def _look_up(self, text: str, type_: str | None, only_type: bool) -> tuple[str, ...]:
        return tuple(self.names.lookup(text, type_, only_type))

    def lookup(self, text: str, type_: str | None = None, only_type: bool = False) -> list[str]:
        """The concepts named exactly ``text`` (:meth:`NameDictionary.lookup
        <e2e_linker.lexical.sieves.NameDictionary.lookup>`)."""
        return list(self._found(text, type_, only_type))
