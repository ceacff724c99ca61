"""How far the widened dev table moves for a change that teaches the model nothing.

    python -m eval.noise_floor [--model DIR] [--probes 3] [--corpora bc5cdr:dev ...]
                               [--out eval/results/dev_table/noise_floor]

Why: every choice of issue 43 is a difference on the dev table (docs/decisions/0001), and the
project calls a gain of 0.002 on one row noise unless the others agree — a rule of thumb until
something measured it. Each probe here is the model's own weights, bit for bit, reading every
chunk with one more vocabulary entry after [CLS], an entry no training touched
(:func:`eval.models.model_with_probe_tag`: probe ``n`` the ``n``-th past the model's own
guideline tags). Nothing is learnt; a document that fits one chunk reads its text one position
on and a longer one is also cut a token earlier. The table is scored for the model as it is
and for each probe, exactly as :mod:`eval.ood_dev` scores it (its ``main``, the fair mined
names), and each row's differences are reported: their mean (what reading one position on
does to the row), their spread (what the choice of entry does) and the largest. A model
comparison whose gain on a row is within that row's largest probe difference has not shown
itself on that row (docs/decisions/0001-dev-table-decides.md). What it does not measure: the
sampling of the dev documents, the question for a rule step that changes some predictions of
one model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from eval.models import model_with_probe_tag
from eval.ood_dev import CORPUS_TYPES, DEV_TABLE
from eval.ood_dev import main as ood_dev_main
from eval.paired_bootstrap import COMBINED
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "dev_table" / "noise_floor"


def dev_table_scores(model: Path | None, corpora: list[str], out: Path) -> dict[str, float]:
    """Each row's strict F1 and the combined score, as ``python -m eval.ood_dev`` writes them
    into ``out`` for ``model`` (None: the shipped one)."""
    argv = ["--corpora", *corpora, "--out", str(out)]
    if model is not None:
        argv = ["--model", str(model), *argv]
    ood_dev_main(argv)
    result = json.loads((out / "results.json").read_text())
    return {**result["table"], COMBINED: result["combined"]}


def row_spread(base: dict[str, float], probes: list[dict[str, float]]) -> dict[str, dict]:
    """Per row of ``base``: the probes' differences from it, their mean, their standard
    deviation (0 with one probe) and the largest in size."""
    out = {}
    for row, value in base.items():
        deltas = [round(p[row] - value, 4) for p in probes]
        out[row] = {"base": value, "deltas": deltas,
                    "mean": round(statistics.fmean(deltas), 4),
                    "sd": round(statistics.stdev(deltas), 4) if len(deltas) > 1 else 0.0,
                    "largest": max(deltas, key=abs)}
    return out


def markdown(result: dict) -> str:
    """A row a dev-table row: the model's figure, each probe's difference, mean, spread and
    largest difference."""
    probes = len(result["probes"])
    lines = [f"Noise floor of the dev table, model {result['model']} ({result['machine']}): "
             f"{probes} probes, each the same weights reading one untrained vocabulary entry "
             "after [CLS] (eval/noise_floor.py)", "",
             "| row | model | " + " | ".join(f"probe {n}" for n in range(1, probes + 1))
             + " | mean Δ | sd Δ | largest Δ |",
             "|---|---|" + "---|" * (probes + 3)]
    for row, spread in result["rows"].items():
        lines.append(f"| {row} | {spread['base']:.4f} | "
                     + " | ".join(f"{d:+.4f}" for d in spread["deltas"])
                     + f" | {spread['mean']:+.4f} | {spread['sd']:.4f} | "
                       f"{spread['largest']:+.4f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--probes", type=int, default=3,
                        help="how many probes (untrained entries), each a whole dev-table run")
    parser.add_argument("--corpora", nargs="+", default=list(DEV_TABLE),
                        choices=sorted(CORPUS_TYPES))
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.probes < 1:
        parser.error("--probes must be at least 1")
    model = Path(args.model) if args.model else None
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        base = dev_table_scores(model, args.corpora, runs / "model")
        probes = []
        for n in range(1, args.probes + 1):
            probed = model_with_probe_tag(model, runs / f"probe_{n}_model", n)
            probes.append(dev_table_scores(probed, args.corpora, runs / f"probe_{n}"))
    result = {"command": command_line("noise_floor", argv), "machine": machine(),
              "model": args.model or "shipped", "corpora": args.corpora,
              "probes": probes, "rows": row_spread(base, probes)}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
