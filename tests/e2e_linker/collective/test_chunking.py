"""Chunk offsets are exact and every span is owned by exactly one chunk."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.chunking import (
    char_span_to_tokens,
    chunk_document,
    plan_windows,
    tokenize_document,
)
from e2e_linker.encoder.text_encoder import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(None)


def _long_doc(n_sentences: int = 120) -> Document:
    title = "Famotidine-associated delirium."
    sentences = [
        f"Case {k} received famotidine and developed delirium within {k} days." for k in range(n_sentences)
    ]
    abstract = " ".join(sentences)
    doc = Document("1", [Passage(0, title, {"type": "title"}),
                         Passage(len(title) + 1, abstract, {"type": "abstract"})])
    return doc


def test_token_offsets_are_exact(tokenizer):
    doc = _long_doc(5)
    toks = tokenize_document(doc, tokenizer)
    text = doc.text
    for tid, a, b in zip(toks.ids, toks.starts, toks.ends, strict=True):
        piece = tokenizer.convert_ids_to_tokens(tid).removeprefix("##")
        assert text[a:b].lower() == piece


def test_plan_windows_owns_every_token_once():
    sentence_start = [i % 37 == 0 for i in range(2000)]
    windows = plan_windows(sentence_start, capacity=510, max_span_len=10, overlap=32)
    owned = []
    for start, end, own_start, own_end in windows:
        assert end - start <= 510
        assert start <= own_start < own_end <= end
        if end < 2000:
            assert end - own_end >= 10  # an owned span of ≤10 tokens is inside the window
        owned.extend(range(own_start, own_end))
    assert owned == list(range(2000))


def test_plan_windows_without_sentence_breaks_uses_overlap():
    windows = plan_windows([True] + [False] * 1499, capacity=510, max_span_len=10, overlap=32)
    assert len(windows) > 3
    for (_s1, _, _, o1), (s2, _, o2, _) in zip(windows, windows[1:], strict=False):
        assert o2 == o1 and s2 == o1 - 32


def test_long_document_chunks_cover_mentions_exactly(tokenizer):
    doc = _long_doc(120)
    text = doc.text
    toks = tokenize_document(doc, tokenizer)
    chunks = chunk_document(toks, tokenizer, max_length=128, max_span_len=10, overlap=16)
    assert len(chunks) > 5
    start = 0
    owners = 0
    while True:
        k = text.find("famotidine", start)
        if k < 0:
            break
        start = k + 1
        hits = []
        for chunk in chunks:
            pos = char_span_to_tokens(chunk, k, k + len("famotidine"))
            if pos and chunk.owned[pos[0]]:
                i, j = pos
                assert text[chunk.starts[i]:chunk.ends[j]] == "famotidine"
                hits.append(chunk)
        assert len(hits) == 1  # exactly one chunk owns each mention
        owners += 1
    assert owners == 120
    for chunk in chunks:
        assert len(chunk) <= 128
        assert chunk.input_ids[0] == tokenizer.cls_token_id
        assert chunk.input_ids[-1] == tokenizer.sep_token_id


def test_spans_do_not_cross_passages(tokenizer):
    doc = _long_doc(2)
    toks = tokenize_document(doc, tokenizer)
    assert toks.segment[0] == 0 and toks.segment[-1] == 1
    doc.add_annotation(Annotation(0, 10, "Famotidine", "Chemical", ["D015738"]))
    assert doc.passages[0].annotations[0].text == doc.text_at(0, 10)


@pytest.mark.parametrize("max_length", [512, 48])
def test_real_bc5cdr_mentions_map_exactly(tokenizer, shared_data, max_length):
    """Every gold mention of BC5CDR dev is owned by exactly one chunk, and the chunk's token
    offsets give back its text (at 48 tokens many mentions sit at chunk borders)."""
    from data_tools.formats import read_documents

    docs = list(read_documents(shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"))
    assert len(docs) == 500
    total = exact = border = too_long = 0
    for n, doc in enumerate(docs[:150]):
        toks = tokenize_document(doc, tokenizer, n)
        chunks = chunk_document(toks, tokenizer, max_length=max_length, max_span_len=10, overlap=8)
        text = doc.text
        for ann in doc.annotations:
            n_tokens = sum(1 for a, b in zip(toks.starts, toks.ends, strict=True)
                           if b > ann.start and a < ann.end)
            if n_tokens > 10:  # longer than L: not predictable by design, counted below
                too_long += 1
                continue
            total += 1
            owners = []
            for chunk in chunks:
                pos = char_span_to_tokens(chunk, ann.start, ann.end)
                if pos and chunk.owned[pos[0]]:
                    owners.append((chunk, pos))
            assert len(owners) == 1, (doc.id, ann)
            chunk, (i, j) = owners[0]
            if chunk.own_end - 10 <= chunk.token_start + i - 1 < chunk.own_end:
                border += 1
            exact += text[chunk.starts[i]:chunk.ends[j]] == ann.text
    assert exact / total > 0.99  # the rest start/end inside a word piece
    assert too_long / (total + too_long) < 0.02
    if max_length == 48:
        assert border > 50


@pytest.mark.parametrize("max_length", [512, 48])
def test_a_guideline_tag_shifts_the_text_by_one_position_and_maps_every_mention(
        tokenizer, shared_data, max_length):
    """With a tag after [CLS] every chunk holds one text token fewer, the tag is a special
    position (no characters, no passage, never owned) and every gold mention maps to the same
    text as without it; a document's chunks still own each mention exactly once."""
    from data_tools.formats import read_documents

    docs = list(read_documents(shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"))
    tag = tokenizer.convert_tokens_to_ids("[unused3]")
    for n, doc in enumerate(docs[:40]):
        toks = tokenize_document(doc, tokenizer, n)
        plain = chunk_document(toks, tokenizer, max_length=max_length, max_span_len=10,
                               overlap=8)
        tagged = chunk_document(toks, tokenizer, max_length=max_length, max_span_len=10,
                                overlap=8, prefix_ids=[tag])
        assert len(tagged) >= len(plain)
        for chunk in tagged:
            assert len(chunk) <= max_length and chunk.prefix == 1
            assert chunk.input_ids[:2] == [tokenizer.cls_token_id, tag]
            assert chunk.starts[1] == chunk.ends[1] == chunk.segment[1] == -1
            assert not (chunk.owned[1] or chunk.word_start[1] or chunk.word_end[1])
        if len(plain) == 1:  # one chunk either way: the same text one position on
            assert tagged[0].input_ids[2:] == plain[0].input_ids[1:]
            assert tagged[0].starts[2:] == plain[0].starts[1:]
        for ann in doc.annotations:
            owners = [(c, p) for c in tagged
                      if (p := char_span_to_tokens(c, ann.start, ann.end)) and c.owned[p[0]]]
            if not owners:  # longer than a chunk can own at 48 tokens
                continue
            assert len(owners) == 1, (doc.id, ann)
            chunk, (i, j) = owners[0]
            assert i >= 2 and chunk.starts[i] <= ann.start and chunk.ends[j] >= ann.end
