"""Low-rank adapters (LoRA) for the text encoder: a fine-tuned encoder in ~1 MB, not ~45 MB.

Why: the package ships its models inside the wheel and the repository keeps all weights under
50 MB. A fully fine-tuned MiniLM is 45 MB in fp16, so a second one (the normalizer next to the
collective model) does not fit; a rank-16 adapter on every linear map of every layer is about
1.3 MB and trains as well for name matching (Hu et al. 2022). The base weights come from the
packaged base encoder, which every install already has; the adapter records the base's hash so
that it is never applied to other weights.

The LoRA layers, their merge and the files are the ``peft`` library's, so an adapter folder
(``adapter_config.json`` + ``adapter_model.safetensors``, fp16) also loads with plain
``peft.PeftModel.from_pretrained(AutoModel.from_pretrained(base), folder)``. What peft does not
keep, the sha256 of the base weights, rides in the safetensors header metadata, which peft
ignores. Folders in this package's earlier format (``adapter.json`` + ``adapter.safetensors``)
still load: they are converted in memory. ``python -m eval.adapter_peft`` (at 94e8e08, docs/history.md) showed that peft's
merge gives the same weights, bit for bit, as the hand-written LoRA it replaced.

The adapter is merged into the base weights when loaded (``W += (α/r)·B·A``), so inference runs
at the plain encoder's speed. Only safetensors are read or written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import torch
from torch import nn

from e2e_linker.errors import UserError

#: peft's file names (``peft.utils.CONFIG_NAME`` / ``SAFETENSORS_WEIGHTS_NAME``)
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: this package's format before peft, still read
LEGACY_CONFIG = "adapter.json"
LEGACY_WEIGHTS = "adapter.safetensors"
#: linear maps adapted by default: attention q/k/v/output and both feed-forward maps
DEFAULT_TARGETS = ("query", "key", "value", "dense")
#: safetensors header key holding the base weights' sha256 (see :func:`weights_hash`)
BASE_SHA256_KEY = "e2e_linker.base_sha256"
#: how a PeftModel names the wrapped model's modules in the saved adapter
_PEFT_PREFIX = "base_model.model."


def target_pattern(targets: tuple[str, ...] = DEFAULT_TARGETS) -> str:
    """peft ``target_modules`` regex for the linear maps inside the transformer layers whose
    last name component is one of ``targets`` (the pooler and embeddings are left alone)."""
    names = "|".join(re.escape(t) for t in targets)
    return rf"(?:.*\.)?layer\.(?:.*\.)?(?:{names})"


def lora_config(rank: int, alpha: float, targets: tuple[str, ...] = DEFAULT_TARGETS,
                base: str | None = None):
    """The ``peft.LoraConfig`` of a rank-``rank`` adapter (no dropout, no bias)."""
    from peft import LoraConfig

    if rank < 1:
        raise ValueError("LoRA rank must be ≥ 1")
    return LoraConfig(r=rank, lora_alpha=alpha, target_modules=target_pattern(targets),
                      lora_dropout=0.0, bias="none", base_model_name_or_path=base)


def lora_names(model: nn.Module) -> list[str]:
    """Names of the modules of ``model`` that carry LoRA layers."""
    from peft.tuners.lora import LoraLayer

    return [name for name, module in model.named_modules() if isinstance(module, LoraLayer)]


def _inject(model: nn.Module, config) -> list[str]:
    from peft import inject_adapter_in_model

    for p in model.parameters():
        p.requires_grad_(False)
    try:
        inject_adapter_in_model(config, model)
    except ValueError as exc:  # peft: "Target modules ... not found in the base model"
        raise ValueError(f"no LoRA target layers ({config.target_modules}) in the model: "
                         f"{exc}") from exc
    return lora_names(model)


def add_lora(model: nn.Module, rank: int = 16, alpha: float = 32.0,
             targets: tuple[str, ...] = DEFAULT_TARGETS) -> list[str]:
    """Freeze ``model`` and give its target linear maps peft LoRA layers (in place).

    B starts at zero, so training starts from exactly the base model. Returns the adapted
    names; afterwards only the adapter parameters require gradients.
    """
    return _inject(model, lora_config(rank, alpha, targets))


def lora_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter tensors as peft saves them: ``base_model.model.<module>.lora_A.weight``."""
    from peft import get_peft_model_state_dict

    # save_embedding_layers=False: "auto" would look the base up on the Hub (no embedding
    # layer is adapted here anyway)
    state = get_peft_model_state_dict(model, save_embedding_layers=False)
    return {_PEFT_PREFIX + key: value.detach().cpu().contiguous() for key, value in state.items()}


def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every LoRA layer into its base linear map and drop the LoRA layers (in place)."""
    for name in lora_names(model):
        layer = model.get_submodule(name)
        layer.merge()
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, layer.get_base_layer())
    if hasattr(model, "peft_config"):
        del model.peft_config
    return model


def weights_hash(folder: str | os.PathLike) -> str:
    """sha256 of a model folder's safetensors files (in name order)."""
    digest = hashlib.sha256()
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        raise UserError(f"{folder}: no safetensors weights")
    for file in files:
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def save_adapter(model: nn.Module, directory: str | os.PathLike, base: str,
                 base_folder: str | os.PathLike, rank: int, alpha: float,
                 targets: tuple[str, ...] = DEFAULT_TARGETS, dtype: torch.dtype = torch.float16
                 ) -> Path:
    """Write ``adapter_model.safetensors`` (fp16 by default) and ``adapter_config.json``.

    ``base`` is how to find the base encoder again (a name such as ``all-MiniLM-L6-v2`` or a
    path; peft's ``base_model_name_or_path``); ``base_folder`` is where it was loaded from,
    hashed into the weights' metadata so a mismatch is caught.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(dtype) for k, v in lora_state(model).items()}
    save_file(tensors, str(directory / ADAPTER_WEIGHTS),
              metadata={"format": "pt", BASE_SHA256_KEY: weights_hash(base_folder)})
    config = lora_config(rank, alpha, targets, base)
    config.inference_mode = True
    config.save_pretrained(str(directory))
    for legacy in (LEGACY_CONFIG, LEGACY_WEIGHTS):  # never leave two formats side by side
        (directory / legacy).unlink(missing_ok=True)
    return directory


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read adapter config ({exc})") from exc


def read_adapter_config(directory: str | os.PathLike) -> dict:
    """The adapter's config as a dict; ``base`` and ``base_sha256`` are filled in either format
    (``base_sha256`` is ``None`` when the adapter does not record it)."""
    directory = Path(directory)
    if (directory / ADAPTER_CONFIG).is_file():
        config = _read_json(directory / ADAPTER_CONFIG)
        config["base"] = config.get("base_model_name_or_path")
        config["base_sha256"] = _metadata(directory / ADAPTER_WEIGHTS).get(BASE_SHA256_KEY)
        return config
    if (directory / LEGACY_CONFIG).is_file():
        return _read_json(directory / LEGACY_CONFIG)
    raise UserError(f"{directory}: no adapter ({ADAPTER_CONFIG}, or the older {LEGACY_CONFIG})")


def _metadata(path: Path) -> dict:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return handle.metadata() or {}
    except Exception as exc:  # missing file, or safetensors' own error types
        raise UserError(f"{path}: cannot read adapter weights ({exc})") from exc


def read_adapter(directory: str | os.PathLike) -> tuple[object, dict[str, torch.Tensor], dict]:
    """``(peft LoraConfig, tensors keyed as peft saves them, config dict)`` of either format."""
    from peft import LoraConfig
    from safetensors.torch import load_file

    directory = Path(directory)
    config = read_adapter_config(directory)
    if (directory / ADAPTER_CONFIG).is_file():
        weights = directory / ADAPTER_WEIGHTS
        try:
            lora = LoraConfig.from_pretrained(str(directory))
        except (TypeError, ValueError) as exc:
            raise UserError(f"{directory / ADAPTER_CONFIG}: not a LoRA config ({exc})") from exc
        legacy = False
    else:  # legacy: "<module>.lora_A" keys, rank/alpha/targets fields
        weights = directory / LEGACY_WEIGHTS
        try:
            lora = lora_config(int(config["rank"]), float(config["alpha"]),
                               tuple(config.get("targets", DEFAULT_TARGETS)), config.get("base"))
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{directory / LEGACY_CONFIG}: bad adapter config ({exc})") from exc
        legacy = True
    try:
        tensors = load_file(str(weights))
    except Exception as exc:  # missing file or not safetensors
        raise UserError(f"{weights}: cannot read adapter weights ({exc})") from exc
    if legacy:
        tensors = {f"{_PEFT_PREFIX}{k}.weight": v for k, v in tensors.items()}
    return lora, tensors, config


def apply_adapter(model: nn.Module, directory: str | os.PathLike, base_folder: str | os.PathLike
                  ) -> nn.Module:
    """Merge the adapter in ``directory`` into ``model`` (loaded from ``base_folder``).

    Refuses an adapter trained on other base weights, and one whose tensors do not match the
    model's layers, with an error that says which.
    """
    from peft import set_peft_model_state_dict

    directory = Path(directory)
    lora, tensors, config = read_adapter(directory)
    expected_hash = config.get("base_sha256")
    if expected_hash and expected_hash != weights_hash(base_folder):
        raise UserError(f"{directory}: adapter was trained on other base weights than "
                        f"{base_folder} (base '{config.get('base')}')")
    try:
        _inject(model, lora)
    except ValueError as exc:
        raise UserError(f"{directory}: adapter does not fit the base model ({exc})") from exc
    expected = lora_state(model)
    missing = sorted(set(expected) - set(tensors))[:3]
    extra = sorted(set(tensors) - set(expected))[:3]
    wrong = sorted(k for k in set(expected) & set(tensors)
                   if expected[k].shape != tensors[k].shape)[:3]
    if missing or extra or wrong:
        raise UserError(f"{directory}: adapter does not fit the base model (missing {missing}, "
                        f"unexpected {extra}, wrong shape {wrong})")
    set_peft_model_state_dict(model, {k[len(_PEFT_PREFIX):]: v for k, v in tensors.items()})
    merge_lora(model)
    for p in model.parameters():
        p.requires_grad_(True)
    return model
