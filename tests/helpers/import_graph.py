"""The project's import graph, read from source: every ``import`` and ``from ... import``,
at module level *and inside functions*, between modules of the given packages.

Why read source rather than import: an import placed inside a function to dodge a cycle still
is a cycle in the design (module A needs B needs A), and only the source shows it.
"""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    """``root/e2e_linker/kb_search/cache.py`` → ``e2e_linker.kb_search.cache``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name → source file, for every ``.py`` file under the given packages."""
    return {module_name(root, p): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}


def absolute_module(name: str, path: Path, node: ast.ImportFrom) -> str | None:
    """The module a ``from ... import`` in module ``name`` (file ``path``) reads from, with
    relative imports (``from . import x``, ``from ..y import z``) resolved; None if it climbs
    above the top package."""
    if node.level == 0:
        return node.module
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if node.level > len(package):
        return None
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module → the project modules it imports (``from pkg import name`` counts as importing
    ``pkg.name`` when that is a module, else ``pkg``; relative imports are resolved)."""
    modules = project_modules(root, packages)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = absolute_module(name, path, node)
                if not source:
                    continue
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules
                           else source for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path, packages: tuple[str, ...]) -> list[str]:
    """``file:line: from x import _y`` for every import, anywhere in a module, of a private
    name (or private module) of *another* project module; dunder names do not count."""
    modules = project_modules(root, packages)
    tops = {m.split(".")[0] for m in modules}
    found: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = absolute_module(name, path, node)
                if not source or source.split(".")[0] not in tops or source == name:
                    continue
                names = [a.name for a in node.names]
                bad = names if any(map(_private, source.split("."))) else \
                    [n for n in names if _private(n)]
                if bad:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: "
                                 f"from {source} import {', '.join(bad)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] in tops and alias.name != name and any(map(_private, parts)):
                        found.append(f"{path.relative_to(root)}:{node.lineno}: "
                                     f"import {alias.name}")
    return found
