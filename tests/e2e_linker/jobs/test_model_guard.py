"""A broken model directory becomes one clear UserError; clear errors pass through unchanged."""

from __future__ import annotations

import json

import pytest

from data_tools.documents import FormatError
from e2e_linker.errors import UserError
from e2e_linker.jobs.model_guard import loading_model


@pytest.mark.parametrize("error", [OSError("disk on fire"), KeyError("encoder"),
                                   TypeError("list indices must be integers\nsecond line")])
def test_loader_failures_become_one_line_user_errors(tmp_path, error):
    with pytest.raises(UserError) as info:
        with loading_model(tmp_path / "model"):
            raise error
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'model'}: cannot load the model "
                              f"({type(error).__name__}: ")
    assert "\n" not in message and info.value.__cause__ is error


def test_the_default_model_is_named_as_such():
    with pytest.raises(UserError, match="the embedded default model: cannot load the model "
                                        r"\(JSONDecodeError"):
        with loading_model(None):
            json.loads("{broken")


@pytest.mark.parametrize("error", [UserError("already clear"),
                                   FormatError("bad row", path="x.txt", where="line 3"),
                                   FileNotFoundError("x.txt")])
def test_clear_errors_pass_through(error):
    with pytest.raises(type(error)) as info:
        with loading_model("somewhere"):
            raise error
    assert info.value is error


def test_a_safetensors_error_is_caught(tmp_path):
    from safetensors.torch import load_file

    bad = tmp_path / "heads.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(UserError, match="cannot load the model"):
        with loading_model(tmp_path):
            load_file(str(bad))
