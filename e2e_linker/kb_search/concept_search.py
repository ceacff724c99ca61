"""Exact vector search over concept texts or concept centroids, and the sieves that combine them.

Xu & Bethard (2021) search a mention's vector against one of three pools — the ontology's names
(O), the training data's mentions (D), or both (OD) — either over the individual texts (-T: the
best text's concept wins) or over per-concept centroids (-C: the mean of a concept's text
vectors). A *sieve* ``A+B`` trusts search A when its best cosine is at least 0.95 (a near-exact
match, mostly a mention seen in training) and falls back to B otherwise. That gives 14 modes::

    O-T O-C D-T D-C OD-T OD-C
    D-T+O-T D-T+O-C D-C+O-T D-C+O-C D-T+OD-T D-T+OD-C D-C+OD-T D-C+OD-C

The searches themselves run on :mod:`e2e_linker.kb_search.label_index` (exact, ties to the
lowest row, other types filtered out); the vectors come from the shared store in unit mode
(:class:`e2e_linker.kb_search.cache.VectorStore`, unit rows).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.kb_search.cache import VectorStore
from e2e_linker.kb_search.label_index import (
    ExactIndex,
    LabeledTexts,
    Ranked,
    ShortlistIndex,
    centroids,
    merged_label_types,
)

#: Cosine at or above which a sieve keeps its first search's answer.
SIEVE_THRESHOLD = 0.95

BASE_MODES = ("O-T", "O-C", "D-T", "D-C", "OD-T", "OD-C")
SIEVE_MODES = ("D-T+O-T", "D-T+O-C", "D-C+O-T", "D-C+O-C",
               "D-T+OD-T", "D-T+OD-C", "D-C+OD-T", "D-C+OD-C")
MODES = BASE_MODES + SIEVE_MODES


def parse_mode(mode: str) -> list[tuple[str, str]]:
    """``"D-T+OD-C"`` → ``[("D", "T"), ("OD", "C")]``; unknown modes raise ``ValueError``."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
    return [tuple(step.split("-")) for step in mode.split("+")]  # type: ignore[misc]


def mode_requires(mode: str) -> set[tuple[str, str]]:
    """The base searches a mode needs (``OD-T`` is computed from ``O-T`` and ``D-T``)."""
    need: set[tuple[str, str]] = set()
    for source, kind in parse_mode(mode):
        if (source, kind) == ("OD", "T"):
            need |= {("O", "T"), ("D", "T")}
        else:
            need.add((source, kind))
    return need


def merge_ranked(first: Ranked, second: Ranked, k: int) -> Ranked:
    """Union of two ranked lists (best score per label), best first.

    Stable: on equal scores (to 1e-5) ``first``'s labels come before ``second``'s, and each
    list keeps its own order (a training text's majority label stays ahead of its minority ones).
    """
    best: dict[str, float] = {}
    for label, score in (*first, *second):
        if label not in best or score > best[label]:
            best[label] = score
    # scores from different matrix shapes differ in the last bits: compare at 1e-5
    return sorted(best.items(), key=lambda item: -round(item[1], 5))[:k]


def sieve(first: Ranked, second: Ranked, threshold: float = SIEVE_THRESHOLD) -> Ranked:
    """``first`` if its best cosine reaches ``threshold``, else ``second``."""
    if first and first[0][1] >= threshold:
        return first
    return second


# ---- the searcher over O and D -------------------------------------------------------------

class ConceptSearcher:
    """Searches over ontology texts (O), training mentions (D) or both, by text or centroid.

    Each source is a list of pools of normalised texts: O is the KB's names plus, optionally,
    extra synonyms given at search time (kept as their own pool so that adding a few synonyms
    never re-encodes a large KB), D the training mentions. Pool vectors are computed (and
    cached) on first use. Base searches run once per query batch and every mode is assembled
    from them, so evaluating all 14 modes costs five searches, not fourteen.

    ``packed``: a packed shortlist index of the ontology texts under this encoder (shipped with
    the normalizer model). While the ontology's full matrix is not cached (or always, with
    ``packed_always``), text searches over O go through it and encode only shortlisted texts
    (:class:`ShortlistIndex`); centroid searches still need every vector. A packed index built
    for another encoder or text list is ignored (an error with ``packed_always``).
    """

    def __init__(self, encoder: TextEncoder, ontology: LabeledTexts,
                 training: LabeledTexts | None = None, cache: VectorStore | None = None,
                 sieve_threshold: float = SIEVE_THRESHOLD, progress: bool = True,
                 extra_synonyms: LabeledTexts | None = None,
                 packed: str | os.PathLike | None = None, packed_always: bool = False):
        self.encoder = encoder
        self.pools: dict[str, list[LabeledTexts]] = {
            "O": [p for p in (ontology, extra_synonyms) if p is not None and len(p)],
            "D": [training] if training is not None and len(training) else [],
        }
        self.cache = cache or VectorStore(None, encoder, unit=True, progress=progress)
        self.sieve_threshold = sieve_threshold
        self.packed = Path(packed) if packed is not None else None
        self.packed_always = packed_always
        self._vectors: dict[int, np.ndarray] = {}
        self._text_indices: dict[int, ExactIndex] = {}
        self._centroid_indices: dict[str, ExactIndex] = {}

    def pool_vectors(self, pool: LabeledTexts) -> np.ndarray:
        key = id(pool)
        if key not in self._vectors:
            label = "encoding training mentions" if any(pool is p for p in self.pools["D"]) \
                else "encoding ontology names"
            self._vectors[key] = self.cache.matrix(pool.texts, label=label)
        return self._vectors[key]

    def _text_index(self, source: str, pool: LabeledTexts) -> ExactIndex:
        key = id(pool)
        if key not in self._text_indices:
            index = self._shortlist_index(pool) if self.pools["O"] and \
                pool is self.pools["O"][0] else None
            self._text_indices[key] = index or ExactIndex(self.pool_vectors(pool), pool.labels,
                                                          pool.label_types)
        return self._text_indices[key]

    def _shortlist_index(self, pool: LabeledTexts) -> ShortlistIndex | None:
        """The packed index's search over the ontology texts, when it applies (see above)."""
        if self.packed is None or id(pool) in self._vectors:
            return None
        opened = self.cache.packed_rows(self.packed, pool.texts, required=self.packed_always,
                                        owner="normalizer", items="texts",
                                        pack_command="linker kb pack --normalizer")
        if opened is None:
            return None
        return ShortlistIndex(opened.rows, pool.labels, opened.index, pool.label_types)

    def centroid_index(self, source: str) -> ExactIndex:
        """The centroid index of ``O``, ``D`` or ``OD`` (built on first use)."""
        if source not in self._centroid_indices:
            pools = [p for s in ("O", "D") if s in source for p in self.pools[s]]
            vecs, labels = centroids([(self.pool_vectors(p), p.labels) for p in pools])
            self._centroid_indices[source] = ExactIndex(vecs, [(label,) for label in labels],
                                                        merged_label_types(pools))
        return self._centroid_indices[source]

    def _search_texts(self, source: str, queries: np.ndarray, k: int,
                      query_types: Sequence[str | None] | None) -> list[Ranked]:
        results: list[Ranked] = [[] for _ in range(len(queries))]
        for pool in self.pools[source]:
            found = self._text_index(source, pool).search(queries, k, query_types)
            results = [merge_ranked(a, b, k) for a, b in zip(results, found, strict=True)]
        return results

    def base_search(self, queries: np.ndarray, needed: Iterable[tuple[str, str]], k: int,
                    query_types: Sequence[str | None] | None = None
                    ) -> dict[tuple[str, str], list[Ranked]]:
        """Run each needed base search once; ``OD-T`` is merged from ``O-T`` and ``D-T``."""
        needed = set(needed)
        if ("OD", "T") in needed:
            needed |= {("O", "T"), ("D", "T")}
        out: dict[tuple[str, str], list[Ranked]] = {}
        for source, kind in sorted(needed - {("OD", "T")}):
            if kind == "T":
                out[(source, kind)] = self._search_texts(source, queries, k, query_types)
            else:
                out[(source, kind)] = self.centroid_index(source).search(queries, k, query_types)
        if ("OD", "T") in needed:
            # D first: on a tie (the same text in both pools) the corpus's usage wins
            out[("OD", "T")] = [merge_ranked(d, o, k) for o, d in
                                zip(out[("O", "T")], out[("D", "T")], strict=True)]
        return out

    def combine(self, mode: str, base: dict[tuple[str, str], list[Ranked]]) -> list[Ranked]:
        """A mode's answers from base-search results (a sieve is applied per query)."""
        steps = parse_mode(mode)
        result = base[steps[-1]]
        for step in reversed(steps[:-1]):
            result = [sieve(a, b, self.sieve_threshold)
                      for a, b in zip(base[step], result, strict=True)]
        return result

    def search(self, queries: np.ndarray, mode: str, k: int = 10,
               query_types: Sequence[str | None] | None = None) -> list[Ranked]:
        """Ranked labels per query for one mode."""
        base = self.base_search(queries, mode_requires(mode) | set(parse_mode(mode)), k,
                                query_types)
        return self.combine(mode, base)
