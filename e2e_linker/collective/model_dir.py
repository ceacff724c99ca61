"""The collective model's directory: what ``linker export`` writes and ``linker annotate`` reads.
This module alone knows its file names::

    linker_config.json              LinkerConfig (architecture, threshold, types, KB spec)
    encoder/                        the mention encoder (Hugging Face folder, safetensors)
    entity_encoder/                 (optional) a separate entity tower
    heads.safetensors               span scorer and type head
    kb_manifest.json                the KB spec, its content hash and size
    kb_extra_names.tsv              names mined from the training corpora
    activation_absmax.safetensors   (optional) activation statistics for ``--quantize``
    normalizer.json                 the entity tower's pooling, so ``linker normalize`` can use it
    kb_index.safetensors            (optional) packed shortlist index of the KB's name vectors
                                    (``linker kb pack``; see e2e_linker.kb_search.packed_index)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from e2e_linker.defaults import DEFAULT_MODEL_DIR
from e2e_linker.errors import UserError

CONFIG_FILE = "linker_config.json"
HEADS_FILE = "heads.safetensors"
MANIFEST_FILE = "kb_manifest.json"
EXTRA_NAMES_FILE = "kb_extra_names.tsv"
#: written beside the model so that ``linker normalize --model DIR`` encodes names the same way
NORMALIZER_SETTINGS_FILE = "normalizer.json"


#: the packed shortlist index of the model's KB: first runs encode only the shortlisted names
PACKED_INDEX_FILE = "kb_index.safetensors"


def packed_index_file(directory: str | os.PathLike) -> Path:
    """Where a model directory keeps its packed KB index (the file may not exist)."""
    return Path(directory) / PACKED_INDEX_FILE


def read_json_object(path: str | os.PathLike) -> dict:
    """A model directory's JSON file that must hold one object (``{...}``).

    Why: a hand-edited or damaged file that is valid JSON of the wrong shape (``[]``, a
    string) otherwise fails later as an ``AttributeError`` that names no file; this is one
    :class:`UserError` naming the file and what it holds (issue 47, case 10).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object ({{...}}), found "
                        f"{type(data).__name__ if data is not None else 'null'}")
    return data


def read_manifest(directory: str | os.PathLike) -> dict:
    """The KB manifest of a model directory (empty when it has none)."""
    path = Path(directory) / MANIFEST_FILE
    return read_json_object(path) if path.is_file() else {}


#: Activation statistics of a model directory's mention encoder (safetensors).
STATS_FILE = "activation_absmax.safetensors"


def save_stats(stats: dict[str, torch.Tensor], directory: str | os.PathLike) -> Path:
    """Write activation statistics into a model directory (safetensors)."""
    from safetensors.torch import save_file

    path = Path(directory) / STATS_FILE
    save_file({k: v.contiguous() for k, v in stats.items()}, str(path))
    return path


def load_stats(directory: str | os.PathLike) -> dict[str, torch.Tensor] | None:
    """The model directory's activation statistics, or None if it has none."""
    from safetensors.torch import load_file

    path = Path(directory) / STATS_FILE
    return load_file(str(path)) if path.is_file() else None


def default_linker_dir() -> Path:
    """The embedded default model; a :class:`UserError` naming the fix when it is missing."""
    if not (DEFAULT_MODEL_DIR / CONFIG_FILE).is_file():
        raise UserError(f"no embedded default model at {DEFAULT_MODEL_DIR}; pass --model DIR")
    return DEFAULT_MODEL_DIR
