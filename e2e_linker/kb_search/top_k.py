"""The one exact top-k over a matrix of row vectors: the tie rule and the type mask are
parameters, the arithmetic of the products is the caller's.

Two indexes search exactly and choose differently on purpose (docs/architecture.md, "Two
explicit policies: ties and types"): ``linker annotate``'s entity index sends equal scores to
the higher row, the normalizer's label index to the lower row and hides rows of another type.
Both run :func:`exact_top_k` with their rule (:data:`TIE_RULES`) and mask.

Why the products stay per caller (:class:`TorchProducts`, :class:`NumpyProducts`): each index
was tuned and scored with its own arithmetic. A product computed by another library, or over
blocks of another shape, differs in the last bits, and when two names nearly tie that flips the
answer; ``torch.topk`` and ``np.argpartition`` also keep different members of a tie that
straddles the k-th place of a block. Outputs must not change with a refactoring, so each
caller keeps its dtype, blocking and per-block selection, and shares everything else: the
loops over query and row blocks, the mask, the merge bookkeeping and the final tie order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import torch

#: How equal scores are ordered: by ``"higher"`` or ``"lower"`` row first (:func:`order_ties`).
TIE_RULES = ("higher", "lower")
#: :class:`TorchProducts` multiplies at least this many query rows at once (fewer are padded)
MIN_QUERY_ROWS = 16


def check_ties(ties: str) -> None:
    """Refuse a tie rule that is not one of :data:`TIE_RULES` (a typo must not pass silently)."""
    if ties not in TIE_RULES:
        raise ValueError(f"the tie rule must be one of {TIE_RULES}, not {ties!r}")


def order_ties(scores: np.ndarray, rows: np.ndarray, toward: str = "higher"
               ) -> tuple[np.ndarray, np.ndarray]:
    """Order each query's results by score, equal scores by row: descending rows for
    ``toward="higher"``, ascending for ``"lower"``.

    Why it matters: names shared by several concepts have identical vectors, so exact ties
    decide which concept a mention gets. ``linker annotate``'s entity index sends them to the
    higher row, as faiss's flat index (which the shipped collective model was tuned and scored
    with) does, so results do not change with the backend; the normalizer's label index sends
    them to the lowest row (its rows are sorted texts, so the first text wins).
    """
    check_ties(toward)
    order = np.lexsort((-rows if toward == "higher" else rows, -scores), axis=1)
    return np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)


class BlockProducts(Protocol):
    """How one caller computes and selects a block of scores (see the module docstring)."""

    n: int
    block_rows: int

    @property
    def query_block(self) -> int:
        """Queries multiplied at once."""

    def prepare(self, queries: np.ndarray):
        """The queries as this arithmetic multiplies them."""

    def scores(self, queries, start: int):
        """Products of ``queries`` with rows ``start:start + block_rows``."""

    def hide(self, scores, hidden: np.ndarray) -> None:
        """Set the ``hidden`` columns of ``scores`` to −inf (rows the query may not see)."""

    def select(self, scores, k: int) -> tuple:
        """The block's best ``k`` columns: (scores, column numbers)."""

    def merge(self, best: tuple, new: tuple, k: int, ties: str) -> tuple:
        """The best ``k`` of two selections."""

    def as_numpy(self, best: tuple) -> tuple[np.ndarray, np.ndarray]:
        """A selection as (float32 scores, int64 rows)."""


class TorchProducts:
    """``linker annotate``'s exact search: fp32 products in torch over ``block_rows`` rows at
    a time, ``torch.topk`` per block and per merge; queries in blocks of ~64 MB of scores.

    ``rows(start)`` gives the fp32 rows ``start:start + block_rows`` as a tensor (a slice of
    the matrix held in memory, or a block read from the fp16 file)."""

    def __init__(self, rows: Callable[[int], torch.Tensor], n: int, block_rows: int):
        self.rows = rows
        self.n = n
        self.block_rows = block_rows

    @property
    def query_block(self) -> int:
        return max(1, (1 << 24) // max(1, min(self.n, self.block_rows)))

    def prepare(self, queries: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))

    def scores(self, queries: torch.Tensor, start: int) -> torch.Tensor:
        """Products of ``queries`` with a block of rows, the queries zero-padded to at least
        :data:`MIN_QUERY_ROWS` rows: on the CPU a product of a few rows takes other kernels
        than the same rows inside a larger product (other last bits), and a query's scores
        must not depend on how many queries share its search (``linker serve`` batches
        requests; docs/serving.md, "Batching and identical answers")."""
        if len(queries) >= MIN_QUERY_ROWS:
            return queries @ self.rows(start).T
        padded = queries.new_zeros((MIN_QUERY_ROWS, queries.shape[1]))
        padded[:len(queries)] = queries
        return (padded @ self.rows(start).T)[:len(queries)]

    def hide(self, scores: torch.Tensor, hidden: np.ndarray) -> None:
        scores[:, torch.from_numpy(np.ascontiguousarray(hidden))] = float("-inf")

    def select(self, scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        return scores.topk(min(k, scores.shape[1]), dim=1)

    def merge(self, best: tuple, new: tuple, k: int, ties: str) -> tuple:
        scores = torch.cat([best[0], new[0]], 1)
        rows = torch.cat([best[1], new[1]], 1)
        top, where = scores.topk(min(k, scores.shape[1]), dim=1)
        return top, rows.gather(1, where)

    def as_numpy(self, best: tuple) -> tuple[np.ndarray, np.ndarray]:
        return best[0].numpy(), best[1].numpy()


class NumpyProducts:
    """The normalizer's exact search: fp16 rows converted to fp32 ``block_rows`` at a time
    (a memory-mapped KB is never copied whole), numpy products, ``np.argpartition`` per block,
    merged in tie order; ``query_block`` queries at a time."""

    def __init__(self, vectors: np.ndarray, block_rows: int, query_block: int):
        self.vectors = vectors
        self.n = len(vectors)
        self.block_rows = block_rows
        self._query_block = query_block

    @property
    def query_block(self) -> int:
        return self._query_block

    def prepare(self, queries: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(queries, dtype=np.float32)

    def scores(self, queries: np.ndarray, start: int) -> np.ndarray:
        block = np.asarray(self.vectors[start:start + self.block_rows], dtype=np.float32)
        return queries @ block.T

    def hide(self, scores: np.ndarray, hidden: np.ndarray) -> None:
        scores[:, hidden] = -np.inf

    def select(self, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        width = scores.shape[1]
        kk = min(k, width)
        if kk < width:
            idx = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        else:
            idx = np.broadcast_to(np.arange(width), scores.shape).copy()
        return np.take_along_axis(scores, idx, axis=1), idx

    def merge(self, best: tuple, new: tuple, k: int, ties: str) -> tuple:
        scores, rows = order_ties(np.concatenate([best[0], new[0]], axis=1),
                                  np.concatenate([best[1], new[1]], axis=1), ties)
        return scores[:, :k], rows[:, :k]

    def as_numpy(self, best: tuple) -> tuple[np.ndarray, np.ndarray]:
        return best


def exact_top_k(queries: np.ndarray, k: int, ties: str, products: BlockProducts,
                mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows per query by inner product: ``(scores, rows)``, each
    ``(len(queries), min(k, n))``, best first, equal scores ordered by ``ties``.

    ``mask`` (one bool per row) hides the rows a query may not see: they score −inf, so they
    come last (a caller drops them). ``products`` is the caller's arithmetic (module docstring).
    """
    check_ties(ties)
    m, n = len(queries), products.n
    k = min(k, n)
    if k == 0 or m == 0:
        return np.zeros((m, k), np.float32), np.zeros((m, k), np.int64)
    q = products.prepare(queries)
    scores = np.empty((m, k), np.float32)
    rows = np.empty((m, k), np.int64)
    step = products.query_block
    for qs in range(0, m, step):
        qb = q[qs:qs + step]
        best = None
        for start in range(0, n, products.block_rows):
            block = products.scores(qb, start)
            if mask is not None:
                hidden = ~mask[start:start + block.shape[1]]
                if hidden.any():
                    products.hide(block, hidden)
            found_s, found_r = products.select(block, k)
            found = (found_s, found_r + start)
            best = found if best is None else products.merge(best, found, k, ties)
        scores[qs:qs + len(qb)], rows[qs:qs + len(qb)] = products.as_numpy(best)
    return order_ties(scores, rows, ties)
