"""Resumable training state: what `linker train` needs to continue after an interruption.

A run on this project's 2-core machine takes longer than one working session, so the trainer
writes its whole state to ``OUTPUT_DIR/resume/`` at every epoch end and every
``checkpoint_minutes`` within an epoch, and a later ``linker train`` with the same config picks
it up: the model's weights, AdamW's moments, the schedule's position, every random generator
(so the rest of the run draws what an uninterrupted one would), the epoch's shuffled order and
hard negatives, and the dev history. Tensors go to safetensors and the rest to JSON: nothing
is ever unpickled. The folder is written beside the old one and swapped in by renames, so an
interruption while saving leaves the previous state readable.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from e2e_linker.errors import UserError

#: config keys that may differ between the interrupted run and its resumption: where and how
#: fast it runs, not what it computes
RUNTIME_KEYS = frozenset({"output_dir", "device", "num_threads", "cache_dir",
                          "checkpoint_minutes", "max_dev_docs",
                          # applied when the saved model annotates, never during training
                          # (model.threshold: the γ the run itself writes into the saved model)
                          "model.threshold", "model.lexical_gate", "model.short_forms",
                          "model.propagation_threshold", "model.dictionary_threshold",
                          "annotate_threshold", "annotate_max_span_len"})

STATE_FILE = "state.json"
WEIGHTS_FILE = "weights.safetensors"
TENSORS_FILE = "optimizer_rng_negatives.safetensors"


@dataclass
class TrainingState:
    """Where the loop stands: ``epoch`` is the loop iteration to run next, ``next_batch`` the
    first batch of that epoch's ``order`` not trained yet (0: the epoch starts from the top,
    validation and hard-negative mining included)."""

    epoch: int
    next_batch: int = 0
    order: list[int] = field(default_factory=list)
    hard: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    best: dict = field(default_factory=lambda: {"strict_f1": -1.0})


def resume_dir(output_dir: str | Path) -> Path:
    """The folder holding a run's resumable state."""
    return Path(output_dir) / "resume"


def _flat(config: dict) -> dict:
    """``{"model": {"types": ...}}`` as ``{"model.types": ...}`` (one level deep)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict) and key == "model":
            out |= {f"{key}.{k}": v for k, v in value.items()}
        else:
            out[key] = value
    return out


def config_differences(saved: dict, current: dict) -> list[str]:
    """Config keys whose values would change what the rest of the run computes."""
    saved, current = _flat(saved), _flat(current)
    keys = (set(saved) | set(current)) - RUNTIME_KEYS
    return sorted(k for k in keys if saved.get(k) != current.get(k))


def _hard_arrays(hard: dict[tuple[int, int], list[int]]) -> dict[str, torch.Tensor]:
    keys = sorted(hard)
    width = max((len(hard[k]) for k in keys), default=0)
    rows = np.full((len(keys), width), -1, dtype=np.int64)
    for n, k in enumerate(keys):
        rows[n, :len(hard[k])] = hard[k]
    return {"hard.keys": torch.tensor(keys, dtype=torch.int64).reshape(len(keys), 2),
            "hard.rows": torch.from_numpy(rows)}


def _hard_dict(tensors: dict[str, torch.Tensor]) -> dict[tuple[int, int], list[int]]:
    keys = tensors["hard.keys"].tolist()
    rows = tensors["hard.rows"].tolist()
    return {(k[0], k[1]): [r for r in row if r >= 0] for k, row in zip(keys, rows, strict=True)}


def save_training_state(output_dir: str | Path, model: torch.nn.Module, optimizer, scheduler,
                        state: TrainingState, config: dict) -> Path:
    """Write the resumable state under ``output_dir/resume`` (replacing the previous one)."""
    from safetensors.torch import save_file, save_model

    final = resume_dir(output_dir)
    partial = final.with_name("resume.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    save_model(model, str(partial / WEIGHTS_FILE))
    opt = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for param, slots in opt["state"].items():
        for slot, value in slots.items():
            value = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"optimizer.{param}.{slot}"] = value.detach().cpu().contiguous()
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for n, cuda_state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{n}"] = cuda_state
    np_state = np.random.get_state()
    tensors["rng.numpy"] = torch.from_numpy(np.asarray(np_state[1], dtype=np.int64))
    tensors |= _hard_arrays(state.hard)
    save_file(tensors, str(partial / TENSORS_FILE))
    py_version, py_internal, py_gauss = random.getstate()
    sched = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
    record = {
        "epoch": state.epoch, "next_batch": state.next_batch, "order": state.order,
        "history": state.history, "best": state.best, "config": config,
        "optimizer_param_groups": opt["param_groups"], "scheduler": sched,
        "rng": {"python": [py_version, list(py_internal), py_gauss],
                "numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])]},
    }
    (partial / STATE_FILE).write_text(json.dumps(record) + "\n")
    old = final.with_name("resume.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    partial.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def saved_state_exists(output_dir: str | Path) -> bool:
    """Whether ``output_dir`` holds a complete resumable state."""
    return (resume_dir(output_dir) / STATE_FILE).is_file()


def load_training_state(output_dir: str | Path, model: torch.nn.Module, optimizer, scheduler,
                        config: dict) -> TrainingState:
    """Restore the model, optimiser, schedule and random generators from ``output_dir/resume``
    and return where the loop stands; refuses a state written under a different config."""
    from safetensors.torch import load_file, load_model

    folder = resume_dir(output_dir)
    record = json.loads((folder / STATE_FILE).read_text())
    changed = config_differences(record["config"], config)
    if changed:
        raise UserError(f"{folder}: the saved run was trained with a different config "
                        f"({', '.join(changed)} changed); train with --restart to start over, "
                        "or restore the config to resume")
    load_model(model, str(folder / WEIGHTS_FILE))
    tensors = load_file(str(folder / TENSORS_FILE))
    opt_state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            _, param, slot = key.split(".", 2)
            opt_state.setdefault(int(param), {})[slot] = value
    groups = [group | {"betas": tuple(group["betas"])} if "betas" in group else group
              for group in record["optimizer_param_groups"]]
    optimizer.load_state_dict({"state": opt_state, "param_groups": groups})
    scheduler.load_state_dict(record["scheduler"] | {"lr_lambdas": [None] * len(groups)})
    torch.set_rng_state(tensors["rng.torch"])
    cuda_states = [tensors[k] for k in sorted(tensors) if k.startswith("rng.cuda.")]
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states)
    py_version, py_internal, py_gauss = record["rng"]["python"]
    random.setstate((py_version, tuple(py_internal), py_gauss))
    kind, pos, has_gauss, cached = record["rng"]["numpy"]
    np.random.set_state((kind, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss,
                         cached))
    return TrainingState(epoch=record["epoch"], next_batch=record["next_batch"],
                         order=record["order"], hard=_hard_dict(tensors),
                         history=record["history"], best=record["best"])


def discard_training_state(output_dir: str | Path) -> None:
    """Remove the resumable state (a finished run needs it no more)."""
    for name in ("resume", "resume.partial", "resume.old"):
        shutil.rmtree(Path(output_dir) / name, ignore_errors=True)
