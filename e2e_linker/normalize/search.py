"""Exact vector search over concept texts or concept centroids, and the sieves that combine them.

Xu & Bethard (2021) search a mention's vector against one of three pools — the ontology's names
(O), the training data's mentions (D), or both (OD) — either over the individual texts (-T: the
best text's concept wins) or over per-concept centroids (-C: the mean of a concept's text
vectors). A *sieve* ``A+B`` trusts search A when its best cosine is at least 0.95 (a near-exact
match, mostly a mention seen in training) and falls back to B otherwise. That gives 14 modes::

    O-T O-C D-T D-C OD-T OD-C
    D-T+O-T D-T+O-C D-C+O-T D-C+O-C D-T+OD-T D-T+OD-C D-C+OD-T D-C+OD-C

Search is exact inner product on L2-normalised fp16 vectors, in blocks with numpy (a 675k-name
chemical KB is ~0.5 GB in fp16 and is memory-mapped, never copied to fp32 whole). Ties go to the
lowest row, then to the sorted label, so results do not depend on thread timing.

Encoding a large KB is the slow part on a CPU (~880 names/s for MiniLM on 2 cores), so text
vectors are cached on disk (:class:`VectorCache`), keyed by the encoder's weights and the exact
list of texts, written in resumable parts with a progress bar.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from e2e_linker.encoder import TextEncoder

#: Cosine at or above which a sieve keeps its first search's answer.
SIEVE_THRESHOLD = 0.95

BASE_MODES = ("O-T", "O-C", "D-T", "D-C", "OD-T", "OD-C")
SIEVE_MODES = ("D-T+O-T", "D-T+O-C", "D-C+O-T", "D-C+O-C",
               "D-T+OD-T", "D-T+OD-C", "D-C+OD-T", "D-C+OD-C")
MODES = BASE_MODES + SIEVE_MODES

#: One ranked answer list: ``(label, cosine)`` best first; a label is a concept ID, or several
#: ``|``-joined IDs for a composite training mention.
Ranked = list[tuple[str, float]]


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


# ---- encoding and the on-disk cache --------------------------------------------------------

def default_cache_dir() -> Path:
    """``$E2E_LINKER_CACHE`` or ``~/.cache/e2e_linker`` (shared with ``linker annotate``)."""
    return Path(os.environ.get("E2E_LINKER_CACHE", Path.home() / ".cache" / "e2e_linker"))


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def encode_unit(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256,
                progress: bool | str = False) -> np.ndarray:
    """L2-normalised float32 vectors of ``texts`` (queries: small, never cached)."""
    if not texts:
        return np.zeros((0, encoder.hidden_size), np.float32)
    return unit_rows(encoder.encode(list(texts), batch_size=batch_size, progress=progress))


def texts_hash(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:20]


class VectorCache:
    """Unit vectors (fp16) of text lists, on disk, keyed by (encoder hash, texts hash).

    ``vectors(texts)`` returns a read-only memory map. A miss encodes in parts of ``part_size``
    texts, each saved as soon as it is done, so an interrupted encode of a large KB resumes.
    Vectors already in ``linker annotate``'s name cache for the same encoder (same weights,
    pooling and length) are reused instead of re-encoded.
    """

    def __init__(self, encoder: TextEncoder, cache_dir: str | os.PathLike | None = None,
                 batch_size: int = 256, part_size: int = 16384, progress: bool = True,
                 seed_min: int = 1000):
        from e2e_linker.index import encoder_fingerprint

        self.encoder = encoder
        self.root = Path(cache_dir) if cache_dir else default_cache_dir()
        self.fingerprint = encoder_fingerprint(encoder)
        self.folder = self.root / "normalizer_vectors" / self.fingerprint
        self.batch_size = batch_size
        self.part_size = part_size
        self.progress = progress
        #: only lists this long look into the name cache (reading it costs a second or two)
        self.seed_min = seed_min

    def path_for(self, texts: Sequence[str]) -> Path:
        return self.folder / f"{texts_hash(texts)}-{len(texts)}.npy"

    def _seed(self, texts: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """Rows found in ``linker annotate``'s name-keyed cache: (vectors or None, found mask)."""
        folder = self.root / "entity_vectors" / self.fingerprint
        names_path, vectors_path = folder / "names.jsonl", folder / "vectors.npy"
        found = np.zeros(len(texts), bool)
        if not (names_path.is_file() and vectors_path.is_file()):
            return None, found
        try:
            with names_path.open(encoding="utf-8") as handle:
                row = {json.loads(line): i for i, line in enumerate(handle)}
            stored = np.load(vectors_path, mmap_mode="r")
        except (OSError, ValueError):
            return None, found
        if len(stored) != len(row):
            return None, found
        hits = [(i, row[t]) for i, t in enumerate(texts) if t in row]
        hits += self._same_tokens(texts, row)
        if not hits:
            return None, found
        out = np.zeros((len(texts), stored.shape[1]), np.float16)
        mine = np.array([i for i, _ in hits])
        theirs = np.array([j for _, j in hits])
        order = np.argsort(theirs)  # read the memory map in order
        out[mine[order]] = unit_rows(stored[theirs[order]]).astype(np.float16)
        found[mine] = True
        return out, found

    def _same_tokens(self, texts: Sequence[str], row: dict[str, int]) -> list[tuple[int, int]]:
        """Cached names that differ from a text only in case *and* tokenize identically.

        An uncased tokenizer (MiniLM's) gives "Breast Neoplasms" and "breast neoplasms" the
        same token ids, hence the same vector; we accept a pair only after checking the ids.
        """
        lowered: dict[str, str] = {}
        for name in row:
            lowered.setdefault(name.lower(), name)
        pairs = [(i, lowered[t.lower()]) for i, t in enumerate(texts)
                 if t not in row and t.lower() in lowered]
        if not pairs:
            return []
        tokenizer = self.encoder.tokenizer
        limit = self.encoder.max_length

        def ids(batch: list[str]) -> list[list[int]]:
            return tokenizer(batch, truncation=True, max_length=limit)["input_ids"]

        out: list[tuple[int, int]] = []
        for start in range(0, len(pairs), 65536):
            block = pairs[start:start + 65536]
            mine = ids([texts[i] for i, _ in block])
            theirs = ids([name for _, name in block])
            out += [(i, row[name]) for (i, name), a, b in zip(block, mine, theirs, strict=True)
                    if a == b]
        return out

    def vectors(self, texts: Sequence[str], label: str = "encoding") -> np.ndarray:
        """fp16 unit vectors of ``texts`` in order, memory-mapped from the cache."""
        texts = list(texts)
        dim = self.encoder.hidden_size
        if not texts:
            return np.zeros((0, dim), np.float16)
        path = self.path_for(texts)
        if path.is_file():
            return np.load(path, mmap_mode="r")
        from tqdm.auto import tqdm

        seeded, found = (None, np.zeros(len(texts), bool))
        if len(texts) >= self.seed_min:
            seeded, found = self._seed(texts)
        parts_dir = path.with_suffix(".parts")
        parts_dir.mkdir(parents=True, exist_ok=True)
        todo = [i for i in range(len(texts)) if not found[i]]
        n_parts = (len(todo) + self.part_size - 1) // self.part_size
        bar = tqdm(total=len(todo), desc=label, unit="text", disable=not self.progress)
        for p in range(n_parts):
            part_path = parts_dir / f"{p:05d}.npy"
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            if not part_path.is_file():
                vecs = encode_unit(self.encoder, [texts[i] for i in chunk], self.batch_size)
                tmp = parts_dir / f"{p:05d}.tmp.npy"
                np.save(tmp, vecs.astype(np.float16))
                os.replace(tmp, part_path)
            bar.update(len(chunk))
        bar.close()
        out = seeded if seeded is not None else np.zeros((len(texts), dim), np.float16)
        for p in range(n_parts):
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            out[chunk] = np.load(parts_dir / f"{p:05d}.npy")
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, out)
        os.replace(tmp, path)
        shutil.rmtree(parts_dir, ignore_errors=True)
        if len(todo) >= self.seed_min:
            self._remember([texts[i] for i in todo], out[todo])
        return np.load(path, mmap_mode="r")

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Add freshly encoded texts to the name-keyed cache, so that another list sharing
        most of them (the chemical KB, then the whole BC5CDR KB) encodes only the rest."""
        from e2e_linker.index import NameVectorCache

        store = NameVectorCache(self.root, self.encoder)
        known, stored = store._load()
        seen = set(known)
        new = []
        for i, text in enumerate(texts):
            if text not in seen:
                seen.add(text)
                new.append(i)
        if not new:
            return
        rows = vectors[new].astype(np.float16)
        merged = np.concatenate([np.asarray(stored), rows]) if stored is not None else rows
        store._store(known + [texts[i] for i in new], merged)


# ---- labelled texts ------------------------------------------------------------------------

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


# ---- the exact index -----------------------------------------------------------------------

class ExactIndex:
    """Rows of unit vectors, each with one or more labels; exact top-k distinct labels.

    ``search`` takes optional per-query types: a typed query only sees labels of that type (or
    untyped labels) when the index knows that type at all; otherwise it sees everything, so an
    NCBI ``SpecificDisease`` mention still searches a KB typed ``Disease``.
    """

    def __init__(self, vectors: np.ndarray, row_labels: Sequence[tuple[str, ...]],
                 label_types: dict[str, frozenset[str]] | None = None,
                 block_rows: int = 16384, query_block: int = 1024):
        if len(vectors) != len(row_labels):
            raise ValueError("vectors and row_labels must have the same length")
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

    def _top_rows(self, queries: np.ndarray, k_rows: int, mask: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (m, ≤k_rows), sorted by score desc then row asc."""
        m = len(queries)
        best_s = np.zeros((m, 0), np.float32)
        best_i = np.zeros((m, 0), np.int64)
        n = len(self)
        for start in range(0, n, self.block_rows):
            block = np.asarray(self.vectors[start:start + self.block_rows], dtype=np.float32)
            scores = queries @ block.T
            if mask is not None:
                scores[:, ~mask[start:start + len(block)]] = -np.inf
            kk = min(k_rows, scores.shape[1])
            if kk < scores.shape[1]:
                idx = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
            else:
                idx = np.broadcast_to(np.arange(scores.shape[1]), scores.shape).copy()
            part = np.take_along_axis(scores, idx, axis=1)
            all_s = np.concatenate([best_s, part], axis=1)
            all_i = np.concatenate([best_i, idx + start], axis=1)
            order = np.lexsort((all_i, -all_s), axis=1)[:, :k_rows]
            best_s = np.take_along_axis(all_s, order, axis=1)
            best_i = np.take_along_axis(all_i, order, axis=1)
        return best_s, best_i

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
                scores, rows = self._top_rows(queries[chunk], k_rows, mask)
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
    """

    def __init__(self, encoder: TextEncoder, ontology: LabeledTexts,
                 training: LabeledTexts | None = None, cache: VectorCache | None = None,
                 sieve_threshold: float = SIEVE_THRESHOLD, progress: bool = True,
                 extra_synonyms: LabeledTexts | None = None):
        self.encoder = encoder
        self.pools: dict[str, list[LabeledTexts]] = {
            "O": [p for p in (ontology, extra_synonyms) if p is not None and len(p)],
            "D": [training] if training is not None and len(training) else [],
        }
        self.cache = cache or VectorCache(encoder, progress=progress)
        self.sieve_threshold = sieve_threshold
        self._vectors: dict[int, np.ndarray] = {}
        self._text_indices: dict[int, ExactIndex] = {}
        self._centroid_indices: dict[str, ExactIndex] = {}

    def pool_vectors(self, pool: LabeledTexts) -> np.ndarray:
        key = id(pool)
        if key not in self._vectors:
            label = "encoding training mentions" if any(pool is p for p in self.pools["D"]) \
                else "encoding ontology names"
            self._vectors[key] = self.cache.vectors(pool.texts, label=label)
        return self._vectors[key]

    def _text_index(self, source: str, pool: LabeledTexts) -> ExactIndex:
        key = id(pool)
        if key not in self._text_indices:
            self._text_indices[key] = ExactIndex(self.pool_vectors(pool), pool.labels,
                                                 pool.label_types)
        return self._text_indices[key]

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
