"""LoRA adapters (peft's): training starts from the base, merging equals the unmerged forward,
the saved adapter reloads to the same vectors (here and with plain ``peft``), adapters in the
package's earlier format still load to the same weights, mismatched bases are refused, and the
shipped normalizer adapter still merges to exactly the weights the old hand-written code gave
(the KB vector cache is keyed by them)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from e2e_linker.encoder.adapter import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    LEGACY_CONFIG,
    LEGACY_WEIGHTS,
    add_lora,
    apply_adapter,
    lora_names,
    lora_state,
    merge_lora,
    read_adapter_config,
    save_adapter,
    weights_hash,
)
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError

TEXTS = ["renal failure", "acetylsalicylic acid", "head pain"]


@pytest.fixture()
def tiny_dir(tmp_path_factory):
    from tests.helpers.tiny import tiny_encoder_dir

    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "encoder")


def _encoder(folder) -> TextEncoder:
    return TextEncoder.from_pretrained(str(folder), pooling="mean", max_length=16).eval()


def _perturb(model) -> None:
    torch.manual_seed(0)
    for name in lora_names(model):
        model.get_submodule(name).lora_B["default"].weight.data.normal_(0, 0.05)


def _trained_adapter(tiny_dir, directory, rank=4, alpha=8, dtype=torch.float16):
    adapted = _encoder(tiny_dir)
    add_lora(adapted.model, rank=rank, alpha=alpha)
    _perturb(adapted.model)
    save_adapter(adapted.model, directory, str(tiny_dir), tiny_dir, rank, alpha, dtype=dtype)
    return adapted


def _assert_same_weights(a, b) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert set(sa) == set(sb)
    assert all(torch.equal(sa[k], sb[k]) for k in sa), "merged weights differ"


def test_fresh_adapter_is_the_base_and_only_adapter_weights_train(tiny_dir):
    base, adapted = _encoder(tiny_dir), _encoder(tiny_dir)
    names = add_lora(adapted.model, rank=4, alpha=8)
    assert any(n.endswith("attention.self.query") for n in names)
    assert any(n.endswith("intermediate.dense") for n in names)
    assert not any("pooler" in n or "embeddings" in n for n in names)
    with torch.no_grad():
        assert torch.allclose(base.embed_texts(TEXTS), adapted.embed_texts(TEXTS), atol=1e-6)
    trainable = {n for n, p in adapted.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)


def test_merge_equals_unmerged_and_save_load_roundtrip(tiny_dir, tmp_path):
    adapted = _encoder(tiny_dir)
    add_lora(adapted.model, rank=4, alpha=8)
    _perturb(adapted.model)
    with torch.no_grad():
        unmerged = adapted.embed_texts(TEXTS)
    save_adapter(adapted.model, tmp_path / "adapter", str(tiny_dir), tiny_dir, 4, 8,
                 dtype=torch.float32)
    assert sorted(p.name for p in (tmp_path / "adapter").iterdir()) == [ADAPTER_CONFIG,
                                                                       ADAPTER_WEIGHTS]
    assert len(lora_state(adapted.model)) == 2 * len(lora_names(adapted.model))
    merge_lora(adapted.model)
    assert not lora_names(adapted.model)
    with torch.no_grad():
        assert torch.allclose(unmerged, adapted.embed_texts(TEXTS), atol=1e-5)
        reloaded = _encoder(tiny_dir)
        apply_adapter(reloaded.model, tmp_path / "adapter", tiny_dir)
        assert torch.allclose(unmerged, reloaded.embed_texts(TEXTS), atol=1e-5)
        assert not torch.allclose(unmerged, _encoder(tiny_dir).embed_texts(TEXTS), atol=1e-3)
    config = read_adapter_config(tmp_path / "adapter")
    assert config["base"] == str(tiny_dir) and config["base_sha256"] == weights_hash(tiny_dir)


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")  # inside peft
def test_the_adapter_loads_with_plain_peft_to_the_same_weights(tiny_dir, tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModel

    _trained_adapter(tiny_dir, tmp_path / "adapter")
    tensors = load_file(str(tmp_path / "adapter" / ADAPTER_WEIGHTS))
    assert {t.dtype for t in tensors.values()} == {torch.float16}
    assert all(k.startswith("base_model.model.") for k in tensors)
    ours = apply_adapter(_encoder(tiny_dir).model, tmp_path / "adapter", tiny_dir)
    plain = PeftModel.from_pretrained(AutoModel.from_pretrained(str(tiny_dir)),
                                      str(tmp_path / "adapter")).merge_and_unload()
    _assert_same_weights(ours, plain)


def test_a_legacy_format_adapter_still_loads_to_the_same_weights(tiny_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    _trained_adapter(tiny_dir, tmp_path / "peft")
    # the package's format before peft: "<module>.lora_A" keys and adapter.json
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    tensors = load_file(str(tmp_path / "peft" / ADAPTER_WEIGHTS))
    save_file({k.removeprefix("base_model.model.").removesuffix(".weight"): v
               for k, v in tensors.items()}, str(legacy / LEGACY_WEIGHTS))
    (legacy / LEGACY_CONFIG).write_text(json.dumps({
        "base": str(tiny_dir), "base_sha256": weights_hash(tiny_dir), "rank": 4, "alpha": 8,
        "targets": ["query", "key", "value", "dense"]}))
    from_legacy = apply_adapter(_encoder(tiny_dir).model, legacy, tiny_dir)
    from_peft = apply_adapter(_encoder(tiny_dir).model, tmp_path / "peft", tiny_dir)
    _assert_same_weights(from_legacy, from_peft)
    assert read_adapter_config(legacy)["base"] == str(tiny_dir)
    config = json.loads((legacy / LEGACY_CONFIG).read_text())
    config["rank"] = 3
    (legacy / LEGACY_CONFIG).write_text(json.dumps(config))
    with pytest.raises(UserError, match="does not fit"):
        apply_adapter(_encoder(tiny_dir).model, legacy, tiny_dir)


def test_adapter_refuses_other_base_weights(tiny_dir, tmp_path):
    adapted = _encoder(tiny_dir)
    add_lora(adapted.model, rank=2, alpha=4)
    save_adapter(adapted.model, tmp_path / "adapter", str(tiny_dir), tiny_dir, 2, 4)
    other = tmp_path / "other"
    shutil.copytree(tiny_dir, other)
    changed = _encoder(other)
    with torch.no_grad():
        next(changed.model.parameters()).add_(1.0)
    changed.save(other)
    with pytest.raises(UserError, match="other base weights"):
        apply_adapter(_encoder(other).model, tmp_path / "adapter", other)
    config = json.loads((tmp_path / "adapter" / ADAPTER_CONFIG).read_text())
    config["r"] = 3
    (tmp_path / "adapter" / ADAPTER_CONFIG).write_text(json.dumps(config))
    with pytest.raises(UserError, match="does not fit"):
        apply_adapter(_encoder(tiny_dir).model, tmp_path / "adapter", tiny_dir)
    with pytest.raises(UserError, match="no adapter"):
        apply_adapter(_encoder(tiny_dir).model, tmp_path, tiny_dir)


def test_the_shipped_adapter_merges_to_the_old_hand_written_weights():
    """W + ((B @ A) · α/r) in fp32 from the fp16 A/B, as the code before peft merged it: the
    default normalizer's weights, and so its KB cache key, must not move."""
    from safetensors.torch import load_file
    from transformers import AutoModel

    from e2e_linker.defaults import DEFAULT_NORMALIZER_DIR
    from e2e_linker.encoder.text_encoder import resolve_encoder_path

    folder = DEFAULT_NORMALIZER_DIR / "adapter"
    assert sorted(p.name for p in folder.iterdir()) == [ADAPTER_CONFIG, ADAPTER_WEIGHTS]
    assert (folder / ADAPTER_WEIGHTS).stat().st_size <= 2_000_000
    config = read_adapter_config(folder)
    base_folder = resolve_encoder_path(config["base"])
    assert config["base_sha256"] == weights_hash(base_folder)
    tensors = load_file(str(folder / ADAPTER_WEIGHTS))
    assert {t.dtype for t in tensors.values()} == {torch.float16}
    scale = config["lora_alpha"] / config["r"]
    expected = AutoModel.from_pretrained(base_folder, use_safetensors=True)
    with torch.no_grad():
        for key, a in tensors.items():
            if key.endswith(".lora_A.weight"):
                name = key.removeprefix("base_model.model.").removesuffix(".lora_A.weight")
                b = tensors[key.replace(".lora_A.", ".lora_B.")]
                weight = expected.get_submodule(name).weight
                weight += ((b.float() @ a.float()) * scale).to(weight.dtype)
    merged = apply_adapter(AutoModel.from_pretrained(base_folder, use_safetensors=True),
                           folder, base_folder)
    _assert_same_weights(expected, merged)
