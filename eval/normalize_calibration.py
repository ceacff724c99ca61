"""The normalizer's spelling rule for "no concept" and its confidence, chosen on dev data.

    python -m eval.normalize_calibration [--model DIR] --out eval/results/normalize_cli/calibration

The default normalizer, loaded as ``linker normalize`` loads it, links the gold mentions of
BC5CDR dev (D pool: BC5CDR train) and NCBI disease dev (D pool: NCBI train) and the made-up
mentions of the NIL sweep (:func:`eval.normalize_cli.nil_mentions`: word n-grams that touch no
gold mention and shuffled words), with no NIL threshold, keeping each best link's score and
spelling share (:mod:`e2e_linker.normalizer.spelling`). Then:

* **The spelling rule** (:func:`spelling_grid`): for each (share, bar) pair of the grid, a link
  whose score is under the NIL threshold, or whose spelling share is under ``share`` and score
  under ``bar``, is NIL. Per dev set: Acc@1 on the gold mentions (NIL is wrong), the NIL rate
  on them, and the made-up mentions' NIL recall. The pair chosen (:func:`chosen_rule`) makes
  the most made-up mentions NIL while no dev set loses Acc@1 and none's NIL rate on gold
  mentions rises by more than :data:`NIL_RATE_COST`.
* **The confidence** (:func:`fit_normalize_confidence`): the logistic model of "the best
  concept is right" (made-up mentions: never) on :func:`e2e_linker.normalizer.confidence.features_of`,
  fitted on both sets; its reliability fitted on one set and read on the other, and on both;
  and how the confidence of NIL answers (1 − the estimate) compares with how often they are
  made-up mentions. The fitted weights are what ``NORMALIZE_CONFIDENCE`` holds.

One core, warm cache: a minute or two.
"""

from __future__ import annotations

import argparse
import copy
import time

from data_tools.documents import Document
from eval.normalize_cli import NIL_CASES, NIL_MENTIONS, NONSENSE, nil_mentions
from eval.reporting import command_line, write_results

#: the spelling shares and the score bars tried
SHARES = tuple(round(0.05 * i, 2) for i in range(1, 11))
BARS = tuple(round(0.78 + 0.01 * i, 2) for i in range(18))
#: the most the NIL rate on a dev set's gold mentions may rise (a margin under half a point)
NIL_RATE_COST = 0.004


def linked_rows(normalizer, docs: list[Document], gold: bool) -> list[dict]:
    """One row per annotation of ``docs`` (gold: only scored ones with a concept): the best
    link's ``score`` and ``share`` with no NIL threshold, and ``right`` (a gold mention
    whose best concepts are its own, as ``linker score --kb`` compares them)."""
    from e2e_linker.scoring import is_scored, normalized_ids

    copies = copy.deepcopy(docs)
    for doc in copies:
        for ann in doc.annotations:
            ann.concept_ids = []
    queries = normalizer.queries(copies)
    mode = normalizer.options.mode
    predictions = normalizer.rank(queries, [mode], nil_threshold=0)[mode]
    normalizer.apply(queries, predictions)
    originals = [(d, a) for d in docs for a in d.annotations]
    rows = []
    for q, pred, (doc, original) in zip(queries, predictions, originals, strict=True):
        if gold and not (is_scored(original) and original.concept_ids):
            continue
        kind = "gold" if gold else "nonsense" if doc.id.startswith(NONSENSE) else "n_gram"
        right = gold and set(normalized_ids(q.annotation, normalizer.kb.resolve)) == set(
            normalized_ids(original, normalizer.kb.resolve))
        rows.append({"kind": kind, "score": pred.score, "share": pred.spelling_share,
                     "right": right})
    return rows


def is_nil(row: dict, threshold: float, share: float, bar: float) -> bool:
    """Whether ``row``'s best link is NIL under the threshold and the spelling rule."""
    if row["score"] is None or row["score"] < threshold:
        return True
    return row["share"] is not None and row["share"] < share and row["score"] < bar


def rule_figures(rows: list[dict], threshold: float, share: float, bar: float) -> dict:
    """Acc@1 and NIL rate on the gold rows, NIL recall on the made-up ones (all, n-grams,
    nonsense words)."""
    gold = [r for r in rows if r["kind"] == "gold"]
    out = {"acc1": round(sum(r["right"] and not is_nil(r, threshold, share, bar)
                             for r in gold) / len(gold), 4),
           "gold_nil_rate": round(sum(is_nil(r, threshold, share, bar) for r in gold)
                                  / len(gold), 4)}
    for name, kinds in (("nil_recall", ("n_gram", "nonsense")), ("nil_recall_n_grams",
                                                                 ("n_gram",)),
                        ("nil_recall_nonsense", ("nonsense",))):
        made_up = [r for r in rows if r["kind"] in kinds]
        out[name] = round(sum(is_nil(r, threshold, share, bar) for r in made_up)
                          / len(made_up), 4) if made_up else None
    return out


def spelling_grid(cases: dict[str, list[dict]], threshold: float) -> list[dict]:
    """:func:`rule_figures` per dev set for each (share, bar) of :data:`SHARES` ×
    :data:`BARS`, after the threshold alone (share 0)."""
    pairs = [(0.0, 0.0), *((s, b) for s in SHARES for b in BARS)]
    return [{"share": s, "bar": b,
             "cases": {name: rule_figures(rows, threshold, s, b)
                       for name, rows in cases.items()}} for s, b in pairs]


def chosen_rule(grid: list[dict]) -> dict:
    """The grid row with the most made-up NIL recall (summed over the dev sets) whose Acc@1
    is the threshold's alone on every set and whose gold NIL rate rises by at most
    :data:`NIL_RATE_COST` on every set (the first such row on ties)."""
    base = grid[0]["cases"]

    def allowed(row: dict) -> bool:
        return all(f["acc1"] >= base[n]["acc1"]
                   and f["gold_nil_rate"] <= base[n]["gold_nil_rate"] + NIL_RATE_COST + 1e-9
                   for n, f in row["cases"].items())

    return max((r for r in grid if allowed(r)),
               key=lambda r: sum(f["nil_recall"] for f in r["cases"].values()))


def fit_normalize_confidence(rows: list[dict]):
    """The confidence model of "the best concept is right" on ``rows`` with a candidate."""
    from e2e_linker.collective.confidence import fit_confidence
    from e2e_linker.normalizer.confidence import features_of

    rows = [r for r in rows if r["score"] is not None]
    return fit_confidence([features_of(r["score"], r["share"]) for r in rows],
                          [r["right"] for r in rows], (), ())


def reliability_of(model, rows: list[dict]) -> dict:
    """:func:`eval.ood_dev.reliability` of ``model``'s estimate on ``rows``."""
    from e2e_linker.normalizer.confidence import features_of
    from eval.ood_dev import reliability

    rows = [r for r in rows if r["score"] is not None]
    return reliability([model.probability(features_of(r["score"], r["share"])) for r in rows],
                       [r["right"] for r in rows])


def nil_answers(model, rows: list[dict], threshold: float, share: float, bar: float) -> dict:
    """The NIL answers' mean confidence (1 − the estimate) against the share of them that
    are made-up mentions (NIL right), under the chosen rule."""
    from e2e_linker.normalizer.confidence import answer_confidence

    nil = [r for r in rows if r["score"] is not None and is_nil(r, threshold, share, bar)]
    if not nil:
        return {"n": 0}
    confidence = [answer_confidence(r["score"], r["share"], False, model) for r in nil]
    return {"n": len(nil), "mean_confidence": round(sum(confidence) / len(nil), 4),
            "made_up_share": round(sum(r["kind"] != "gold" for r in nil) / len(nil), 4)}


def calibrate(model: str | None = None, count: int = NIL_MENTIONS, seed: int = 0) -> dict:
    """Everything the module docstring lists, as one result."""
    from data_tools.registry import load_corpus
    from e2e_linker.normalizer.loading import load_normalizer
    from e2e_linker.normalizer.normalizer import DEFAULT_NIL_THRESHOLD

    start = time.perf_counter()
    cases: dict[str, list[dict]] = {}
    for dev, train in NIL_CASES:
        normalizer = load_normalizer(model, options={"progress": False},
                                     train_mentions=[train])
        docs = list(load_corpus(dev))
        cases[dev] = linked_rows(normalizer, docs, gold=True) + linked_rows(
            normalizer, nil_mentions(docs, count, seed), gold=False)
    threshold = DEFAULT_NIL_THRESHOLD
    grid = spelling_grid(cases, threshold)
    chosen = chosen_rule(grid)
    fitted = fit_normalize_confidence([r for rows in cases.values() for r in rows])
    names = list(cases)
    held_out = {}
    for fit_on, read_on in ((names[0], names[1]), (names[1], names[0])):
        held_out[f"{fit_on} -> {read_on}"] = reliability_of(
            fit_normalize_confidence(cases[fit_on]), cases[read_on])
    return {"model": model or "embedded default", "made_up_per_set": count, "seed": seed,
            "nil_threshold": threshold, "grid": grid, "chosen": chosen,
            "confidence": {"bias": fitted.bias, "weights": fitted.weights,
                           "in_sample": {n: reliability_of(fitted, rows)
                                         for n, rows in cases.items()},
                           "held_out": held_out,
                           "nil_answers": {n: nil_answers(fitted, rows, threshold,
                                                          chosen["share"], chosen["bar"])
                                           for n, rows in cases.items()}},
            "seconds": round(time.perf_counter() - start, 1)}


def markdown(result: dict) -> str:
    """The chosen rule beside the threshold alone, and the confidence's calibration."""
    chosen, base = result["chosen"], result["grid"][0]
    lines = [f"# Spelling rule and confidence of `linker normalize` (dev data; chosen: share "
             f"< {chosen['share']:g} and score < {chosen['bar']:g} is NIL)", "",
             f"Command: `{result.get('command', 'python -m eval.normalize_calibration')}`; "
             f"model: {result['model']}; NIL threshold {result['nil_threshold']:g}; "
             f"{result['made_up_per_set']} made-up mentions per set (seed {result['seed']}); "
             f"{result['seconds']} s.", "",
             "| dev set | rule | Acc@1 | NIL rate, gold | NIL recall, made up (n-grams / "
             "nonsense) |", "|---|---|---|---|---|"]
    for name in base["cases"]:
        for label, row in (("threshold alone", base), ("with the spelling rule", chosen)):
            f = row["cases"][name]
            lines.append(f"| {name} | {label} | {f['acc1']:.4f} | {f['gold_nil_rate']:.4f} | "
                         f"{f['nil_recall']:.4f} ({f['nil_recall_n_grams']:.4f} / "
                         f"{f['nil_recall_nonsense']:.4f}) |")
    conf = result["confidence"]
    lines += ["", f"Confidence: sigmoid({conf['bias']:g} + "
              + " + ".join(f"{w:g}·{k}" for k, w in sorted(conf["weights"].items())) + ").",
              "", "| fitted on → read on | n | accuracy | ECE | Brier |", "|---|---|---|---|---|"]
    for label, rel in [*conf["held_out"].items(),
                       *((f"both → {n}", r) for n, r in conf["in_sample"].items())]:
        lines.append(f"| {label} | {rel['n']} | {rel['accuracy']:.4f} | {rel['ece']:.4f} | "
                     f"{rel['brier']:.4f} |")
    lines += ["", "NIL answers under the chosen rule, mean confidence against the share that "
              "are made-up mentions: " + "; ".join(
                  f"{n} {a.get('mean_confidence', 0):.4f} / {a.get('made_up_share', 0):.4f} "
                  f"({a['n']})" for n, a in conf["nil_answers"].items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="default: the embedded normalizer")
    parser.add_argument("--out", default="eval/results/normalize_cli/calibration")
    parser.add_argument("--nil-mentions", type=int, default=NIL_MENTIONS,
                        help="made-up mentions per dev set (half n-grams, half nonsense)")
    args = parser.parse_args(argv)
    result = calibrate(args.model, args.nil_mentions)
    result["command"] = command_line("normalize_calibration", argv)
    write_results(args.out, result, markdown(result))
    return result


if __name__ == "__main__":
    main()
