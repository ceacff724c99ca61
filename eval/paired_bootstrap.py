"""Whether a dev-table difference between two runs is more than the dev documents' sampling.

    python -m eval.paired_bootstrap A/results.json B/results.json [--samples 10000]
                                    [--seed 13] [--out eval/results/dev_table/bootstrap/NAME]

Why: every choice of issue 43 is a difference on the widened dev table
(docs/decisions/0001-dev-table-decides.md), and a rule step that changes the predictions of a
few documents may win or lose there only because of which documents the dev sets happen to
hold. The noise probe (:mod:`eval.noise_floor`) measures how far the table moves for a change
that teaches nothing; it does not measure this. A paired bootstrap over documents does
(Koehn 2004; Berg-Kirkpatrick et al. 2012): both runs' per-document strict counts are
resampled with the same documents drawn, corpus by corpus, and the difference of each row's
micro F1 — and of the combined score, the plain mean of the rows — is recomputed for every
sample. A difference whose 95 % interval holds zero, or that the other run wins in more than
one sample in twenty, is within what another draw of dev documents could give.

Each ``results.json`` is :mod:`eval.ood_dev`'s (or :mod:`eval.accuracy_ablation`'s record
format through :func:`bootstrap_rows`): its rows carry ``strict_by_document``, each scored
view's per-document ``[tp, fp, fn]`` (:func:`document_counts`). Rows that share a corpus
(BioRED dev's chemicals and diseases, and its genes) share its draw.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from data_tools.documents import Document
from e2e_linker.errors import UserError
from e2e_linker.scoring import score
from eval.reporting import command_line, machine, write_results

#: how many resamples a comparison draws by default
SAMPLES = 10_000
#: the interval reported: the central 95 % of the resampled differences
INTERVAL = (2.5, 97.5)
COMBINED = "combined"

#: one view's counts: document id → [tp, fp, fn]
Counts = dict[str, list[int]]


def document_counts(gold: Sequence[Document], pred: Sequence[Document],
                    resolve: Callable[[str], str] | None = None) -> Counts:
    """Each gold document's strict ``[tp, fp, fn]`` (span, type and concept IDs, as
    :func:`~e2e_linker.scoring.score` counts them), for documents already restricted to the
    scored types. Summed over documents they are the corpus's counts: strict matching never
    crosses a document. A predicted document without a gold one would count only false
    positives; the dev table annotates the gold documents' text, so there is none."""
    by_id = {doc.id: doc for doc in pred}
    out: Counts = {}
    for doc in gold:
        report = score([doc], [by_id[doc.id]] if doc.id in by_id else [], "strict",
                       resolve=resolve)
        out[doc.id] = [int(report.tp), int(report.fp), int(report.fn)]
    return out


def micro_f1(counts: np.ndarray) -> np.ndarray:
    """Strict F1 from summed ``[..., 3]`` counts (tp, fp, fn): 2 tp / (2 tp + fp + fn), 0 where
    nothing was predicted or gold."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denominator = 2 * tp + fp + fn
    return np.divide(2 * tp, denominator, out=np.zeros_like(denominator, dtype=float),
                     where=denominator > 0)


def paired_arrays(a: Counts, b: Counts) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The documents both runs scored, in one order, and each run's ``[documents, 3]`` counts.

    Why an error for a mismatch: a paired comparison over different documents would credit one
    run with documents the other never saw."""
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        raise UserError(f"the two runs scored different documents ({len(only)} on one side "
                        f"only, e.g. {only[:3]}): compare runs of the same corpora")
    ids = sorted(a)
    return ids, np.array([a[i] for i in ids]), np.array([b[i] for i in ids])


def row_corpus(label: str) -> str:
    """The corpus a dev-table row is drawn from (its label's first word: "biored:dev (Gene)" →
    "biored:dev"): the rows of one corpus share its draw."""
    return label.split(" ", 1)[0]


def paired_bootstrap(a: Mapping[str, Counts], b: Mapping[str, Counts],
                     samples: int = SAMPLES, seed: int = 13) -> dict[str, dict]:
    """For each row both runs scored (``row label → per-document counts``) and for their
    :data:`COMBINED` plain mean (the one row itself when there is one): both runs' strict F1,
    the difference B − A, its :data:`INTERVAL` over ``samples`` paired resamples of the
    documents (drawn per corpus, one draw for the rows of a corpus), and the share of
    resamples in which B is above A, equal, and below.

    Why resample documents and not mentions: a document's mentions are not independent (one
    concept repeated, one abbreviation propagated), so a mention-level draw would call
    differences real that one document makes."""
    rows = [label for label in a if label in b]
    if not rows:
        raise UserError("the two runs have no dev-table row in common")
    rng = np.random.default_rng(seed)
    draws: dict[str, np.ndarray] = {}
    diffs: dict[str, np.ndarray] = {}
    out: dict[str, dict] = {}
    for label in rows:
        ids, ca, cb = paired_arrays(a[label], b[label])
        key = f"{row_corpus(label)} {len(ids)}"
        if key not in draws:  # how often each document is drawn, one line a resample
            draws[key] = rng.multinomial(len(ids), np.full(len(ids), 1 / len(ids)),
                                         size=samples)
        weights = draws[key]
        diffs[label] = micro_f1(weights @ cb) - micro_f1(weights @ ca)
        out[label] = summary(float(micro_f1(ca.sum(axis=0))), float(micro_f1(cb.sum(axis=0))),
                             diffs[label], len(ids))
    documents = {row_corpus(r): out[r]["documents"] for r in rows}
    out[COMBINED] = summary(float(np.mean([out[r]["a"] for r in rows])),
                            float(np.mean([out[r]["b"] for r in rows])),
                            np.mean([diffs[r] for r in rows], axis=0), sum(documents.values()))
    return out


def summary(f1_a: float, f1_b: float, diffs: np.ndarray, documents: int) -> dict:
    """One row's record: both F1, their difference, its interval and how the draws fell."""
    low, high = np.percentile(diffs, INTERVAL)
    return {"a": round(f1_a, 4), "b": round(f1_b, 4), "delta": round(f1_b - f1_a, 4),
            "low": round(float(low), 4), "high": round(float(high), 4),
            "b_above": round(float(np.mean(diffs > 0)), 4),
            "equal": round(float(np.mean(diffs == 0)), 4),
            "b_below": round(float(np.mean(diffs < 0)), 4),
            "documents": documents}


def verdict(row: dict) -> str:
    """In words: whether B's difference from A is outside the documents' sampling — its
    interval excludes zero."""
    if row["low"] > 0:
        return "B above A"
    if row["high"] < 0:
        return "B below A"
    return "within sampling"


def by_document(result: dict) -> dict[str, Counts]:
    """``row label → per-document counts`` of an :mod:`eval.ood_dev` result.

    Why an error for a result without them: results written before the counts were recorded
    cannot be compared; rerunning the command that wrote them adds them."""
    out: dict[str, Counts] = {}
    for row in result.get("rows", []):
        out.update(row.get("strict_by_document", {}))
    if not out:
        raise UserError("this result has no per-document counts (strict_by_document): rerun "
                        "the command that wrote it (its 'command' field) to record them")
    return out


def markdown(result: dict) -> str:
    """The comparison as a table, a row a dev-table row and the combined score last."""
    lines = [f"Paired bootstrap over documents, {result['samples']} resamples (seed "
             f"{result['seed']}); A = {result['a']}, B = {result['b']}; {result['machine']}",
             "", "| row | documents | A | B | Δ (B − A) | 95 % interval | B above / below A | "
             "reading |", "|---|---|---|---|---|---|---|---|"]
    for label, row in result["rows"].items():
        lines.append(f"| {label} | {row['documents']} | {row['a']:.4f} | {row['b']:.4f} | "
                     f"{row['delta']:+.4f} | [{row['low']:+.4f}, {row['high']:+.4f}] | "
                     f"{row['b_above']:.3f} / {row['b_below']:.3f} | {verdict(row)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="the first run's results.json (eval.ood_dev)")
    parser.add_argument("b", help="the second run's results.json")
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", default=None,
                        help="folder to write results.json and results.md into (default: "
                             "print the table only)")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    try:  # a missing or unreadable result, or two runs that cannot be paired: one line, exit 2
        runs = []
        for path in (args.a, args.b):
            try:
                runs.append(by_document(json.loads(Path(path).read_text())))
            except (OSError, ValueError, UserError) as exc:
                raise UserError(f"{path}: {exc}") from exc
        rows = paired_bootstrap(runs[0], runs[1], args.samples, args.seed)
    except UserError as exc:
        parser.error(str(exc))
    result = {"command": command_line("paired_bootstrap", argv), "machine": machine(),
              "a": args.a, "b": args.b, "samples": args.samples, "seed": args.seed,
              "rows": rows}
    if args.out:
        write_results(args.out, result, markdown(result))  # prints the table too
    else:
        print(markdown(result), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
