"""Labelled text vectors and the exact index over them that the normalizer's searches run on.

A row is a unique (normalised) text with one or more labels (concept IDs, or ``|``-joined IDs
for a composite training mention); a search returns the top distinct labels per query.

Two policies are explicit here because ``linker annotate``'s entity index
(:mod:`e2e_linker.kb_search.entity_index`) chooses the other way on both:

* **ties** — equal scores go to the *lowest* row, then to the label order of that row, so
  results do not depend on thread timing (the entity index sends ties to the highest row, as
  the faiss flat index the collective model was tuned with does);
* **types** — a typed query only *sees* labels of its type (or untyped labels) when the index
  knows that type at all (the entity index ranks other types *last* instead of hiding them).

Both are parameters of the one exact top-k (:func:`~e2e_linker.kb_search.top_k.exact_top_k`)
and the one shortlist re-rank (:func:`~e2e_linker.kb_search.shortlist_rerank.rerank_shortlist`):
this module passes :data:`TIES` and a row mask per query type. Search is exact inner product on
L2-normalised fp16 vectors, in blocks with numpy
(:class:`~e2e_linker.kb_search.top_k.NumpyProducts`: a 675k-name chemical KB is ~0.5 GB in fp16
and is memory-mapped, never copied to fp32 whole).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from e2e_linker.kb_search.shortlist_rerank import rerank_shortlist
from e2e_linker.kb_search.top_k import NumpyProducts, check_ties, exact_top_k
from e2e_linker.kb_search.unit_vectors import unit_rows

#: One ranked answer list: ``(label, cosine)`` best first; a label is a concept ID, or several
#: ``|``-joined IDs for a composite training mention.
Ranked = list[tuple[str, float]]

#: The normalizer's tie rule: equal scores go to the lowest row (then the row's label order).
TIES = "lower"


@dataclass
class LabeledTexts:
    """Unique (already normalised) texts, each with its ranked labels; types per label.

    A text shared by several concepts ("cold") is one row with several labels: it is encoded
    once and, when it is the best match, its labels come out majority first, then sorted.
    """

    texts: list[str] = field(default_factory=list)
    labels: list[tuple[str, ...]] = field(default_factory=list)
    label_types: dict[str, frozenset[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str, str]]) -> LabeledTexts:
        """From ``(text, label, type)`` triples; ``type`` may be ``|``-joined or empty.

        A text's labels are ordered by how often the pair occurs, then by label: a training
        mention annotated inconsistently ("breast and ovarian cancer") answers with its
        majority label first.
        """
        rows: dict[str, dict[str, int]] = {}
        types: dict[str, set[str]] = {}
        for text, label, type_ in pairs:
            if not text or not label:
                continue
            counts = rows.setdefault(text, {})
            counts[label] = counts.get(label, 0) + 1
            types.setdefault(label, set()).update(t for t in type_.split("|") if t)
        return cls(list(rows),
                   [tuple(sorted(c, key=lambda label, c=c: (-c[label], label)))
                    for c in rows.values()],
                   {k: frozenset(v) for k, v in types.items()})

    @property
    def all_types(self) -> frozenset[str]:
        return frozenset(t for ts in self.label_types.values() for t in ts)


def type_allowed(label_types: dict[str, frozenset[str]], label: str, type_: str | None) -> bool:
    """Whether a query of ``type_`` may see ``label``: untyped queries see everything, typed
    ones see labels of that type and untyped labels."""
    if not type_:
        return True
    types = label_types.get(label)
    return not types or type_ in types


def merged_label_types(pools: Iterable[LabeledTexts]) -> dict[str, frozenset[str]]:
    """Each label's types, united over ``pools``."""
    types: dict[str, frozenset[str]] = {}
    for pool in pools:
        for label, ts in pool.label_types.items():
            types[label] = types.get(label, frozenset()) | ts
    return types


class ExactIndex:
    """Rows of unit vectors, each with one or more labels; exact top-k distinct labels.

    ``search`` takes optional per-query types: a typed query only sees labels of that type (or
    untyped labels) when the index knows that type at all; otherwise it sees everything, so an
    NCBI ``SpecificDisease`` mention still searches a KB typed ``Disease``.
    """

    def __init__(self, vectors: np.ndarray, row_labels: Sequence[tuple[str, ...]],
                 label_types: dict[str, frozenset[str]] | None = None,
                 block_rows: int = 16384, query_block: int = 1024, ties: str = TIES):
        if len(vectors) != len(row_labels):
            raise ValueError("vectors and row_labels must have the same length")
        check_ties(ties)
        self.ties = ties
        self.vectors = vectors
        self.row_labels = list(row_labels)
        self.label_types = label_types or {}
        self.known_types = frozenset(t for ts in self.label_types.values() for t in ts)
        self.block_rows = block_rows
        self.query_block = query_block
        self._masks: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.row_labels)

    def _allowed(self, label: str, type_: str | None) -> bool:
        return type_allowed(self.label_types, label, type_)

    def _mask(self, type_: str) -> np.ndarray:
        if type_ not in self._masks:
            self._masks[type_] = np.array(
                [any(self._allowed(label, type_) for label in labels) for labels in self.row_labels],
                dtype=bool)
        return self._masks[type_]

    def top_rows(self, queries: np.ndarray, k_rows: int, mask: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (m, ≤k_rows), best first, ties by :attr:`ties`; rows that
        ``mask`` hides score −inf."""
        return exact_top_k(queries, k_rows, self.ties,
                           NumpyProducts(self.vectors, self.block_rows, self.query_block), mask)

    def search(self, queries: np.ndarray, k: int = 10,
               query_types: Sequence[str | None] | None = None) -> list[Ranked]:
        """Top-``k`` distinct labels per query (``queries``: unit float32 rows)."""
        m = len(queries)
        out: list[Ranked] = [[] for _ in range(m)]
        if m == 0 or len(self) == 0:
            return out
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        groups: dict[str | None, list[int]] = {}
        for q in range(m):
            t = query_types[q] if query_types is not None else None
            groups.setdefault(t if t in self.known_types else None, []).append(q)
        k_rows = min(len(self), max(4 * k, k + 16))
        for type_, members in groups.items():
            mask = self._mask(type_) if type_ else None
            for start in range(0, len(members), self.query_block):
                chunk = members[start:start + self.query_block]
                scores, rows = self.top_rows(queries[chunk], k_rows, mask)
                for q, srow, irow in zip(chunk, scores, rows, strict=True):
                    ranked: Ranked = []
                    seen: set[str] = set()
                    for s, i in zip(srow, irow, strict=True):
                        if not np.isfinite(s):
                            break
                        for label in self.row_labels[i]:
                            if label not in seen and self._allowed(label, type_):
                                seen.add(label)
                                ranked.append((label, float(s)))
                        if len(ranked) >= k:
                            break
                    out[q] = ranked[:k]
        return out


class ShortlistIndex(ExactIndex):
    """:class:`ExactIndex` over rows encoded on demand, searched through a packed shortlist.

    Why: the normalizer's first run on a new machine would otherwise encode every KB text. A
    packed IVF-PQ index (:mod:`e2e_linker.kb_search.packed_index`) proposes ``shortlist`` rows
    per query; only those are encoded (once, cached:
    :class:`e2e_linker.kb_search.partial_matrix.PartialKBMatrix` with unit rows) and scored
    exactly, with the same tie and type rules, so only the shortlist's recall is approximate.
    A typed query keeps the shortlisted rows its type may see.
    """

    def __init__(self, rows, row_labels: Sequence[tuple[str, ...]], index,
                 label_types: dict[str, frozenset[str]] | None = None, shortlist: int = 256,
                 nprobe: int = 64, ties: str = TIES):
        super().__init__(rows, row_labels, label_types, query_block=256, ties=ties)
        self.index = index
        self.index.nprobe = nprobe
        self.shortlist = shortlist

    def top_rows(self, queries: np.ndarray, k_rows: int, mask: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (m, k_rows), best first, ties by :attr:`ties`; −inf and −1
        past the shortlisted rows ``mask`` lets the query see."""
        return rerank_shortlist(queries, self.index, self.vectors.rows, k_rows, self.ties,
                                self.shortlist, self.query_block, ensure=self.vectors.ensure,
                                mask=mask)


def centroids(parts: Sequence[tuple[np.ndarray, Sequence[tuple[str, ...]]]],
              block_rows: int = 65536) -> tuple[np.ndarray, list[str]]:
    """Unit mean vector per label (labels sorted) over ``(unit vectors, row labels)`` parts; fp16.

    A text with several labels counts toward each of them. Parts are summed block by block, so
    a memory-mapped KB is never copied whole.
    """
    labels = sorted({label for _, row_labels in parts for row in row_labels for label in row})
    position = {label: i for i, label in enumerate(labels)}
    dim = next((v.shape[1] for v, _ in parts if len(v)), 0)
    sums = np.zeros((len(labels), dim), np.float32)
    for vectors, row_labels in parts:
        for start in range(0, len(vectors), block_rows):
            block = np.asarray(vectors[start:start + block_rows], dtype=np.float32)
            rows, targets = [], []
            for offset, row in enumerate(row_labels[start:start + len(block)]):
                for label in row:
                    rows.append(offset)
                    targets.append(position[label])
            if not rows:
                continue
            targets_arr = np.array(targets, dtype=np.int64)
            order = np.argsort(targets_arr, kind="stable")
            targets_arr = targets_arr[order]
            starts = np.flatnonzero(np.r_[True, targets_arr[1:] != targets_arr[:-1]])
            gathered = block[np.array(rows, dtype=np.int64)[order]]
            sums[targets_arr[starts]] += np.add.reduceat(gathered, starts, axis=0)
    return unit_rows(sums).astype(np.float16), labels
