"""Does the ``peft`` library's LoRA give the same encoder as the hand-written LoRA it replaced?

    python -m eval.adapter_peft [--repeats 5] [--threads 1] [--out eval/results/adapter_peft]

Why: ``e2e_linker.encoder.adapter`` used to carry its own LoRA layer and merge; it now uses
peft's, so that the saved adapters load in the Hugging Face ecosystem. The switch is only
allowed if the default normalizer's merged weights stay bit-identical, because the KB vector
cache is keyed by a hash of them (``kb_search.cache.encoder_fingerprint``) and ``linker
normalize`` output must not change. This script keeps the old code's arithmetic
(:func:`legacy_apply`, copied from it) and compares it with the shipped adapter merged

* by this package's loader (``apply_adapter``: peft layers, peft's merge), and
* by plain peft, as a Hugging Face user would (``PeftModel.from_pretrained(base, folder)
  .merge_and_unload()``),

on every ``state_dict`` tensor (max abs difference, ``torch.equal``), on the cache fingerprint,
on the unmerged training forward and its gradients (same A/B, old layer vs peft's), and on the
seconds to load and merge each way (rounds interleaved; the import of peft timed apart, in a
fresh interpreter that has already imported torch and transformers).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from eval.reporting import command_line, write_results

RESULTS = Path(__file__).parent / "results" / "adapter_peft"
TEXTS = ["renal failure", "acetylsalicylic acid", "head pain", "Parkinson's disease",
         "5-fluorouracil induced cardiotoxicity", "hypotension", "non-small cell lung cancer"]


# --- the hand-written LoRA as it was before peft (arithmetic unchanged) -----------------------

class LegacyLoRALinear(nn.Module):
    """``base(x) + (α/r)·B(A(x))``, merged as ``W += ((B @ A) * (α/r)).to(W.dtype)``."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        self.scale = alpha / rank
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        for p in self.base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale

    def merged(self) -> nn.Linear:
        with torch.no_grad():
            delta = (self.lora_B @ self.lora_A) * self.scale
            self.base.weight += delta.to(self.base.weight.dtype)
        return self.base


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, module)


def legacy_wrap(model: nn.Module, tensors: dict[str, torch.Tensor], rank: int, alpha: float,
                targets: tuple[str, ...]) -> list[str]:
    """The old ``add_lora`` + tensor loading: wrap the target maps, copy A/B in as fp32."""
    for p in model.parameters():
        p.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)
             and ".layer." in f".{n}" and n.rsplit(".", 1)[-1] in targets]
    for name in names:
        layer = LegacyLoRALinear(model.get_submodule(name), rank, alpha)
        with torch.no_grad():
            layer.lora_A.copy_(tensors[f"{name}.lora_A"].float())
            layer.lora_B.copy_(tensors[f"{name}.lora_B"].float())
        _set(model, name, layer)
    return names


def legacy_apply(model: nn.Module, tensors: dict[str, torch.Tensor], rank: int, alpha: float,
                 targets: tuple[str, ...]) -> nn.Module:
    """The old ``apply_adapter`` after its checks: wrap, load, merge every layer."""
    for name in legacy_wrap(model, tensors, rank, alpha, targets):
        _set(model, name, model.get_submodule(name).merged())
    for p in model.parameters():
        p.requires_grad_(True)
    return model


# --- measurements -------------------------------------------------------------------------

def legacy_tensors(peft_tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """peft file keys (``base_model.model.X.lora_A.weight``) → the old keys (``X.lora_A``)."""
    prefix, suffix = "base_model.model.", ".weight"
    return {k[len(prefix):-len(suffix)]: v for k, v in peft_tensors.items()}


def compare(reference: nn.Module, other: nn.Module) -> dict:
    a, b = reference.state_dict(), other.state_dict()
    same_keys = set(a) == set(b)
    diffs = [float((a[k].float() - b[k].float()).abs().max()) for k in a if k in b]
    return {"same_keys": same_keys, "tensors": len(a),
            "bit_identical": same_keys and all(torch.equal(a[k], b[k]) for k in a),
            "max_abs_diff": max(diffs)}


def peft_folder(adapter_dir: Path, scratch: Path) -> Path:
    """``adapter_dir`` if it is in peft's format, else a peft-format copy written to ``scratch``."""
    from safetensors.torch import save_file

    from e2e_linker.encoder.adapter import ADAPTER_CONFIG, ADAPTER_WEIGHTS, read_adapter

    if (adapter_dir / ADAPTER_CONFIG).is_file():
        return adapter_dir
    lora, tensors, _ = read_adapter(adapter_dir)
    scratch.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(scratch / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    lora.save_pretrained(str(scratch))
    return scratch


def forward_check(base_folder: str, tensors: dict[str, torch.Tensor], rank: int,
                  alpha: float, targets: tuple[str, ...]) -> dict:
    """Unmerged forward + backward with the same A/B: the old layer vs peft's, set up as
    training sets it up (``add_lora``'s config, not the saved one's inference mode)."""
    from peft import inject_adapter_in_model, set_peft_model_state_dict

    from e2e_linker.encoder.adapter import lora_config
    from e2e_linker.encoder.text_encoder import TextEncoder

    lora = lora_config(rank, alpha, targets)

    old = TextEncoder.from_pretrained(base_folder, pooling="mean", max_length=32)
    legacy_wrap(old.model, legacy_tensors(tensors), rank, alpha, targets)
    new = TextEncoder.from_pretrained(base_folder, pooling="mean", max_length=32)
    for p in new.model.parameters():
        p.requires_grad_(False)
    inject_adapter_in_model(lora, new.model)
    set_peft_model_state_dict(new.model, {k[len("base_model.model."):]: v
                                          for k, v in tensors.items()})
    old.eval()  # dropout off (it would draw differently in each); gradients still flow
    new.eval()
    out_old, out_new = old.embed_texts(TEXTS), new.embed_texts(TEXTS)
    (out_old @ out_old.t()).sum().backward()
    (out_new @ out_new.t()).sum().backward()
    grad_diff = 0.0
    for name, module in old.model.named_modules():
        if isinstance(module, LegacyLoRALinear):
            peft_layer = new.model.get_submodule(name)
            for part in ("lora_A", "lora_B"):
                g_old = getattr(module, part).grad
                g_new = getattr(peft_layer, part)["default"].weight.grad
                grad_diff = max(grad_diff, float((g_old - g_new).abs().max()))
    out_old, out_new = out_old.detach(), out_new.detach()
    return {"forward_max_abs_diff": float((out_old - out_new).abs().max()),
            "forward_bit_identical": bool(torch.equal(out_old, out_new)),
            "grad_max_abs_diff": grad_diff,
            "vector_max_abs": float(out_old.abs().max())}


def peft_import_seconds(base_folder: str) -> float:
    """``import peft`` in a fresh interpreter that has already loaded the base encoder (as
    ``load_model`` has when it reaches the adapter)."""
    code = ("import time\nfrom transformers import AutoModel\n"
            f"AutoModel.from_pretrained({base_folder!r}, use_safetensors=True)\n"
            "t = time.perf_counter()\nimport peft\nprint(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="load+merge rounds each way")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    import peft
    import transformers
    from peft import PeftModel
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from e2e_linker.defaults import DEFAULT_NORMALIZER_DIR
    from e2e_linker.encoder.adapter import (
        ADAPTER_WEIGHTS,
        LEGACY_WEIGHTS,
        apply_adapter,
        read_adapter,
        read_adapter_config,
        weights_hash,
    )
    from e2e_linker.encoder.text_encoder import TextEncoder, resolve_encoder_path
    from e2e_linker.kb_search.cache import encoder_fingerprint
    from e2e_linker.normalizer.normalizer_dir import ADAPTER_DIR, load_model

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers, inside peft
    adapter_dir = DEFAULT_NORMALIZER_DIR / ADAPTER_DIR
    config = read_adapter_config(adapter_dir)
    base_folder = resolve_encoder_path(config["base"])
    lora, tensors, _ = read_adapter(adapter_dir)
    rank, alpha = int(lora.r), float(lora.lora_alpha)
    targets = ("query", "key", "value", "dense")
    old_tensors = legacy_tensors(tensors)

    def base_model():
        return AutoModel.from_pretrained(base_folder, use_safetensors=True)

    def load_legacy():  # as the old apply_adapter: read the file, check the base hash, merge
        from safetensors.torch import load_file

        model = base_model()
        if (adapter_dir / ADAPTER_WEIGHTS).is_file():
            file_tensors = legacy_tensors(load_file(str(adapter_dir / ADAPTER_WEIGHTS)))
        else:
            file_tensors = load_file(str(adapter_dir / LEGACY_WEIGHTS))
        if weights_hash(base_folder) != config["base_sha256"]:
            raise SystemExit("the shipped adapter does not match its base")
        return legacy_apply(model, file_tensors, rank, alpha, targets)

    def load_ours():
        return apply_adapter(base_model(), adapter_dir, base_folder)

    with tempfile.TemporaryDirectory() as scratch:
        folder = peft_folder(adapter_dir, Path(scratch) / "peft")

        def load_plain_peft():
            return PeftModel.from_pretrained(base_model(), str(folder)).merge_and_unload()

        reference = load_legacy()
        ours = compare(reference, load_ours())
        plain = compare(reference, load_plain_peft())
        seconds: dict[str, list[float]] = {"legacy": [], "apply_adapter": [], "plain_peft": []}
        for _ in range(args.repeats):
            for key, load in (("legacy", load_legacy), ("apply_adapter", load_ours),
                              ("plain_peft", load_plain_peft)):
                start = time.perf_counter()
                load()
                seconds[key].append(time.perf_counter() - start)

    encoder, settings = load_model(DEFAULT_NORMALIZER_DIR)
    legacy_encoder = TextEncoder.from_pretrained(base_folder, pooling=settings.pooling,
                                                 max_length=settings.max_length)
    legacy_apply(legacy_encoder.model, old_tensors, rank, alpha, targets)
    fingerprints = {"legacy": encoder_fingerprint(legacy_encoder.eval()),
                    "load_model": encoder_fingerprint(encoder)}
    forward = forward_check(base_folder, tensors, rank, alpha, targets)

    result = {
        "command": command_line("adapter_peft", argv),
        "adapter": str(adapter_dir.relative_to(Path(__file__).resolve().parents[1]))
        if adapter_dir.is_relative_to(Path(__file__).resolve().parents[1]) else str(adapter_dir),
        "adapter_files": sorted(p.name for p in adapter_dir.iterdir()),
        "rank": rank, "alpha": alpha,
        "merged_apply_adapter_vs_legacy": ours,
        "merged_plain_peft_vs_legacy": plain,
        "cache_fingerprint": {**fingerprints,
                              "equal": fingerprints["legacy"] == fingerprints["load_model"]},
        "training_forward_legacy_vs_peft": forward,
        "load_merge_seconds": {k: {"median": round(statistics.median(v), 4),
                                   "min": round(min(v), 4)} for k, v in seconds.items()},
        "import_peft_seconds": round(peft_import_seconds(base_folder), 3),
        "repeats": args.repeats, "threads": args.threads,
        "machine": platform.processor() or platform.machine(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "python": platform.python_version()},
    }
    s = result["load_merge_seconds"]

    def yes(flag: bool) -> str:
        return "yes" if flag else "**no**"

    table = "\n".join([
        f"# peft LoRA vs the hand-written LoRA ({result['adapter']}, r={rank}, α={alpha:g})",
        "",
        f"`{result['command'].strip()}` — machine `{result['machine']}`, {args.threads} torch "
        f"thread(s), torch {torch.__version__}, transformers {transformers.__version__}, "
        f"peft {peft.__version__}",
        "",
        "| merged encoder vs the old merge | max abs diff | bit-identical | load+merge s "
        "(median / min) |",
        "|---|---:|:---:|---:|",
        f"| old hand-written merge (reference) | 0 | — | {s['legacy']['median']:.3f} / "
        f"{s['legacy']['min']:.3f} |",
        f"| `apply_adapter` (peft layers + merge) | {ours['max_abs_diff']:.3g} | "
        f"{yes(ours['bit_identical'])} | {s['apply_adapter']['median']:.3f} / "
        f"{s['apply_adapter']['min']:.3f} |",
        f"| plain `PeftModel.from_pretrained(...).merge_and_unload()` | "
        f"{plain['max_abs_diff']:.3g} | {yes(plain['bit_identical'])} | "
        f"{s['plain_peft']['median']:.3f} / {s['plain_peft']['min']:.3f} |",
        "",
        f"- KB cache fingerprint: old merge `{fingerprints['legacy']}`, `load_model()` "
        f"`{fingerprints['load_model']}` — equal: "
        f"{yes(result['cache_fingerprint']['equal'])}",
        f"- training forward (unmerged, same A/B, {len(TEXTS)} names, dropout off): max abs "
        f"diff of the vectors {forward['forward_max_abs_diff']:.3g} (bit-identical: "
        f"{yes(forward['forward_bit_identical'])}; vectors up to "
        f"{forward['vector_max_abs']:.3g}), of the A/B gradients "
        f"{forward['grad_max_abs_diff']:.3g}",
        f"- `import peft` once the base encoder is loaded: {result['import_peft_seconds']:.3f} s "
        f"(paid once per process, on the first adapter load; not in the seconds above)",
        "- load+merge = base `AutoModel.from_pretrained` + reading the adapter + merging; the "
        "old path and `apply_adapter` also hash the base weights (sha256 check), plain peft "
        "does not",
        "",
    ])
    write_results(args.out, result, table)
    return result


if __name__ == "__main__":
    main()
