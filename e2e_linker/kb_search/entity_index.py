"""The entity index of ``linker annotate``: every KB name's vector, its concept and type, and a
search backend over them.

Vectors come from the shared vector store (:class:`e2e_linker.kb_search.cache.VectorStore`,
raw rows: a KB's full matrix, or its partial rows behind a shipped packed index — also when
the KB grew a little beyond the names the index was packed for, the added names then searched
exactly beside it: :data:`~e2e_linker.kb_search.packed_index.MAX_CHANGE`, or is a part of
them, the rest masked in the search and its rows taken from the other KBs the index serves:
:mod:`e2e_linker.kb_search.shared_rows`).
Search is exact for KBs up to :data:`e2e_linker.kb_search.backends.EXACT_MAX_NAMES` names and
approximate (HNSW or IVF-PQ, exactly re-ranked) beyond that or when ``memory_budget_mb`` asks
for it: see :mod:`e2e_linker.kb_search.backends`.

Two policies, explicit because the normalizer's label index
(:mod:`e2e_linker.kb_search.label_index`) chooses the other way on both:

* **ties** — equal scores go to the *highest* row (:data:`TIES`, passed to every search backend
  and from there to the one exact top-k or shortlist re-rank), as faiss's flat index, which the
  shipped collective model was tuned with, returns them;
* **types** — :data:`TYPE_POLICIES`: ``"rank_last"`` (default) puts concepts of another type
  after every concept of the query's type; ``"filter"`` drops them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import compress
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.kb_search.backends import (
    FaissShortlistSearch,
    SearchParams,
    VectorSearch,
    choose_kind,
    make_search,
)
from e2e_linker.kb_search.cache import VectorStore, default_cache_dir
from e2e_linker.kb_search.packed_index import MAX_CHANGE, names_digest

#: How :meth:`EntityIndex.link` treats concepts whose type differs from the query's.
TYPE_POLICIES = ("rank_last", "filter")
#: annotate's tie rule: equal scores go to the higher row
TIES = "higher"


def kb_names(kb, max_names_per_concept: int | None = None) -> list[tuple[str, str]]:
    """``(name, concept_id)`` pairs of a KB, optionally capped per concept (in KB order)."""
    pairs = kb.names()
    if not max_names_per_concept:
        return pairs
    keep = capped_rows([cid for _, cid in pairs], max_names_per_concept)
    return [pairs[row] for row in keep]


def kb_name_columns(kb, max_names_per_concept: int | None = None
                    ) -> tuple[list[str], list[str], list[str]]:
    """Names, their concept IDs and their concepts' types (``""`` for none) of a KB: the
    pairs of :func:`kb_names` with each name's type beside them, as three lists.

    Why not :func:`kb_names` plus a lookup per name: the KB gives the three at once
    (:meth:`~data_tools.kb.KB.name_columns`), which the compiled KB gathers from its arrays;
    looking up the type of each of 744k names was about a second of every load."""
    names, cids, types = kb.name_columns()
    if not max_names_per_concept:
        return names, cids, types
    keep = capped_rows(cids, max_names_per_concept)
    return [names[r] for r in keep], [cids[r] for r in keep], [types[r] for r in keep]


def without_types(columns: tuple[list[str], list[str], list[str]], exclude_types: Sequence[str]
                  ) -> tuple[list[str], list[str], list[str]]:
    """The name columns of :func:`kb_name_columns` less the rows whose concept's every type
    (``"Chemical|Disease"`` is two) is in ``exclude_types``: the names a model links by name
    only (:attr:`~e2e_linker.collective.model.LinkerConfig.lexical_types`), never encoded."""
    if not exclude_types:
        return columns
    excluded = set(exclude_types)
    names, cids, types = columns
    # decided once per distinct type string, not per name (a gene KB has millions of names)
    dropped = {t: bool(t) and set(t.split("|")) <= excluded for t in set(types)}
    keep = [not dropped[t] for t in types]
    if all(keep):
        return columns
    return (list(compress(names, keep)), list(compress(cids, keep)),
            list(compress(types, keep)))


def index_name_columns(kb, exclude_types: Sequence[str] = (),
                       max_names_per_concept: int | None = None
                       ) -> tuple[list[str], list[str], list[str]]:
    """The name columns an entity index over ``kb`` holds: :func:`kb_name_columns` less the
    names of ``exclude_types`` (:func:`without_types`), in one place for the index, ``linker kb
    pack`` and the evaluations that count what they encode."""
    return without_types(kb_name_columns(kb, max_names_per_concept), exclude_types)


def capped_rows(concept_ids: Sequence[str], max_names_per_concept: int) -> list[int]:
    """Rows of ``concept_ids`` (one per name, in KB order) that keep each concept's first
    ``max_names_per_concept`` names: the cap of :func:`kb_names`, in one place for the pairs
    and the columns."""
    seen: dict[str, int] = {}
    kept = []
    for row, cid in enumerate(concept_ids):
        if seen.get(cid, 0) < max_names_per_concept:
            seen[cid] = seen.get(cid, 0) + 1
            kept.append(row)
    return kept


class EntityIndex:
    """Names, their concept IDs and types, their vectors, and a search backend over them."""

    def __init__(self, names: Sequence[str], concept_ids: Sequence[str], types: Sequence[str],
                 vectors: np.ndarray, kind: str = "auto", memory_budget_mb: float | None = None,
                 params: SearchParams | None = None,
                 cache_stem: str | os.PathLike | None = None,
                 searcher: VectorSearch | None = None):
        if not (len(names) == len(concept_ids) == len(types) == len(vectors)):
            raise ValueError("names, concept_ids, types and vectors must have the same length")
        self.names = list(names)
        self.concept_ids = list(concept_ids)
        self.types = list(types)
        self.vectors = vectors
        self.dim = int(vectors.shape[1]) if len(vectors) else 0
        self.cache_stem = Path(cache_stem) if cache_stem else None
        self.searcher = searcher or make_search(kind, vectors, memory_budget_mb, params,
                                                self._index_file(kind, memory_budget_mb, params),
                                                ties=TIES)

    def _index_file(self, kind: str, memory_budget_mb: float | None,
                    params: SearchParams | None) -> Path | None:
        """Where an approximate index over these vectors is cached (None: not cached)."""
        if self.cache_stem is None:
            return None
        p = params or SearchParams()
        if kind == "auto":
            kind = choose_kind(len(self), self.dim, memory_budget_mb, params)
        tag = (f"ivfpq-{p.ivf_nlist or 'auto'}-{p.pq_bytes}" if kind == "ivfpq"
               else f"hnsw-m{p.hnsw_m}-ef{p.hnsw_ef_construction}")
        return self.cache_stem.with_name(f"{self.cache_stem.name}.{tag}.faiss")

    def use_search(self, kind: str, memory_budget_mb: float | None = None,
                   params: SearchParams | None = None) -> None:
        """Switch the search backend over the same vectors (benchmarks compare kinds)."""
        self.searcher = make_search(kind, self.vectors, memory_budget_mb, params,
                                    self._index_file(kind, memory_budget_mb, params), ties=TIES)

    def __len__(self) -> int:
        return len(self.names)

    def describe(self) -> str:
        """The search backend in words (for benchmark records)."""
        return self.searcher.describe()

    @property
    def encodes_on_demand(self) -> bool:
        """Whether a search may still encode KB names with the entity encoder (the packed
        index's re-rank rows, :class:`~e2e_linker.kb_search.partial_matrix.PartialKBMatrix`):
        such a search needs the encoder's device, which a process forked after the model was
        put on a GPU cannot use (:mod:`e2e_linker.jobs.host_pool`)."""
        return hasattr(self.vectors, "ensure")

    @classmethod
    def build(cls, kb, encoder: TextEncoder, cache_dir: str | os.PathLike | None | bool = None,
              batch_size: int = 256, progress: bool = True,
              max_names_per_concept: int | None = None, kind: str = "auto",
              memory_budget_mb: float | None = None,
              params: SearchParams | None = None,
              describe: dict | None = None,
              packed: str | os.PathLike | None = None,
              exclude_types: Sequence[str] = (),
              alternative: str | None = None) -> EntityIndex:
        """Encode every name of ``kb`` (reusing cached vectors) and index them.

        ``packed`` is a packed shortlist index shipped with the model
        (:mod:`e2e_linker.kb_search.packed_index`). It is used, and only the shortlisted names
        are encoded (on demand, cached), with ``kind="packed"``, or with ``kind="auto"`` as long
        as the full matrix of this KB is not cached yet — the first runs on a new machine. It
        must have been built for this encoder, and for this name list or one that differs from
        it by at most :data:`~e2e_linker.kb_search.packed_index.MAX_CHANGE` of added and of
        dropped names (a user's own concepts added to the model's KB): then only the added
        names are encoded in full, searched exactly and merged into the packed shortlist's
        re-rank, and the dropped ones are never returned. A KB that is a part of the packed
        one (it adds at most that share but drops more: ``--kb medic`` under the default
        model) is served by it too, the names it lacks masked inside the search and the rows
        its re-rank needs taken from the other KBs the index serves before any is encoded
        (:mod:`e2e_linker.kb_search.shared_rows`).

        ``cache_dir=False`` disables the disk cache (training refreshes: weights change).
        ``max_names_per_concept`` keeps each concept's first names only (a cheaper index for
        training-time hard negatives). ``kind`` and ``memory_budget_mb`` pick the search
        backend (:func:`e2e_linker.kb_search.backends.choose_kind`); an approximate index is built
        once and cached beside the vectors. ``describe`` (the KB spec, the model) is recorded
        beside the cached matrix for ``linker kb info``. ``exclude_types``: concepts of these
        types are left out of the index (:func:`index_name_columns`; linked by name only).
        ``alternative``: a cheaper way to what the user asked, named in the line that
        announces an encode of a minute or more (:mod:`e2e_linker.kb_search.encode_estimate`).
        """
        names, cids, types = index_name_columns(kb, exclude_types, max_names_per_concept)
        if cache_dir is False:
            vectors = encoder.encode(names, batch_size=batch_size, dtype=np.float16,
                                     progress="encoding KB names" if progress else False)
            return cls(names, cids, types, vectors, kind, memory_budget_mb, params)
        store = VectorStore(Path(cache_dir or default_cache_dir()), encoder,
                            batch_size=batch_size, progress=progress, alternative=alternative)
        digest = names_digest(names)  # the list's key, hashed once for every use below
        searcher = cls._packed_search(store, names, packed, kind, params, digest)
        if searcher is not None:
            return cls(names, cids, types, searcher.vectors, "ivfpq", memory_budget_mb, params,
                       searcher=searcher)
        if kind == "packed":
            kind = "auto"
        vectors = store.matrix(names, describe=describe, digest=digest)
        return cls(names, cids, types, vectors, kind, memory_budget_mb, params,
                   cache_stem=store.list_path(names, digest=digest).with_suffix(""))

    @staticmethod
    def _packed_search(store: VectorStore, names: list[str],
                       packed: str | os.PathLike | None, kind: str,
                       params: SearchParams | None, digest: str) -> FaissShortlistSearch | None:
        """The packed index's search when it applies (see :meth:`build`), else None."""
        if kind not in ("auto", "packed"):
            return None
        opened = store.packed_rows(packed, names, required=kind == "packed",
                                   max_change=MAX_CHANGE, digest=digest)
        if opened is None:
            return None
        held = opened.coverage
        return FaissShortlistSearch("ivfpq", opened.rows, params, index=opened.index, ties=TIES,
                                    kb_rows=held.kb_rows if held is not None else None,
                                    added=held.added if held is not None else None,
                                    masked=opened.masked)

    def search(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` names by inner product: (scores, name indices), each (n, k)."""
        if len(queries) == 0:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        return self.searcher.search(queries, min(k, len(self)))

    def link(self, queries: np.ndarray, types: Sequence[str | None] | None = None,
             k: int = 64, type_policy: str = "rank_last") -> list[list[tuple[str, float]]]:
        """Ranked distinct concepts per query, ``(concept_id, score)``, best first.

        When a query has a type, concepts of that type come first; with ``type_policy``
        ``"rank_last"`` a name of another type is used only if no name of the right type is
        among the top ``k``, with ``"filter"`` never.
        """
        if type_policy not in TYPE_POLICIES:
            raise ValueError(f"type_policy must be one of {TYPE_POLICIES}, not {type_policy!r}")
        scores, idx = self.search(queries, k)
        concept_ids, name_types = self.concept_ids, self.types
        out: list[list[tuple[str, float]]] = []
        # Python numbers (``tolist``: the same values as ``float`` of each) rather than a
        # NumPy scalar per result: this loop runs for every span of every document
        for row, (row_scores, row_idx) in enumerate(zip(scores.tolist(), idx.tolist(),
                                                        strict=True)):
            wanted = types[row] if types is not None else None
            ranked: list[tuple[str, float]] = []
            others: list[tuple[str, float]] = []
            seen: set[str] = set()
            for s, i in zip(row_scores, row_idx, strict=True):
                if i < 0:
                    continue
                cid = concept_ids[i]
                if cid in seen:
                    continue
                seen.add(cid)
                type_ = name_types[i]
                target = ranked if (not wanted or type_ == wanted
                                    or wanted in type_.split("|")) else others
                target.append((cid, s))
            out.append(ranked + others if type_policy == "rank_last" else ranked)
        return out
