"""The transformers-free WordPiece tokenizer against transformers' fast BERT tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from e2e_linker.encoder.text_encoder import resolve_encoder_path
from e2e_linker.encoder.wordpiece import WordPieceTokenizer, load_wordpiece

SHIPPED = "e2e_linker/default_model/encoder"
ODD = ["[CLS] hello [SEP]", "[mask] x [MASK]", "Café naïve résumé", "北京 大学", "a\u200bb\x00c",
       "x" * 150, "  ", "", "ÅNGSTRÖM 1,25-(OH)(2)D3", "\t\ttabs\nnew", "İstanbul ß ﬁ"]


def transformers_tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), use_fast=True)


@pytest.fixture(scope="module")
def texts(bc5cdr_test_docs):
    return [p.text for d in bc5cdr_test_docs[:60] for p in d.passages if p.text] + ODD


@pytest.mark.parametrize("folder", [SHIPPED, resolve_encoder_path(None)])
def test_ids_offsets_and_word_ids_are_transformers(folder, texts):
    ours, theirs = load_wordpiece(folder), transformers_tokenizer(folder)
    assert isinstance(ours, WordPieceTokenizer)
    kwargs = dict(add_special_tokens=False, return_offsets_mapping=True,
                  return_attention_mask=False, return_token_type_ids=False, verbose=False)
    a, b = ours(texts, **kwargs), theirs(texts, **kwargs)
    assert a["input_ids"] == b["input_ids"]
    assert a["offset_mapping"] == [[tuple(o) for o in row] for row in b["offset_mapping"]]
    assert all(a.word_ids(n) == b.word_ids(n) for n in range(len(texts)))
    for length in (8, 32):
        a = ours(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
        b = theirs(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
        assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
        assert ours(texts, truncation=True, max_length=length)["input_ids"] == \
            theirs(texts, truncation=True, max_length=length)["input_ids"]
    assert (ours.cls_token_id, ours.sep_token_id, ours.pad_token_id, ours.vocab_size) == \
        (theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id, theirs.vocab_size)
    assert ours.convert_ids_to_tokens([101, 7592, 2]) == theirs.convert_ids_to_tokens([101, 7592, 2])


def test_a_folder_with_only_vocab_txt_tokenizes_the_same(tmp_path, texts):
    source = Path(resolve_encoder_path(None))
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    ours = load_wordpiece(tmp_path)
    assert ours is not None
    assert ours(texts)["input_ids"] == load_wordpiece(source)(texts)["input_ids"]


def test_other_tokenizers_are_left_to_transformers(tmp_path):
    config = json.loads(open(f"{SHIPPED}/tokenizer_config.json").read())
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({**config, "tokenizer_class": "RobertaTokenizer"}))
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    assert load_wordpiece(tmp_path) is None
    assert load_wordpiece(tmp_path / "missing") is None


def test_save_pretrained_writes_a_folder_both_load(tmp_path, texts):
    load_wordpiece(SHIPPED).save_pretrained(tmp_path)
    assert load_wordpiece(tmp_path)(texts)["input_ids"] == \
        transformers_tokenizer(tmp_path)(texts)["input_ids"]


def test_a_damaged_tokenizer_file_is_a_user_error_naming_it(tmp_path):
    from e2e_linker.errors import UserError

    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer"}')
    (tmp_path / "tokenizer.json").write_bytes(b"\xff\xfe not json")
    with pytest.raises(UserError, match="tokenizer.json: cannot read it as JSON"):
        load_wordpiece(tmp_path)
