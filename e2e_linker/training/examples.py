"""Training examples for the collective model: chunks plus their gold spans.

Gold annotations are mapped to chunk token positions once, up front. A mention counts for the
mention loss when it fits in ``max_span_len`` tokens and starts in the chunk's owned range;
it counts for the linking loss when, in addition, it has exactly one concept ID that the
training KB knows (composite and ``-1`` mentions still teach mention detection and type).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from data_tools.documents import Document
from e2e_linker.collective.chunking import Chunk, char_span_to_tokens, chunk_documents


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
) -> tuple[list[ChunkExample], dict[str, int]]:
    """Examples for ``docs`` and counts of what was used and skipped (reported by the trainer)."""
    from data_tools.documents import strip_prefix

    chunks = chunk_documents(docs, tokenizer, max_length, max_span_len, overlap)
    by_doc: dict[int, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_index, []).append(c)
    type_index = {t: n for n, t in enumerate(types)}
    stats = {"mentions": 0, "too_long": 0, "unaligned": 0, "linkable": 0, "capped": 0,
             "unknown_type": 0}
    examples = {id(c): ChunkExample(c) for c in chunks}
    for d, doc in enumerate(docs):
        for ann in doc.annotations:
            if _is_individual_part(ann):
                continue
            stats["mentions"] += 1
            if ann.type not in type_index:
                stats["unknown_type"] += 1
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
                    cid = None
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
