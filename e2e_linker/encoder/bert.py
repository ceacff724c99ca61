"""A BERT encoder in plain torch: the forward of Hugging Face's ``BertModel``, without importing
transformers.

Why: importing ``transformers``' BERT pulls in torch.distributed.tensor, torch._dynamo and sympy
through its masking and loading utilities, which was about half of a warm ``Linker.load()`` on
this project's CPU (docs/decisions/0035-startup.md). A BERT encoder is a few dozen lines of torch,
and most biomedical encoders (BioBERT, PubMedBERT, SapBERT, MiniLM) are BERTs.

Output identity: the modules, their names and the order of every floating-point operation are
those of ``transformers.models.bert.modeling_bert`` with its default ``sdpa`` attention (the
padding mask as a boolean ``(batch, 1, query, key)`` tensor, no mask at all when nothing is
padded), so a state dict moves between the two unchanged and the hidden states are bit-identical
(tests/e2e_linker/encoder/test_bert.py compares them). Configurations this module does not
reproduce exactly (relative position embeddings, decoders, other activations) are refused by
:func:`supports`, and the caller falls back to transformers.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from e2e_linker.errors import UserError

#: ``hidden_act`` values whose torch function is exactly the one transformers applies
ACTIVATIONS = {"gelu": nn.functional.gelu, "relu": nn.functional.relu}

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


@dataclass
class BertConfig:
    """The fields of a Hugging Face BERT ``config.json`` the forward needs; ``raw`` keeps the
    whole file so that a saved model's config is the one it was loaded with."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_act: str = "gelu"
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    pad_token_id: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BertConfig:
        """The config of a ``config.json`` dict (unknown keys stay in ``raw``)."""
        names = set(cls.__dataclass_fields__) - {"raw"}
        return cls(**{k: data[k] for k in names if data.get(k) is not None}, raw=dict(data))

    def to_dict(self) -> dict[str, Any]:
        """The ``config.json`` dict (peft reads a model's config through this)."""
        return dict(self.raw)


def supports(config: dict[str, Any]) -> bool:
    """Whether :class:`BertModel` reproduces the transformers forward of this ``config.json``
    exactly: an absolute-position BERT encoder with a gelu/relu feed-forward, nothing else."""
    return (
        config.get("model_type") == "bert"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and not config.get("is_decoder", False)
        and not config.get("add_cross_attention", False)
        and not config.get("chunk_size_feed_forward", 0)
        and config.get("hidden_act", "gelu") in ACTIVATIONS
        and config.get("_attn_implementation", config.get("attn_implementation")) in (None, "sdpa")
        and config["hidden_size"] % config["num_attention_heads"] == 0
    )


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_length = input_ids.shape[1]
        positions = torch.arange(seq_length, device=input_ids.device)[None, :]
        token_types = torch.zeros_like(input_ids)
        # the order of the two sums is transformers': (words + token types) + positions
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_types)
        embeddings = embeddings + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_size ** -0.5
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        shape = (*hidden.shape[:-1], -1, self.head_size)
        query = self.query(hidden).view(*shape).transpose(1, 2)
        key = self.key(hidden).view(*shape).transpose(1, 2)
        value = self.value(hidden).view(*shape).transpose(1, 2)
        out = nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask,
            dropout_p=self.dropout.p if self.training else 0.0,
            scale=self.scaling, is_causal=False)
        out = out.reshape(out.shape[0], -1, query.shape[2], value.shape[-1])
        out = out.transpose(1, 2).contiguous()
        return out.reshape(*hidden.shape[:-1], -1).contiguous()


class BertResidualOutput(nn.Module):
    """``LayerNorm(dropout(dense(x)) + residual)``: BERT's attention output and layer output."""

    def __init__(self, config: BertConfig, in_features: int):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertResidualOutput(config, config.hidden_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(hidden, mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden))


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertResidualOutput(config, config.intermediate_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class BertLayers(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))


class BertPooler(nn.Module):
    """Kept for the state dict only (a saved model loads in transformers with its pooler);
    the encoders here pool token states themselves, so it is never run."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)


@dataclass
class EncoderOutput:
    """What callers read of transformers' model output."""

    last_hidden_state: torch.Tensor


class BertModel(nn.Module):
    """BERT's embeddings and layers, with transformers' module names (state dicts, activation
    statistics and LoRA target names carry over unchanged)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertLayers(config)
        self.pooler = BertPooler(config)

    @property
    def dtype(self) -> torch.dtype:
        return self.embeddings.word_embeddings.weight.dtype

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
                ) -> EncoderOutput:
        """Last-layer hidden states of ``input_ids`` (``attention_mask``: 1 = real token)."""
        hidden = self.embeddings(input_ids)
        mask = padding_mask(attention_mask, input_ids.shape[1])
        for layer in self.encoder.layer:
            hidden = layer(hidden, mask)
        return EncoderOutput(hidden)

    def save_pretrained(self, directory: str | os.PathLike, **_: Any) -> None:
        """``config.json`` + ``model.safetensors`` as transformers writes them for a BertModel."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = dict(self.config.raw, dtype=str(self.dtype).removeprefix("torch."))
        (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        state = {k: v.detach().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})


def padding_mask(attention_mask: torch.Tensor | None, length: int) -> torch.Tensor | None:
    """transformers' sdpa mask for a bidirectional encoder: None when no token is padded (the
    attention kernel then needs no mask), else a boolean ``(batch, 1, length, length)`` tensor,
    True where a query may attend to a key."""
    if attention_mask is None:
        return None
    keep = attention_mask.bool()
    if bool(keep.all()):
        return None
    queries = torch.arange(length, device=keep.device)[None, None, :, None] >= 0
    return queries & keep[:, None, None, :]


@contextlib.contextmanager
def skipped_initialisation() -> Iterator[None]:
    """Build modules without drawing their random initial weights (as transformers'
    ``no_init_weights``): the ``torch.nn.init`` functions do nothing inside the block.

    Why: drawing a BERT's initial weights took about half a second a model on this CPU, and
    they are overwritten at once; building on the meta device instead imports torch._dynamo
    and sympy (seconds). Not thread-safe: torch.nn.init is process-wide."""
    names = [n for n in dir(nn.init) if n.endswith("_") and not n.startswith("_")]
    saved = {n: getattr(nn.init, n) for n in names}
    for name in names:
        setattr(nn.init, name, _unchanged)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(nn.init, name, function)


def _unchanged(tensor: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
    return tensor


def read_json(path: Path) -> dict[str, Any]:
    """A model folder's JSON file (config, tokenizer files); a damaged one is a
    :class:`~e2e_linker.errors.UserError` naming the file, not a traceback."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as JSON ({exc})") from exc
    if not isinstance(data, dict):  # valid JSON of the wrong shape: name the file (issue 47)
        raise UserError(f"{path}: expected a JSON object ({{...}}), found "
                        f"{type(data).__name__ if data is not None else 'null'}")
    return data


def read_config(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The folder's ``config.json`` as a dict, or None if it has none (a hub name)."""
    path = Path(folder) / CONFIG_FILE
    return read_json(path) if path.is_file() else None


def checkpoint_dtype(config: dict[str, Any], state: dict[str, torch.Tensor]) -> torch.dtype:
    """The dtype transformers' ``dtype="auto"`` gives: the config's, else that of the
    checkpoint's first floating-point tensor (``state`` in the file's order)."""
    name = config.get("dtype") or config.get("torch_dtype")
    if isinstance(name, str) and hasattr(torch, name):
        return getattr(torch, name)
    return next((v.dtype for v in state.values() if v.is_floating_point()), torch.float32)


def load_bert(folder: str | os.PathLike, weights: bool = True) -> BertModel | None:
    """The folder's BERT as :class:`BertModel`, or None when it is not one this module runs
    exactly (no local config, another architecture, sharded weights): the caller then loads it
    with transformers. ``weights=False`` leaves the random initialisation (weights come later).
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    config = read_config(folder)
    if config is None or not supports(config):
        return None
    if weights and not (folder / WEIGHTS_FILE).is_file():
        return None
    if not weights:
        return BertModel(BertConfig.from_dict(config))
    state = {k.removeprefix("bert."): v for k, v in load_file(str(folder / WEIGHTS_FILE)).items()}
    with skipped_initialisation():  # every tensor comes from the file
        model = BertModel(BertConfig.from_dict(config))
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and not k.startswith("pooler.")]
    if missing:
        return None  # a layout this module does not know: transformers decides
    dtype = checkpoint_dtype(config, state)
    # a checkpoint without the pooler gets zeros (transformers draws random ones): never run
    model.load_state_dict({k: (state[k] if k in state else torch.zeros(v.shape)).to(dtype)
                           for k, v in expected.items()}, assign=True)
    return model.eval()
