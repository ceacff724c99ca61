"""Split documents into ≤512-token chunks with exact character offsets.

Why this shape: the collective model reads one chunk per encoder pass, so chunks should be as
long as the encoder allows; mentions must never be cut, and predictions from overlapping chunks
must not be counted twice. Each chunk therefore *owns* a token range ``[own_start, own_end)``;
a span is predicted only by the chunk that owns its first token, and every non-final chunk
extends at least ``max_span_len`` tokens past what it owns, so an owned span is always whole.
Cuts fall on sentence starts where one is in reach; a cut inside a very long sentence gets
``overlap`` tokens of left context in the next chunk.

All offsets are document-level characters, taken from the fast tokenizer's offset mapping,
so ``document.text_at(token_start[i], token_end[j])`` is exactly the text of span ``(i, j)``.

A model trained under several annotation guidelines reads a guideline's tag token right after
[CLS] (``prefix_ids``, :mod:`e2e_linker.collective.guidelines`): special positions like [CLS]
(no characters, no passage, never owned), so no span starts or ends there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from data_tools.documents import Document

# A sentence ends at . ! or ? followed by whitespace and an upper-case letter, digit or bracket.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\[(\"'A-Z0-9])")


@dataclass
class DocTokens:
    """The whole document as one token stream (passages concatenated, no special tokens)."""

    doc_index: int
    ids: list[int]
    starts: list[int]  # document-level char offset of each token's first character
    ends: list[int]  # ... and one past its last character
    word_start: list[bool]  # token begins a word (not a ## continuation)
    word_end: list[bool]  # token ends a word
    segment: list[int]  # passage number of each token: spans never cross passages
    sentence_start: list[bool]


@dataclass
class Chunk:
    """One encoder input: token ids with [CLS]/[SEP] and the char offsets of the inner tokens."""

    doc_index: int
    token_start: int  # index into DocTokens of the chunk's first inner token
    own_start: int  # owned range, in DocTokens indices
    own_end: int
    input_ids: list[int]
    starts: list[int]  # per position of input_ids; -1 for special tokens
    ends: list[int]
    word_start: list[bool]
    word_end: list[bool]
    segment: list[int]
    owned: list[bool] = field(default_factory=list)
    #: special positions after [CLS] before the text (a guideline's tag token)
    prefix: int = 0

    def __len__(self) -> int:
        return len(self.input_ids)


def sentence_starts(text: str) -> list[int]:
    """Character offsets (within ``text``) where sentences begin; always includes 0."""
    return [0] + [m.end() for m in _SENTENCE_BREAK.finditer(text)]


def tokenize_document(doc: Document, tokenizer, doc_index: int = 0) -> DocTokens:
    """Tokenize every passage with offsets and lay them out as one document-level stream.

    The tokenizer reads each text with its control characters and separators as spaces
    (:func:`~e2e_linker.encoder.wordpiece.separators_as_spaces`: one character for one, so
    the offsets are offsets into the passage text itself): a form feed between two words
    must separate them, not glue them (BERT's normalizer deletes it).
    """
    from e2e_linker.encoder.wordpiece import separators_as_spaces  # torch-free callers stay so

    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    wstart: list[bool] = []
    wend: list[bool] = []
    segment: list[int] = []
    sent: list[bool] = []
    passages = [p for p in doc.passages if p.text]
    if passages:
        encodings = tokenizer(
            [separators_as_spaces(p.text) for p in passages],
            add_special_tokens=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,  # whole passages exceed 512 tokens on purpose: chunks come later
        )
    for n, passage in enumerate(passages):
        offsets = encodings["offset_mapping"][n]
        token_ids = encodings["input_ids"][n]
        word_ids = encodings.word_ids(n)
        sstarts = sentence_starts(passage.text)
        s_ptr = 0
        for t, (tid, (a, b)) in enumerate(zip(token_ids, offsets, strict=True)):
            if b <= a:  # tokens with no characters (should not happen for BERT) are dropped
                continue
            ids.append(tid)
            starts.append(passage.offset + a)
            ends.append(passage.offset + b)
            wstart.append(t == 0 or word_ids[t] != word_ids[t - 1])
            wend.append(t == len(token_ids) - 1 or word_ids[t] != word_ids[t + 1])
            segment.append(n)
            is_sent = False
            while s_ptr < len(sstarts) and sstarts[s_ptr] <= a:
                is_sent = True
                s_ptr += 1
            sent.append(is_sent)
    return DocTokens(doc_index, ids, starts, ends, wstart, wend, segment, sent)


def plan_windows(
    sentence_start: Sequence[bool], capacity: int, max_span_len: int, overlap: int
) -> list[tuple[int, int, int, int]]:
    """Windows ``(start, end, own_start, own_end)`` over ``n`` tokens; see the module docstring."""
    n = len(sentence_start)
    if capacity <= max_span_len + overlap:
        raise ValueError("chunk capacity must exceed max_span_len + overlap")
    windows: list[tuple[int, int, int, int]] = []
    own_start = 0
    start = 0
    while True:
        end = min(n, start + capacity)
        if end == n:
            windows.append((start, end, own_start, n))
            return windows
        limit = end - max_span_len  # owned spans must end inside the window
        own_end = next(
            (s for s in range(limit, own_start, -1) if sentence_start[s]), None
        )
        if own_end is not None and own_end > own_start + capacity // 4:
            next_start = own_end  # clean cut at a sentence start: no left context needed
        else:
            own_end = limit
            next_start = max(own_end - overlap, start + 1)
        windows.append((start, end, own_start, own_end))
        own_start, start = own_end, next_start


def chunk_document(
    tokens: DocTokens,
    tokenizer,
    max_length: int = 512,
    max_span_len: int = 10,
    overlap: int = 32,
    prefix_ids: Sequence[int] = (),
) -> list[Chunk]:
    """Cut one tokenized document into chunks of at most ``max_length`` ids
    ([CLS] + ``prefix_ids`` + … + [SEP])."""
    capacity = max_length - 2 - len(prefix_ids)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    prefix = list(prefix_ids)
    none = [-1] * len(prefix)
    no = [False] * len(prefix)
    chunks: list[Chunk] = []
    if not tokens.ids:
        return chunks
    for start, end, own_start, own_end in plan_windows(
        tokens.sentence_start, capacity, max_span_len, overlap
    ):
        sl = slice(start, end)
        chunks.append(
            Chunk(
                doc_index=tokens.doc_index,
                token_start=start,
                own_start=own_start,
                own_end=own_end,
                input_ids=[cls_id, *prefix, *tokens.ids[sl], sep_id],
                starts=[-1, *none, *tokens.starts[sl], -1],
                ends=[-1, *none, *tokens.ends[sl], -1],
                word_start=[False, *no, *tokens.word_start[sl], False],
                word_end=[False, *no, *tokens.word_end[sl], False],
                segment=[-1, *none, *tokens.segment[sl], -1],
                owned=[False, *no, *(own_start <= i < own_end for i in range(start, end)),
                       False],
                prefix=len(prefix),
            )
        )
    return chunks


def chunk_documents(
    docs: Sequence[Document],
    tokenizer,
    max_length: int = 512,
    max_span_len: int = 10,
    overlap: int = 32,
    prefix_ids: Sequence[int] = (),
) -> list[Chunk]:
    """Chunks of several documents, in document order (``Chunk.doc_index`` says which)."""
    chunks: list[Chunk] = []
    for i, doc in enumerate(docs):
        tokens = tokenize_document(doc, tokenizer, i)
        chunks.extend(chunk_document(tokens, tokenizer, max_length, max_span_len, overlap,
                                     prefix_ids))
    return chunks


def char_span_to_tokens(chunk: Chunk, start: int, end: int) -> tuple[int, int] | None:
    """Chunk positions ``(i, j)`` of the tokens covering chars ``[start, end)``, or ``None``.

    ``None`` when the span is not inside the chunk. Used to turn gold annotations into
    training targets; a mention that starts or ends inside a token maps to the covering tokens.
    """
    first = last = None
    text_start = 1 + chunk.prefix
    for pos in range(text_start, len(chunk) - 1):
        if chunk.ends[pos] > start and first is None:
            if chunk.starts[pos] >= end:
                return None
            first = pos
        if chunk.starts[pos] < end:
            last = pos
        else:
            break
    if first is None or last is None or last < first:
        return None
    if chunk.starts[first] > start and first == text_start and chunk.token_start > 0:
        return None  # the mention begins before this chunk
    if last == len(chunk) - 2 and chunk.ends[last] < end:
        return None  # the mention continues after this chunk
    return first, last
