"""How every eval command leaves its figures: ``results.json`` + ``results.md`` in its output
folder, the table printed, and the exact command line recorded so anyone can rerun it."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def command_line(module: str, argv: list[str] | None) -> str:
    """``python -m eval.MODULE ARGS`` as it was run (``argv`` None: this process's own)."""
    return f"python -m eval.{module} " + " ".join(sys.argv[1:] if argv is None else argv)


def write_results(out: str | Path, result: dict, table: str) -> None:
    """Write ``result`` as JSON and ``table`` as Markdown into ``out``, and print the table."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "results.md").write_text(table)
    print(table)
