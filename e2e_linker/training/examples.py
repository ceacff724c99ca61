"""Training examples for the collective model: chunks plus their gold spans.

Gold annotations are mapped to chunk token positions once, up front. A mention counts for the
mention loss when it fits in ``max_span_len`` tokens and starts in the chunk's owned range;
it counts for the linking loss when, in addition, it has exactly one concept ID that the
training KB knows, directly or as the ID that replaced it (:mod:`e2e_linker.replaced_ids`)
(composite and ``-1`` mentions still teach mention detection and type).

Each example also carries what its corpus annotates: the model types it annotates
exhaustively (``annotated``; ``None`` when all of them, the usual case) and its ignore spans,
annotations of a type the config maps to ``None`` (annotated, but not one of the model's
types), which are neither positive nor negative examples for the mention loss.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from data_tools.documents import Document
from e2e_linker.collective.chunking import Chunk, char_span_to_tokens, chunk_documents
from e2e_linker.replaced_ids import current_id


@dataclass
class GoldSpan:
    """A gold mention in chunk token positions, with its type and linking target."""

    i: int  # chunk position of the first token
    j: int  # chunk position of the last token (inclusive)
    type_index: int
    concept_id: str | None  # None: not used for linking
    text: str


@dataclass
class ChunkExample:
    """One training chunk and the gold mentions it owns."""

    chunk: Chunk
    spans: list[GoldSpan] = field(default_factory=list)
    #: index of the example's corpus among the config's training corpora
    corpus: int = 0
    #: per model type (in ``types`` order), whether the corpus annotates it exhaustively;
    #: None: it annotates all of them (the mention loss is plain BCE)
    annotated: tuple[bool, ...] | None = None
    #: (first, last) chunk positions of spans masked out of the mention loss
    ignore: list[tuple[int, int]] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """Whether an unannotated span may still be a mention (of a type not annotated)."""
        return self.annotated is not None and not all(self.annotated)


def _is_individual_part(ann) -> bool:
    return ann.infons.get("CompositeRole") == "IndividualMention"


def build_examples(
    docs: Sequence[Document],
    tokenizer,
    types: Sequence[str],
    known_concepts: set[str] | None,
    max_length: int = 512,
    max_span_len: int = 10,
    overlap: int = 32,
    max_mentions_per_chunk: int = 64,
    annotated: Sequence[str] | None = None,
    ignore_types: Collection[str] = (),
    corpus: int = 0,
    prefix_ids: Sequence[int] = (),
) -> tuple[list[ChunkExample], dict]:
    """Examples for ``docs`` and counts of what was used and skipped (reported by the trainer).

    ``annotated``: the model types the corpus annotates exhaustively (None: all ``types``);
    annotations of ``ignore_types`` become ignore spans (counted as ``ignored``). Annotations
    of any other type the model lacks are skipped and counted, in total (``unknown_type``) and
    by type (``unknown_types``), so a type that a ``type_map`` forgot shows in the log.
    ``prefix_ids``: the corpus's guideline tag, read after [CLS]
    (:mod:`e2e_linker.collective.guidelines`).
    """
    from data_tools.documents import strip_prefix

    chunks = chunk_documents(docs, tokenizer, max_length, max_span_len, overlap, prefix_ids)
    by_doc: dict[int, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_index, []).append(c)
    type_index = {t: n for n, t in enumerate(types)}
    stats: dict = {"mentions": 0, "too_long": 0, "unaligned": 0, "linkable": 0, "capped": 0,
                   "unknown_type": 0, "ignored": 0, "unknown_types": {}}
    mask = None
    if annotated is not None and set(annotated) != set(types):
        mask = tuple(t in set(annotated) for t in types)
    examples = {id(c): ChunkExample(c, corpus=corpus, annotated=mask) for c in chunks}
    for d, doc in enumerate(docs):
        for ann in doc.annotations:
            if _is_individual_part(ann):
                continue
            if ann.type in ignore_types:
                stats["ignored"] += _place_ignore_span(ann, by_doc.get(d, []), examples,
                                                       max_span_len)
                continue
            stats["mentions"] += 1
            if ann.type not in type_index:
                stats["unknown_type"] += 1
                unknown = stats["unknown_types"]
                unknown[ann.type] = unknown.get(ann.type, 0) + 1
                continue
            placed = False
            for chunk in by_doc.get(d, []):
                pos = char_span_to_tokens(chunk, ann.start, ann.end)
                if pos is None:
                    continue
                i, j = pos
                if not chunk.owned[i]:
                    continue
                placed = True
                if j - i >= max_span_len:
                    stats["too_long"] += 1
                    break
                ids = [strip_prefix(c) for c in ann.concept_ids]
                cid = ids[0] if len(ids) == 1 else None
                if cid is not None and known_concepts is not None and cid not in known_concepts:
                    # an ID the vocabulary replaced trains the concept that replaced it, which
                    # the mined names joined (e2e_linker.collective.model_kb.current_names)
                    cid = current_id(cid)
                    cid = cid if cid in known_concepts else None
                example = examples[id(chunk)]
                if len(example.spans) >= max_mentions_per_chunk:
                    stats["capped"] += 1
                    break
                example.spans.append(GoldSpan(i, j, type_index[ann.type], cid, ann.text))
                stats["linkable"] += cid is not None
                break
            if not placed:
                stats["unaligned"] += 1
    return [examples[id(c)] for c in chunks], stats


def _place_ignore_span(ann, chunks: list[Chunk], examples: dict[int, ChunkExample],
                       max_span_len: int) -> int:
    """Put ``ann`` as an ignore span into the chunk that owns its start; 1 if placed."""
    for chunk in chunks:
        pos = char_span_to_tokens(chunk, ann.start, ann.end)
        if pos is None or not chunk.owned[pos[0]]:
            continue
        if pos[1] - pos[0] >= max_span_len:  # no such span is scored anyway
            return 0
        examples[id(chunk)].ignore.append(pos)
        return 1
    return 0


def epoch_size(sizes: Sequence[int], weights: Sequence[float]) -> int:
    """How many examples one epoch draws from corpora of ``sizes`` at ``weights``."""
    return sum(int(w) * n + round((w - int(w)) * n) for n, w in zip(sizes, weights, strict=True))


def epoch_examples(sizes: Sequence[int], weights: Sequence[float], seed: int,
                   epoch: int) -> list[int]:
    """Indices of the examples an epoch trains on, unshuffled; corpus ``c``'s examples are
    ``sum(sizes[:c]) ..``. A weight ``w`` takes each example ``int(w)`` times plus a random
    ``w - int(w)`` share of them, drawn from ``seed`` and ``epoch`` alone (so a resumed run
    draws the same); with every weight 1.0 it is simply ``range(sum(sizes))``.

    Why weights: the corpora differ in size and in what they teach, so the share of each in
    a batch is a setting chosen on dev, not an accident of corpus size.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    out: list[int] = []
    offset = 0
    for n, w in zip(sizes, weights, strict=True):
        whole = int(w)
        for _ in range(whole):
            out.extend(range(offset, offset + n))
        share = round((w - whole) * n)
        if share:
            out.extend(sorted(offset + k for k in rng.sample(range(n), share)))
        offset += n
    return out
