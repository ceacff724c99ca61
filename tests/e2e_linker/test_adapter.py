"""LoRA adapters: training starts from the base, merging equals the unmerged forward, the
saved adapter reloads to the same vectors, and mismatched bases are refused."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from e2e_linker.encoder.adapter import (
    ADAPTER_CONFIG,
    LoRALinear,
    add_lora,
    apply_adapter,
    lora_state,
    merge_lora,
    save_adapter,
)
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError

TEXTS = ["renal failure", "acetylsalicylic acid", "head pain"]


@pytest.fixture()
def tiny_dir(tmp_path_factory):
    from tests.e2e_linker.tiny import tiny_encoder_dir

    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "encoder")


def _encoder(folder) -> TextEncoder:
    return TextEncoder.from_pretrained(str(folder), pooling="mean", max_length=16).eval()


def _perturb(model) -> None:
    torch.manual_seed(0)
    for module in model.modules():
        if isinstance(module, LoRALinear):
            module.lora_B.data.normal_(0, 0.05)


def test_fresh_adapter_is_the_base_and_only_adapter_weights_train(tiny_dir):
    base, adapted = _encoder(tiny_dir), _encoder(tiny_dir)
    names = add_lora(adapted.model, rank=4, alpha=8)
    assert any(n.endswith("attention.self.query") for n in names)
    assert any(n.endswith("intermediate.dense") for n in names)
    assert not any("pooler" in n for n in names)
    with torch.no_grad():
        assert torch.allclose(base.embed_texts(TEXTS), adapted.embed_texts(TEXTS), atol=1e-6)
    trainable = {n for n, p in adapted.named_parameters() if p.requires_grad}
    assert trainable and all(n.endswith(("lora_A", "lora_B")) for n in trainable)


def test_merge_equals_unmerged_and_save_load_roundtrip(tiny_dir, tmp_path):
    adapted = _encoder(tiny_dir)
    add_lora(adapted.model, rank=4, alpha=8)
    _perturb(adapted.model)
    with torch.no_grad():
        unmerged = adapted.embed_texts(TEXTS)
    save_adapter(adapted.model, tmp_path / "adapter", str(tiny_dir), tiny_dir, 4, 8,
                 dtype=torch.float32)
    assert len(lora_state(adapted.model)) == 2 * len(
        [m for m in adapted.model.modules() if isinstance(m, LoRALinear)])
    merge_lora(adapted.model)
    assert not any(isinstance(m, LoRALinear) for m in adapted.model.modules())
    with torch.no_grad():
        assert torch.allclose(unmerged, adapted.embed_texts(TEXTS), atol=1e-5)
        reloaded = _encoder(tiny_dir)
        apply_adapter(reloaded.model, tmp_path / "adapter", tiny_dir)
        assert torch.allclose(unmerged, reloaded.embed_texts(TEXTS), atol=1e-5)
        assert not torch.allclose(unmerged, _encoder(tiny_dir).embed_texts(TEXTS), atol=1e-3)


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
    config["rank"] = 3
    (tmp_path / "adapter" / ADAPTER_CONFIG).write_text(json.dumps(config))
    with pytest.raises((UserError, RuntimeError)):
        apply_adapter(_encoder(tiny_dir).model, tmp_path / "adapter", tiny_dir)
