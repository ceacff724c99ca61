"""The project's imports, read from source: no cycles among e2e_linker/ and data_tools/ modules
(imports inside functions included), and no module importing another module's private names.
Each checker is also run on a small fake package, so these tests can fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers.import_graph import find_cycles, import_graph, private_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("e2e_linker", "data_tools")


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def test_the_graph_covers_the_project():
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) == len(list((ROOT / "e2e_linker").rglob("*.py"))) + \
        len(list((ROOT / "data_tools").rglob("*.py")))
    # an edge the project certainly has, and one made by an import inside a function
    assert "e2e_linker.errors" in graph["e2e_linker.collective.model_kb"]
    assert "data_tools.registry" in graph["e2e_linker.collective.model_kb"]


def test_no_import_cycles():
    cycles = find_cycles(import_graph(ROOT, PACKAGES))
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_names_imported_across_modules():
    found = private_imports(ROOT, PACKAGES)
    assert found == [], "private names imported from another module:\n" + "\n".join(found)


def test_the_cycle_check_finds_cycles_hidden_in_functions(tmp_path):
    _write(tmp_path, {
        "fake/__init__.py": "",
        "fake/a.py": "from fake import b\n",
        "fake/b.py": """
            def later():
                from fake.a import something  # the import that dodges the cycle at load time
                return something
            """,
        "fake/sub/__init__.py": "",
        "fake/sub/c.py": "from . import d\n",
        "fake/sub/d.py": "import fake.sub.e\n",
        "fake/sub/e.py": "from ..sub.c import x\n",  # relative: fake.sub.c
        "fake/plain.py": "import fake.a\nimport os\n",
    })
    graph = import_graph(tmp_path, ("fake",))
    assert graph["fake.a"] == {"fake.b"} and graph["fake.b"] == {"fake.a"}
    assert graph["fake.sub.e"] == {"fake.sub.c"}
    assert graph["fake.plain"] == {"fake.a"}
    assert sorted(find_cycles(graph)) == [["fake.a", "fake.b"],
                                          ["fake.sub.c", "fake.sub.d", "fake.sub.e"]]
    # break both cycles: nothing left to report
    _write(tmp_path, {"fake/b.py": "import os\n", "fake/sub/e.py": "x = 1\n"})
    assert find_cycles(import_graph(tmp_path, ("fake",))) == []


def test_the_private_import_check_finds_private_names(tmp_path):
    _write(tmp_path, {
        "fake/__init__.py": "__version__ = '1'\n",
        "fake/a.py": "_hidden = 1\npublic = 2\n",
        "fake/_internal.py": "thing = 3\n",
        "fake/b.py": """
            from fake.a import public
            from fake import __version__
            import os
            from os.path import _get_sep  # another library's business, not ours

            def f():
                from fake.a import _hidden
                return _hidden
            """,
        "fake/c.py": "from fake._internal import thing\nimport fake._internal\n",
        "fake/d.py": "from .a import public, _hidden\n",
        "fake/e.py": "from fake.a import public\n",
    })
    assert private_imports(tmp_path, ("fake",)) == [
        "fake/b.py:8: from fake.a import _hidden",
        "fake/c.py:1: from fake._internal import thing",
        "fake/c.py:2: import fake._internal",
        "fake/d.py:1: from fake.a import _hidden",
    ]
