"""How every eval command leaves its figures: ``results.json`` + ``results.md`` in its output
folder, the table printed, and the exact command line recorded so anyone can rerun it."""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path

#: a JSON list of numbers as ``json.dumps(indent=2)`` spreads it, one number a line
_NUMBER_LIST = re.compile(r"\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]")


def command_line(module: str, argv: list[str] | None) -> str:
    """``python -m eval.MODULE ARGS`` as it was run (``argv`` None: this process's own)."""
    return f"python -m eval.{module} " + " ".join(sys.argv[1:] if argv is None else argv)


def results_json(result: dict) -> str:
    """``result`` as indented JSON, each list of numbers on one line.

    Why: the per-document counts the dev table records (``[tp, fp, fn]`` for every document
    of every row, :mod:`eval.paired_bootstrap`) took five lines each, a re-earning run's file
    over a megabyte of mostly line breaks."""
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(
        part.strip() for part in m.group(1).split(",")) + "]", json.dumps(result, indent=2))


def write_results(out: str | Path, result: dict, table: str) -> None:
    """Write ``result`` as JSON (:func:`results_json`) and ``table`` as Markdown into
    ``out``, and print the table."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(results_json(result) + "\n")
    (out / "results.md").write_text(table)
    print(table)


def machine() -> str:
    """CPU model, cores and accelerator, in words: what every figure is measured on."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{cpu}, {os.cpu_count()} cores, {gpu}"


def f1_fields(gold, pred, modes: tuple[str, ...] = ("strict", "partial")) -> dict:
    """``linker score``'s F1 of ``pred`` against ``gold`` per mode, overall (``mode``) and by
    type (``mode_by_type``), rounded as the tables print them."""
    from e2e_linker.scoring import score

    fields: dict = {}
    for mode in modes:
        report = score(gold, pred, mode, by_type=True)
        fields[mode] = round(report.f1, 4)
        fields[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
    return fields
