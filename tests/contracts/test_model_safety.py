"""Model directories: safetensors only, pickles refused unexecuted, damage and KB mismatch named.

Every case runs `linker annotate` and expects exit code 2 with one line naming the problem;
the pickles carry a real payload (it would create a file) to prove nothing was unpickled.
"""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
from click.testing import CliRunner

from data_tools.formats import write_documents
from e2e_linker.cli import main
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_linker_dir


class _Payload:
    """Unpickling this creates the file ``path``."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return tiny_linker_dir(tmp_path_factory.mktemp("safety"))[0]


@pytest.fixture()
def model(pristine, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(pristine, copy)
    return copy


def _annotate(model_dir, tmp_path, *extra: str):
    write_documents(synthetic_docs(2), tmp_path / "in.txt")
    out = tmp_path / "out" / "o.txt"
    result = CliRunner().invoke(main, ["annotate", str(tmp_path / "in.txt"), "-o", str(out),
                                       "--model", str(model_dir), *extra],
                                env={"E2E_LINKER_CACHE": str(tmp_path / "cache")})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert not out.exists()
    assert result.exit_code == 2, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "Traceback" not in result.stderr
    return last


def test_pickle_inside_the_model_is_refused_and_never_run(model, tmp_path):
    marker = tmp_path / "PWNED"
    (model / "encoder" / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(str(marker))))
    line = _annotate(model, tmp_path)
    assert "refusing pickle files pytorch_model.bin" in line and not marker.exists()


def test_external_encoder_with_pickle_weights_only_is_refused(model, tmp_path):
    marker = tmp_path / "PWNED"
    outside = tmp_path / "outside_encoder"
    config = json.loads((model / "linker_config.json").read_text())
    shutil.copytree(config["entity_encoder"], outside)
    (outside / "model.safetensors").unlink()
    (outside / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(str(marker))))
    config["entity_encoder"] = str(outside)
    (model / "linker_config.json").write_text(json.dumps(config))
    shutil.rmtree(model / "entity_encoder", ignore_errors=True)  # make it load from outside
    line = _annotate(model, tmp_path)
    assert "pickle" in line and not marker.exists()


@pytest.mark.parametrize("damage,message", [
    (lambda m: (m / "heads.safetensors").write_bytes(pickle.dumps({"w": 1})), "SafetensorError"),
    (lambda m: (m / "encoder" / "model.safetensors").write_bytes(
        (m / "encoder" / "model.safetensors").read_bytes()[:1000]), "SafetensorError"),
    (lambda m: (m / "linker_config.json").write_text("{broken"),
     "linker_config.json: cannot read it as JSON"),
    (lambda m: (m / "kb_manifest.json").write_text("[]"),
     "kb_manifest.json: expected a JSON object"),  # the file named (issue 47)
    (lambda m: (m / "heads.safetensors").unlink(), "heads.safetensors"),
])
def test_damaged_model_directory_is_one_clear_line(model, tmp_path, damage, message):
    damage(model)
    line = _annotate(model, tmp_path)
    assert str(model) in line and message in line


def test_kb_that_differs_from_the_manifest_is_refused(model, tmp_path):
    spec = json.loads((model / "kb_manifest.json").read_text())["kb"]
    kb_file = spec.split(":", 1)[1]
    with open(kb_file, "a") as handle:
        handle.write("X9\tnew name\t\tChemical\n")
    try:
        line = _annotate(model, tmp_path)
    finally:
        lines = open(kb_file).read().splitlines()[:-1]
        open(kb_file, "w").write("\n".join(lines) + "\n")
    assert "differs from the one the model was built with" in line
