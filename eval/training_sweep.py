"""A small sweep of ``linker train`` settings (learning rate, negatives, epochs, seeds), each
variant a resumable training run at one common epoch budget.

    python -m eval.training_sweep --config configs/bc5cdr.yaml --epochs 2 \\
        --variant base --variant seed7:seed=7 --variant lr1e-4:lr=1.0e-4 \\
        [--runs runs/sweep] [--out eval/results/training_sweep]

Why: one full run of the default config costs most of an hour and a half on a 2-core CPU, so
a sweep there runs every variant at a short common budget: it ranks settings against each
other (and a second seed of the unchanged config says how far apart two runs of one setting
land), it does not replace a full run. Each variant is the config with ``KEY=VALUE``
overrides (any TrainConfig key; ``epochs`` from ``--epochs``), written to RUNS/NAME.yaml and
trained by ``linker train`` in a subprocess, so the figures are the repository's own training
and validation. Run the same command again after an interruption: finished variants are read
back from their ``training_summary.json``, an interrupted one continues from its resume state.
The dev figures are training-time validation (exact-name sieve + dense search, train-only
mined names, best of the config's thresholds), the measure ``linker train`` selects epochs by.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from e2e_linker.training.checkpoint import config_differences
from e2e_linker.training.config import TrainConfig, read_yaml_mapping
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "training_sweep"
SUMMARY = "training_summary.json"
WALL = "sweep_wall.json"


def parse_override(text: str):
    """A YAML scalar, with YAML 1.1's string reading of ``1e-4`` taken as the number it means."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def parse_variant(text: str) -> tuple[str, dict]:
    """``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE`` → (name, overrides)."""
    name, _, rest = text.partition(":")
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise SystemExit(f"--variant {text}: the name must be letters, digits, '-', '_', '.'")
    overrides = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--variant {text}: expected NAME:KEY=VALUE,...")
        overrides[key.strip()] = parse_override(value.strip())
    return name, overrides


def variant_config(base: dict, overrides: dict, epochs: int, output_dir: Path) -> dict:
    """The base config with the overrides, the budget and the run folder; checked by
    TrainConfig so a misspelt key stops the sweep before any training starts."""
    config = {**base, **overrides, "epochs": epochs, "output_dir": str(output_dir)}
    TrainConfig.from_dict(config, f"variant {output_dir.name}")
    return config


def finished_summary(run: Path, config: dict) -> dict | None:
    """The run's training summary when it finished with exactly this config, else None."""
    path = run / SUMMARY
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    wanted = TrainConfig.from_dict(config).to_dict()
    differences = config_differences(summary["config"], wanted)
    if differences:
        raise SystemExit(f"{run}: finished with another config ({', '.join(differences)}); "
                         "remove it or name the variant differently")
    return summary


def train_variant(config_path: Path, run: Path) -> float:
    """Run ``linker train`` on the variant; returns the minutes this invocation took (added
    to the run's total in RUN/sweep_wall.json, so a resumed run reports its whole cost)."""
    started = time.time()
    subprocess.run([sys.executable, "-m", "e2e_linker", "train", str(config_path)],
                   check=True, env=os.environ.copy())
    minutes = (time.time() - started) / 60
    wall_file = run / WALL
    total = json.loads(wall_file.read_text())["minutes"] if wall_file.exists() else 0.0
    wall_file.write_text(json.dumps({"minutes": total + minutes}) + "\n")
    return total + minutes


def variant_row(name: str, overrides: dict, summary: dict, minutes: float | None) -> dict:
    """One table row: dev strict F1 by epoch and the best epoch's figures."""
    history = summary["history"]
    best = max(history, key=lambda h: h["strict_f1"])
    return {"variant": name, "overrides": overrides,
            "strict_by_epoch": [round(h["strict_f1"], 4) for h in history],
            "best_epoch": best["epoch"], "best_threshold": best["threshold"],
            "strict_f1": round(best["strict_f1"], 4), "mention_f1": round(best["mention_f1"], 4),
            "minutes": None if minutes is None else round(minutes, 1)}


def sweep_table(rows: list[dict]) -> list[str]:
    """The Markdown table; the spread of variants that differ only in ``seed`` from the first
    row is what a difference between settings has to exceed."""
    lines = ["| variant | overrides | dev strict F1 by epoch | best (epoch, γ) | mention F1 | "
             "minutes |", "|---|---|---|---|---|---|"]
    for row in rows:
        overrides = ", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "—"
        by_epoch = " / ".join(f"{f:.4f}" for f in row["strict_by_epoch"])
        minutes = "—" if row["minutes"] is None else f"{row['minutes']:.0f}"
        lines.append(f"| {row['variant']} | {overrides} | {by_epoch} | **{row['strict_f1']:.4f}**"
                     f" ({row['best_epoch']}, {row['best_threshold']}) | {row['mention_f1']:.4f}"
                     f" | {minutes} |")
    return lines


def seed_spread(rows: list[dict]) -> float | None:
    """Max − min best dev strict F1 over the rows whose only override is ``seed`` (and the
    row without overrides): run-to-run noise at this budget; None with fewer than two."""
    scores = [r["strict_f1"] for r in rows if set(r["overrides"]) <= {"seed"}]
    return round(max(scores) - min(scores), 4) if len(scores) > 1 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/bc5cdr.yaml")
    parser.add_argument("--epochs", type=int, required=True, help="every variant's budget")
    parser.add_argument("--variant", action="append", required=True,
                        help="NAME or NAME:KEY=VALUE,... (TrainConfig keys)")
    parser.add_argument("--runs", default="runs/sweep", help="one training folder per variant")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    base = read_yaml_mapping(args.config)
    variants = [parse_variant(v) for v in args.variant]
    names = [name for name, _ in variants]
    if len(set(names)) != len(names):
        raise SystemExit("--variant names must be distinct")
    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    configs = {name: variant_config(base, overrides, args.epochs, runs / name)
               for name, overrides in variants}
    rows = []
    for name, overrides in variants:
        run, config = runs / name, configs[name]
        summary = finished_summary(run, config)
        minutes = None
        if summary is None:
            config_path = runs / f"{name}.yaml"
            config_path.write_text(yaml.safe_dump(config, sort_keys=False))
            print(f"[sweep] {name}: linker train {config_path}", flush=True)
            minutes = train_variant(config_path, run)
            summary = finished_summary(run, config)
            if summary is None:
                raise SystemExit(f"{run}: linker train ended without {SUMMARY}")
        elif (run / WALL).exists():
            minutes = json.loads((run / WALL).read_text())["minutes"]
        rows.append(variant_row(name, overrides, summary, minutes))
    spread = seed_spread(rows)
    lines = [f"`linker train {args.config}` at {args.epochs} epochs per variant; dev strict F1 "
             "is training-time validation (exact-name sieve + dense search, KB names mined "
             "from train only, best of the config's thresholds).", "", *sweep_table(rows)]
    if spread is not None:
        lines += ["", f"Seed spread (rows differing only in seed): {spread:.4f}."]
    result = {"command": command_line("training_sweep", argv), "machine": machine(),
              "config": args.config, "epochs": args.epochs, "rows": rows,
              "seed_spread": spread}
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
