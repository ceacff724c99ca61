"""BERT's WordPiece tokenizer on the ``tokenizers`` library alone, without importing transformers.

Why: importing transformers costs seconds on a CPU (see :mod:`e2e_linker.encoder.bert`), and the
fast tokenizer transformers hands back for a BERT folder is a ``tokenizers.Tokenizer`` it builds
from the vocabulary and ``tokenizer_config.json``. This module builds the same pipeline the same
way (transformers' ``BertTokenizer.__init__``: BertNormalizer with the config's case/accents/
Chinese flags, BertPreTokenizer, WordPiece, [CLS] $A [SEP]) and sets truncation and padding per
call as transformers does, so ids, offsets and word ids are identical
(tests/e2e_linker/encoder/test_wordpiece.py compares them). Folders whose tokenizer is not a
BERT WordPiece are refused by :func:`load_wordpiece`, and the caller uses transformers.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from e2e_linker.encoder.bert import read_json

#: tokenizer classes that transformers builds as :class:`WordPieceTokenizer` does
BERT_TOKENIZERS = ("BertTokenizer", "BertTokenizerFast")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")


class Encoded(dict):
    """Tokenized texts keyed like transformers' ``BatchEncoding`` (``input_ids``,
    ``token_type_ids``, ``attention_mask``, ``offset_mapping``), with ``word_ids(n)``."""

    def __init__(self, data: dict[str, Any], encodings: list):
        super().__init__(data)
        self.encodings = encodings

    def word_ids(self, index: int = 0) -> list[int | None]:
        """The word each token of text ``index`` belongs to (None: special tokens)."""
        return self.encodings[index].word_ids


class WordPieceTokenizer:
    """The subset of transformers' fast BERT tokenizer this package calls."""

    is_fast = True

    def __init__(self, vocab: dict[str, int], config: dict[str, Any],
                 added_tokens: list[dict[str, Any]], source: Path | None = None):
        from tokenizers import (
            AddedToken,
            Tokenizer,
            decoders,
            normalizers,
            pre_tokenizers,
            processors,
        )
        from tokenizers.models import WordPiece

        self.config = config
        self.source = source
        self.unk_token = str(config.get("unk_token") or "[UNK]")
        self.cls_token = str(config.get("cls_token") or "[CLS]")
        self.sep_token = str(config.get("sep_token") or "[SEP]")
        self.pad_token = str(config.get("pad_token") or "[PAD]")
        self.mask_token = str(config.get("mask_token") or "[MASK]")
        self.model_max_length = int(config.get("model_max_length") or 512)
        self.vocab_size = len(vocab)
        tokenizer = Tokenizer(WordPiece(vocab, unk_token=self.unk_token))
        tokenizer.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=config.get("tokenize_chinese_chars", True),
            strip_accents=config.get("strip_accents"),
            lowercase=config.get("do_lower_case", True),
        )
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece(prefix="##")
        specials = [self.unk_token, self.sep_token, self.pad_token, self.cls_token,
                    self.mask_token]
        added = added_tokens or [{"content": t} for t in specials]
        tokenizer.add_special_tokens([
            AddedToken(a["content"], single_word=a.get("single_word", False),
                       lstrip=a.get("lstrip", False), rstrip=a.get("rstrip", False),
                       normalized=a.get("normalized", False), special=True)
            for a in added if a.get("special", True)])
        self.cls_token_id = tokenizer.token_to_id(self.cls_token)
        self.sep_token_id = tokenizer.token_to_id(self.sep_token)
        self.pad_token_id = tokenizer.token_to_id(self.pad_token)
        self.unk_token_id = tokenizer.token_to_id(self.unk_token)
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{self.cls_token}:0 $A:0 {self.sep_token}:0",
            pair=f"{self.cls_token}:0 $A:0 {self.sep_token}:0 $B:1 {self.sep_token}:1",
            special_tokens=[(self.cls_token, self.cls_token_id if self.cls_token_id is not None
                             else 2),
                            (self.sep_token, self.sep_token_id if self.sep_token_id is not None
                             else 3)],
        )
        self.backend = tokenizer

    def __call__(self, texts: Sequence[str], *, add_special_tokens: bool = True,
                 padding: bool = False, truncation: bool = False, max_length: int | None = None,
                 return_tensors: str | None = None, return_offsets_mapping: bool = False,
                 return_attention_mask: bool = True, return_token_type_ids: bool = True,
                 verbose: bool = True) -> Encoded:
        """Token ids of a batch of texts, as transformers' fast tokenizer returns them for the
        same arguments (``return_tensors="pt"``: padded int64 tensors)."""
        if isinstance(texts, str):
            raise TypeError("pass a list of texts")
        backend = self.backend
        if truncation:
            backend.enable_truncation(max_length or self.model_max_length, stride=0,
                                      strategy="longest_first", direction="right")
        else:
            backend.no_truncation()
        if padding:
            backend.enable_padding(direction="right", pad_id=self.pad_token_id or 0,
                                   pad_type_id=0, pad_token=self.pad_token)
        else:
            backend.no_padding()
        encodings = backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        data: dict[str, Any] = {"input_ids": [e.ids for e in encodings]}
        if return_token_type_ids:
            data["token_type_ids"] = [e.type_ids for e in encodings]
        if return_attention_mask:
            data["attention_mask"] = [e.attention_mask for e in encodings]
        if return_offsets_mapping:
            data["offset_mapping"] = [e.offsets for e in encodings]
        if return_tensors == "pt":
            import torch

            data = {k: torch.tensor(v, dtype=torch.long) for k, v in data.items()}
        elif return_tensors is not None:
            raise ValueError(f"return_tensors={return_tensors!r}: only 'pt' is supported")
        return Encoded(data, encodings)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        """The id of one vocabulary entry (None: the vocabulary lacks it), as transformers'
        tokenizers answer for one token."""
        return self.backend.token_to_id(token)

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Token strings of ids (one id: one string)."""
        if isinstance(ids, int):
            return self.backend.id_to_token(ids)
        return [self.backend.id_to_token(i) for i in ids]

    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """Copy the tokenizer files of the folder it was loaded from (a model saved after
        training loads with this class and with transformers alike)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.source is None:
            raise ValueError("this tokenizer was not loaded from a folder")
        for name in TOKENIZER_FILES:
            path = self.source / name
            if path.is_file() and path.resolve() != (directory / name).resolve():
                shutil.copyfile(path, directory / name)


@functools.cache
def _separator_table() -> dict[int, str]:
    """Every control character (Unicode category Cc) and separator (Zs, Zl, Zp) but the space,
    mapped to a space (all of them lie in the Basic Multilingual Plane)."""
    import unicodedata

    return {code: " " for code in range(0x10000)
            if code != 0x20 and unicodedata.category(chr(code)) in ("Cc", "Zs", "Zl", "Zp")}


def separators_as_spaces(text: str) -> str:
    """``text`` with every control character and Unicode separator turned into a space, one
    character for one, so offsets into the result are offsets into ``text``.

    Why: BERT's normalizer (``clean_text``) treats tab, CR, LF and the Zs/Zl/Zp separators as
    spaces but *deletes* the other control characters, so ``"treated with\\fcisplatin"`` (a
    form feed: what pdftotext writes between pages), ``\\v``, NEL (U+0085) or U+001C glued the
    words on both sides into one word and the mention was lost (issue 47, case 8). Mapped to a
    space first, they separate words as a space does; text without them is returned as is,
    so its ids and offsets do not change.
    """
    if text.isprintable():  # no Cc, Zl, Zp and no Zs but the space: nothing to map (fast)
        return text
    return text.translate(_separator_table())


def load_wordpiece(folder: str | os.PathLike) -> WordPieceTokenizer | None:
    """The folder's BERT tokenizer, or None when it is not a BERT WordPiece tokenizer this module
    builds as transformers does (the caller then uses transformers)."""
    folder = Path(folder)
    config_path = folder / "tokenizer_config.json"
    if not config_path.is_file():
        return None
    config = read_json(config_path)
    if config.get("tokenizer_class") not in BERT_TOKENIZERS:
        return None
    added: list[dict[str, Any]] = []
    if (folder / "tokenizer.json").is_file():
        data = read_json(folder / "tokenizer.json")
        model = data.get("model") or {}
        if model.get("type") != "WordPiece" or model.get("continuing_subword_prefix") != "##":
            return None
        vocab = dict(model["vocab"])
        added = list(data.get("added_tokens") or [])
    elif (folder / "vocab.txt").is_file():
        lines = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
        if lines and not lines[-1]:
            lines.pop()
        vocab = {token: i for i, token in enumerate(lines)}
    else:
        return None
    return WordPieceTokenizer(vocab, config, added, folder)
