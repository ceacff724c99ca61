"""`linker train --num-processes 2`: data-parallel on two CPU processes (gloo) ends with the
weights one process reaches on the same batches, up to floating-point noise.

A tiny random BERT with dropout off (dropout masks are the one thing drawn per process) trains
one epoch of six steps: shared encoder (candidate names encoded live, index refreshed and
hard negatives mined on the main process only) and frozen entity tower (KB vectors cached by
the main process, memory-mapped by the other).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from data_tools.formats import write_documents
from e2e_linker.console import VERBOSE_ENV
from tests.helpers.synthetic import CHEMICALS, DISEASES, synthetic_docs
from tests.helpers.tiny import tiny_encoder_dir


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("dp")
    tiny = tiny_encoder_dir(root / "tiny")
    config = json.loads((tiny / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (tiny / "config.json").write_text(json.dumps(config))
    kb = root / "kb.tsv"
    kb.write_text("".join(f"{cid}\t{names[0]}\t{'|'.join(names[1:])}\t{t}\n"
                          for table, t in ((CHEMICALS, "Chemical"), (DISEASES, "Disease"))
                          for cid, names in table.items()))
    train = root / "train.txt"
    write_documents(synthetic_docs(24), train)
    return root, tiny, kb, train


def _config(root: Path, tiny: Path, kb: Path, train: Path, frozen: bool) -> Path:
    model = {"encoder": str(tiny), "max_length": 64, "kb": f"tsv:{kb}"}
    if frozen:
        model.update(shared_encoder=False, entity_encoder=str(tiny),
                     freeze_entity_encoder=True, entity_pooling="mean")
    cfg = {"train": [str(train)], "dev": None, "kb": f"tsv:{kb}", "kb_corpus_names": [],
           "train_kb_corpus_names": [], "epochs": 1, "batch_size": 4, "lr": 1e-3,
           "head_lr": 1e-2, "n_random": 4, "n_hard": 2, "warmup_ratio": 0.0, "device": "cpu",
           "model": model}
    path = root / f"config_{'frozen' if frozen else 'shared'}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _train(config: Path, out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    # verbose: the progress lines the assertions count are off on a pipe by default
    env = {**os.environ, "E2E_LINKER_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           VERBOSE_ENV: "1"}
    result = subprocess.run([sys.executable, "-m", "e2e_linker", "train", str(config),
                             "--output-dir", str(out), *extra],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _weights(run: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out = {}
    for path in sorted(run.rglob("*.safetensors")):
        for key, value in load_file(path).items():
            out[f"{path.relative_to(run)}:{key}"] = value.float()
    return out


@pytest.mark.parametrize("frozen", [False, True], ids=["shared-encoder", "frozen-tower"])
def test_two_processes_reach_the_one_process_weights(inputs, tmp_path, frozen):
    root, tiny, kb, train = inputs
    config = _config(tmp_path, tiny, kb, train, frozen)
    _train(config, tmp_path / "one", tmp_path / "cache1")
    two = _train(config, tmp_path / "two", tmp_path / "cache2", "--num-processes", "2")
    assert two.stderr.count("best:") + two.stdout.count("best:") == 1  # the main process only
    one, both = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    assert one.keys() == both.keys() and one
    start = {f"encoder/{k}": v for k, v in _weights(tiny).items()}  # the untrained encoder
    moved = max((one[k] - start[k]).abs().max().item() for k in start if k in one)
    assert moved > 1e-3  # training did change the encoder
    worst = max((one[k] - both[k]).abs().max().item() for k in one)
    print(f"moved {moved:.3g}, worst difference {worst:.3g}")
    assert worst < 1e-4, worst
    if frozen:  # the KB vectors were encoded once, by the main process
        assert two.stderr.count("encoding KB names:   0%") == 1
