"""The plain-torch BERT against transformers' BertModel: same weights, bit-identical states."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from e2e_linker.encoder.bert import (
    BertModel,
    load_bert,
    padding_mask,
    skipped_initialisation,
    supports,
)
from e2e_linker.encoder.text_encoder import TRANSFORMERS_ENV, TextEncoder, load_backbone
from e2e_linker.encoder.wordpiece import load_wordpiece

SHIPPED = "e2e_linker/default_model/encoder"
TEXTS = ["Cisplatin-induced nephrotoxicity", "a", "Long QT syndrome after haloperidol " * 9,
         "BRCA1 mutation carriers with breast and ovarian cancer"]


def transformers_model(folder):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), use_safetensors=True).float().eval()


def batch(folder, texts, max_length):
    return load_wordpiece(folder)(texts, padding=True, truncation=True, max_length=max_length,
                                  return_tensors="pt")


@pytest.mark.parametrize("which", ["tiny", "shipped"])
def test_hidden_states_are_bit_identical_to_transformers(which, tiny_dir):
    folder = tiny_dir if which == "tiny" else SHIPPED
    ours, theirs = load_bert(folder).float().eval(), transformers_model(folder)
    assert isinstance(ours, BertModel)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.inference_mode():
        for texts, length in ((TEXTS, 64), (TEXTS[:1], 16), (TEXTS * 5, 512)):
            enc = batch(folder, texts, length)
            for mask in (enc["attention_mask"], torch.ones_like(enc["attention_mask"])):
                a = ours(input_ids=enc["input_ids"], attention_mask=mask).last_hidden_state
                b = theirs(input_ids=enc["input_ids"], attention_mask=mask).last_hidden_state
                assert torch.equal(a, b)


def test_checkpoint_dtype_is_kept_as_transformers_keeps_it(tiny_dir):
    from transformers import AutoModel

    for folder in (SHIPPED, tiny_dir):  # fp16 and fp32 checkpoints
        assert load_bert(folder).dtype == AutoModel.from_pretrained(str(folder)).dtype


def test_padding_mask_is_none_without_padding_and_boolean_with():
    assert padding_mask(torch.ones(2, 5, dtype=torch.long), 5) is None
    mask = padding_mask(torch.tensor([[1, 1, 0], [1, 1, 1]]), 3)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 3, 3)
    assert mask[0, 0, :, 2].tolist() == [False] * 3 and bool(mask[1].all())


def test_a_saved_model_loads_in_transformers_with_the_same_states(tiny_dir, tmp_path):
    ours = load_bert(tiny_dir)
    ours.save_pretrained(tmp_path)
    theirs = transformers_model(tmp_path)
    enc = batch(tiny_dir, TEXTS, 32)
    with torch.inference_mode():
        assert torch.equal(ours(enc["input_ids"], enc["attention_mask"]).last_hidden_state,
                           theirs(input_ids=enc["input_ids"],
                                  attention_mask=enc["attention_mask"]).last_hidden_state)


def test_gradients_reach_every_layer_in_training(tiny_dir):
    model = load_bert(tiny_dir).train()
    enc = batch(tiny_dir, TEXTS, 32)
    model(enc["input_ids"], enc["attention_mask"]).last_hidden_state.sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters() if not n.startswith("pooler.")}
    assert all(g is not None and bool(g.abs().sum() > 0) for g in grads.values())


@pytest.mark.parametrize("change", [{"position_embedding_type": "relative_key"},
                                    {"is_decoder": True}, {"hidden_act": "gelu_new"},
                                    {"model_type": "roberta"}])
def test_configurations_it_does_not_reproduce_go_to_transformers(change, tiny_dir, tmp_path):
    config = json.loads((tiny_dir / "config.json").read_text())
    assert supports(config)
    assert not supports({**config, **change})
    folder = tmp_path / "other"
    folder.mkdir()
    for path in tiny_dir.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    assert load_bert(folder) is None


def test_the_escape_hatch_loads_through_transformers(tiny_dir, monkeypatch):
    assert isinstance(load_backbone(str(tiny_dir)), BertModel)
    monkeypatch.setenv(TRANSFORMERS_ENV, "1")
    model = load_backbone(str(tiny_dir))
    assert not isinstance(model, BertModel) and type(model).__name__ == "BertModel"
    assert type(TextEncoder.from_pretrained(str(tiny_dir)).tokenizer).__module__.startswith(
        "transformers")


def test_loading_a_bert_folder_imports_neither_transformers_nor_dynamo():
    """What makes start-up seconds faster (docs/decisions/0035-startup.md): a regression here would
    only show as a slower start."""
    code = ("import sys; from e2e_linker.encoder.text_encoder import TextEncoder; "
            f"e = TextEncoder.from_pretrained({SHIPPED!r}); e.encode(['aspirin']); "
            "print(sorted(m for m in ('transformers', 'torch._dynamo', 'sympy') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_initialisation_is_skipped_only_inside_the_block():
    before = torch.nn.init.normal_
    with skipped_initialisation():
        assert torch.nn.init.normal_ is not before
    assert torch.nn.init.normal_ is before
    assert float(torch.nn.Linear(64, 64).weight.detach().abs().sum()) > 0


def test_a_damaged_config_is_a_user_error_naming_the_file(tiny_dir, tmp_path):
    from e2e_linker.errors import UserError

    folder = tmp_path / "damaged"
    folder.mkdir()
    for path in tiny_dir.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "config.json").write_text('{"model_type": "bert", ')
    with pytest.raises(UserError, match="config.json: cannot read it as JSON"):
        load_bert(folder)
