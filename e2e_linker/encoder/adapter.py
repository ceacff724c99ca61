"""Low-rank adapters (LoRA) for the text encoder: a fine-tuned encoder in ~1 MB, not ~45 MB.

Why: the package ships its models inside the wheel and the repository keeps all weights under
50 MB. A fully fine-tuned MiniLM is 45 MB in fp16, so a second one (the normalizer next to the
collective model) does not fit; a rank-16 adapter on every linear map of every layer is about
1.3 MB and trains as well for name matching (Hu et al. 2022). The base weights come from the
packaged base encoder, which every install already has; the adapter records the base's hash so
that it is never applied to other weights.

The adapter is merged into the base weights when loaded (``W += (α/r)·B·A``), so inference runs
at the plain encoder's speed. Only safetensors are read or written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import torch
from torch import nn

from e2e_linker.errors import UserError

ADAPTER_WEIGHTS = "adapter.safetensors"
ADAPTER_CONFIG = "adapter.json"
#: linear maps adapted by default: attention q/k/v/output and both feed-forward maps
DEFAULT_TARGETS = ("query", "key", "value", "dense")


class LoRALinear(nn.Module):
    """``base(x) + (α/r)·B(A(x))`` with ``base`` frozen; B starts at zero, so training starts
    from exactly the base model."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        if rank < 1:
            raise ValueError("LoRA rank must be ≥ 1")
        self.base = base
        self.rank = rank
        self.scale = alpha / rank
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        for p in self.base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale

    def merged(self) -> nn.Linear:
        """The base linear map with the update folded in (for inference and export)."""
        with torch.no_grad():
            delta = (self.lora_B @ self.lora_A) * self.scale
            self.base.weight += delta.to(self.base.weight.dtype)
        return self.base


def _targets(model: nn.Module, targets: tuple[str, ...]) -> list[str]:
    """Names of the linear maps to adapt: those in the transformer layers whose last name
    component is one of ``targets`` (the pooler and embeddings are left alone)."""
    names = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and ".layer." in f".{name}" \
                and name.rsplit(".", 1)[-1] in targets:
            names.append(name)
    return names


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, module)


def add_lora(model: nn.Module, rank: int = 16, alpha: float = 32.0,
             targets: tuple[str, ...] = DEFAULT_TARGETS) -> list[str]:
    """Freeze ``model`` and wrap its target linear maps in :class:`LoRALinear`.

    Returns the wrapped names; afterwards only the adapter parameters require gradients.
    """
    for p in model.parameters():
        p.requires_grad_(False)
    names = _targets(model, targets)
    if not names:
        raise ValueError(f"no linear layers named {targets} inside transformer layers")
    for name in names:
        _set(model, name, LoRALinear(model.get_submodule(name), rank, alpha))
    return names


def lora_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter tensors, keyed ``<module>.lora_A`` / ``<module>.lora_B``."""
    return {f"{name}.{part}": getattr(module, part).detach().cpu().contiguous()
            for name, module in model.named_modules() if isinstance(module, LoRALinear)
            for part in ("lora_A", "lora_B")}


def merge_lora(model: nn.Module) -> nn.Module:
    """Replace every :class:`LoRALinear` by its merged linear map (in place)."""
    for name, module in list(model.named_modules()):
        if isinstance(module, LoRALinear):
            _set(model, name, module.merged())
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
    """Write ``adapter.safetensors`` (fp16 by default) and ``adapter.json``.

    ``base`` is how to find the base encoder again (a name such as ``all-MiniLM-L6-v2`` or a
    path); ``base_folder`` is where it was loaded from, hashed so a mismatch is caught.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(dtype) for k, v in lora_state(model).items()}
    save_file(tensors, str(directory / ADAPTER_WEIGHTS))
    config = {"base": base, "base_sha256": weights_hash(base_folder), "rank": rank,
              "alpha": alpha, "targets": list(targets)}
    (directory / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n",
                                            encoding="utf-8")
    return directory


def read_adapter_config(directory: str | os.PathLike) -> dict:
    path = Path(directory) / ADAPTER_CONFIG
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read adapter config ({exc})") from exc


def apply_adapter(model: nn.Module, directory: str | os.PathLike, base_folder: str | os.PathLike
                  ) -> nn.Module:
    """Merge the adapter in ``directory`` into ``model`` (loaded from ``base_folder``).

    Refuses an adapter trained on other base weights, and one whose tensors do not match the
    model's layers, with an error that says which.
    """
    from safetensors.torch import load_file

    directory = Path(directory)
    config = read_adapter_config(directory)
    expected = config.get("base_sha256")
    if expected and expected != weights_hash(base_folder):
        raise UserError(f"{directory}: adapter was trained on other base weights than "
                        f"{base_folder} (base '{config.get('base')}')")
    rank, alpha = int(config["rank"]), float(config["alpha"])
    targets = tuple(config.get("targets", DEFAULT_TARGETS))
    tensors = load_file(str(directory / ADAPTER_WEIGHTS))
    wrapped = add_lora(model, rank, alpha, targets)
    expected_keys = {f"{n}.{p}" for n in wrapped for p in ("lora_A", "lora_B")}
    if set(tensors) != expected_keys:
        missing = sorted(expected_keys - set(tensors))[:3]
        extra = sorted(set(tensors) - expected_keys)[:3]
        raise UserError(f"{directory}: adapter does not fit the base model "
                        f"(missing {missing}, unexpected {extra})")
    for name in wrapped:
        module = model.get_submodule(name)
        with torch.no_grad():
            module.lora_A.copy_(tensors[f"{name}.lora_A"].float())
            module.lora_B.copy_(tensors[f"{name}.lora_B"].float())
    merge_lora(model)
    for p in model.parameters():
        p.requires_grad_(True)
    return model
