"""The package facade (``e2e_linker/__init__.py``): every public name resolves to the object its
module defines, unknown names fail as attributes do, and importing the package stays light."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import e2e_linker

ROOT = Path(e2e_linker.__file__).resolve().parents[1]


def test_every_public_name_resolves_to_its_modules_object():
    assert e2e_linker.__all__ == sorted(e2e_linker._EXPORTS)
    for name in e2e_linker.__all__:
        module = importlib.import_module(e2e_linker._EXPORTS[name])
        expected = getattr(module, e2e_linker._RENAMED.get(name, name))
        assert getattr(e2e_linker, name) is expected, name
    assert e2e_linker.load_normalizer_model.__name__ == "load_model"
    assert set(e2e_linker.__all__) <= set(dir(e2e_linker))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        e2e_linker.Nonexistent  # noqa: B018
    assert not hasattr(e2e_linker, "_private_thing")


def test_import_does_not_load_torch_or_transformers():
    code = ("import sys, json, e2e_linker; "
            "print(json.dumps(sorted(m for m in ('torch', 'transformers') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, cwd=ROOT)
    assert json.loads(out.stdout) == []
    # and the check itself sees a heavy import when there is one
    code = code.replace("import sys, json, e2e_linker", "import sys, json, e2e_linker; "
                        "e2e_linker.TextEncoder")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300, cwd=ROOT)
    assert "torch" in json.loads(out.stdout)
