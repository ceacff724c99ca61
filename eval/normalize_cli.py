"""The default normalizer through the command line, as a user (and the acceptance check) runs it.

    python -m eval.normalize_cli [--model DIR] [--search MODE] --out eval/results/normalize_cli

Runs ``linker normalize`` on gold mention spans and scores the output with
``linker score --accuracy --by-type --kb KB`` (alternative IDs mapped to the KB's primary IDs,
as the table harness does; the verbatim comparison is reported beside it):

* BC5CDR test (PubTator gold), the model's default KB, search mode and D pool (for the shipped
  model: BC5CDR train + dev mentions) — Chemical and Disease Acc@1;
* NCBI dev with ``--train-mentions ncbi_disease:train`` (the dev split must not be its own D
  pool) — all-mention Acc@1.

The KB-coverage ceiling (share of scored mentions whose gold concepts are all in the KB) is
reported beside each figure. Both commands run as subprocesses; their wall time is recorded.

    python -m eval.normalize_cli --nil [--model DIR] --out eval/results/normalize_cli/nil

chooses the NIL threshold instead (:func:`nil_sweep`; dev data only): the normalizer, loaded as
``linker normalize`` loads it, links the gold mentions of BC5CDR dev (D pool: BC5CDR train) and
NCBI disease dev (D pool: NCBI train) and, beside them, mentions that name no concept: word
n-grams of the same abstracts that no gold mention touches, and nonsense words made by
shuffling the letters of the abstracts' words (:func:`nil_mentions`). For each threshold it
reports Acc@1 on the gold mentions (a NIL answer is wrong) and NIL precision and recall
(NIL the positive class: how many NIL answers are made-up mentions, and how many made-up
mentions get one; recall also for each kind), and picks :func:`chosen_threshold`. One core,
warm cache: about a minute; on a cold cache the normalizer first encodes the KB names its
searches shortlist (once, several minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from data_tools.documents import Annotation, Document, Passage
from data_tools.registry import data_dir
from eval.reporting import command_line, write_results


def _linker(*args: str) -> str:
    """Run ``linker`` (this interpreter's package) and return stdout; fail loudly."""
    cmd = [sys.executable, "-m", "e2e_linker", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def ceiling(gold_path: Path, kb_spec: str) -> dict:
    """Share of scored gold mentions (by type) whose concept IDs are all in the KB.

    The KB is the one ``linker normalize`` searches (the spec alone, no mined names), and
    mentions without IDs (``-1``) are left out as the accuracy leaves them out; so for BC5CDR
    the figures differ from the annotate KB's reach (docs/results.md at 94e8e08, "KB ceiling"),
    which counts every mention and adds the names mined from train/dev."""
    from data_tools.formats import read_documents
    from data_tools.registry import load_kb
    from e2e_linker.normalizer.pools import TYPE_ALIASES

    kb = load_kb(kb_spec)
    counts: dict[str, list[int]] = {}
    for doc in read_documents(gold_path):
        for ann in doc.annotations:
            ids = [i for i in ann.concept_ids if i]
            if not ids:
                continue
            key = TYPE_ALIASES.get(ann.type, ann.type)
            hit = all(kb.resolve(i.removeprefix("MESH:")) in kb.concepts for i in ids)
            pair = counts.setdefault(key, [0, 0])
            pair[0] += hit
            pair[1] += 1
    return {t: round(h / n, 4) for t, (h, n) in sorted(counts.items())}


def run_case(name: str, gold: Path, extra: list[str], work: Path, model: str | None,
             mode: str | None, kb: str) -> dict:
    pred = work / f"{name}.pubtator"
    args = ["normalize", str(gold), "-o", str(pred), *extra]
    if model:
        args += ["--model", model]
    if mode:
        args += ["--search", mode]
    start = time.perf_counter()
    _linker(*args)
    seconds = time.perf_counter() - start
    score = ["score", "--accuracy", "--by-type", "--json", str(gold), str(pred)]
    # IDs mapped to the KB's primary IDs (what the table harness does), and as written
    report = json.loads(_linker(*score, "--kb", kb))
    as_written = json.loads(_linker(*score))
    return {"command": "linker " + " ".join(a if a != str(pred) else "OUT" for a in args),
            "score_command": f"linker score --accuracy --by-type --kb {kb} GOLD OUT",
            "seconds": round(seconds, 1), "score": report, "score_as_written": as_written}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="default: the embedded normalizer")
    parser.add_argument("--search", default=None, help="default: the model's mode")
    parser.add_argument("--out", default=None,
                        help="default: eval/results/normalize_cli (--nil: normalize_cli/nil)")
    parser.add_argument("--nil", action="store_true",
                        help="choose the NIL threshold on dev data instead (nil_sweep)")
    parser.add_argument("--nil-mentions", type=int, default=NIL_MENTIONS,
                        help="made-up mentions per dev set (half n-grams, half nonsense)")
    args = parser.parse_args(argv)
    if args.nil:
        result = nil_sweep(args.model, args.nil_mentions, search=args.search)
        result["command"] = command_line("normalize_cli", argv)
        write_results(args.out or "eval/results/normalize_cli/nil", result, nil_markdown(result))
        return result
    args.out = args.out or "eval/results/normalize_cli"

    from e2e_linker.normalizer.normalizer_dir import load_model

    _, settings = load_model(args.model)
    root = data_dir()
    bc5cdr_test = root / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    ncbi_dev = root / "ncbi_disease" / "NCBIdevelopset_corpus.txt"
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                     "model": args.model or "embedded default",
                     "search": args.search or settings.search, "kb": settings.kb}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        results["bc5cdr_test"] = run_case("bc5cdr_test", bc5cdr_test, [], work, args.model,
                                          args.search, settings.kb)
        results["bc5cdr_test"]["kb_ceiling"] = ceiling(bc5cdr_test, settings.kb)
        results["ncbi_dev"] = run_case("ncbi_dev", ncbi_dev,
                                       ["--train-mentions", "ncbi_disease:train"], work,
                                       args.model, args.search, settings.kb)
        results["ncbi_dev"]["kb_ceiling"] = ceiling(ncbi_dev, settings.kb)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "results.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return results


def _acc(report: dict, type_: str | None) -> tuple[float | None, int | None]:
    if type_ is None:
        return report.get("accuracy"), report.get("n")
    part = report.get("by_type", {}).get(type_, {})
    return part.get("accuracy"), part.get("n")


def markdown(results: dict) -> str:
    lines = ["# Default normalizer through `linker normalize` (gold spans, Acc@1)", "",
             f"Command: `python -m eval.normalize_cli`; model: {results['model']}; search "
             f"{results['search']}; KB {results['kb']}; machine: {results['machine']}.", "",
             "Acc@1 compares concept IDs after mapping alternative IDs to the KB's primary IDs "
             "(`linker score --kb`, as the table harness does); 'as written' compares them "
             "verbatim (NCBI cites OMIM IDs that the KB files under MeSH IDs).", "",
             "| data | type | Acc@1 | as written | n | KB ceiling | wall s |",
             "|---|---|---|---|---|---|---|"]
    for key, label, types in (("bc5cdr_test", "BC5CDR test", ["Chemical", "Disease"]),
                              ("ncbi_dev", "NCBI dev (D = NCBI train)", [None])):
        case = results[key]
        for type_ in types:
            acc, n = _acc(case["score"], type_)
            verbatim, _ = _acc(case["score_as_written"], type_)
            ceil = case["kb_ceiling"].get(type_ or "Disease")
            cells = ["" if a is None else f"{a:.4f}" for a in (acc, verbatim)]
            lines.append(f"| {label} | {type_ or 'all'} | {cells[0]} | {cells[1]} | {n} | "
                         f"{ceil} | {case['seconds']} |")
    lines += ["", "Commands:", ""] + [f"- `{results[k][c]}`" for k in ("bc5cdr_test", "ncbi_dev")
                                      for c in ("command", "score_command")]
    return "\n".join(lines) + "\n"


# ---- the NIL threshold, on dev data ----------------------------------------------------------

#: the dev sets the threshold is chosen on, each with the D pool that leaves it out
NIL_CASES = (("bc5cdr:dev", "bc5cdr:train"), ("ncbi_disease:dev", "ncbi_disease:train"))
#: made-up mentions per dev set
NIL_MENTIONS = 500
#: thresholds tried (link scores: cosines, 1.0 for a lexical match)
NIL_THRESHOLDS = tuple(round(0.5 + 0.02 * i, 2) for i in range(21))
#: the most Acc@1 a threshold may cost on any dev set (the normalizer's figures must hold)
NIL_ACCURACY_COST = 0.0015
#: words that start or end no made-up n-gram ("of the", "in a" name nothing anyway)
STOPWORDS = frozenset("""a an and are as at be been but by for from had has have in into is it
its no not of on or that the their these this those to was were which with""".split())
WORD = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]")
#: the document ID prefix of a made-up nonsense word
NONSENSE = "nonsense-"


def nil_mentions(docs: list[Document], count: int, seed: int = 0) -> list[Document]:
    """Documents holding ``count`` mentions that name no concept: half word n-grams (1-3
    words, no stop word at either end) of ``docs``' texts that overlap no gold mention, each
    in a copy of its document (context for abbreviations, as ``linker normalize`` reads it),
    half nonsense words (a word of 6+ letters with its letters shuffled), each a
    one-mention document (as ``Linker.normalize`` reads one). Each is typed like a gold
    mention drawn at random, so type-aware search sees the dev sets' type mix."""
    rng = random.Random(seed)
    types = [a.type for d in docs for a in d.annotations]
    spans: list[tuple[int, int, int]] = []
    long_words: list[str] = []
    for number, doc in enumerate(docs):
        taken = [(a.start, a.end) for a in doc.annotations]
        for passage in doc.passages:
            words = list(WORD.finditer(passage.text))
            long_words += [w.group() for w in words if len(w.group()) >= 6]
            for i in range(len(words)):
                for last in words[i:i + 3]:
                    if {words[i].group().lower(), last.group().lower()} & STOPWORDS:
                        continue
                    start = passage.offset + words[i].start()
                    end = passage.offset + last.end()
                    if not any(s < end and start < e for s, e in taken):
                        spans.append((number, start, end))
    out: dict[int, Document] = {}
    for number, start, end in sorted(rng.sample(spans, min(count // 2, len(spans)))):
        doc = docs[number]
        if number not in out:
            out[number] = Document(f"{doc.id}-nil", [Passage(p.offset, p.text)
                                                     for p in doc.passages])
        out[number].add_annotation(Annotation(start, end, doc.text_at(start, end),
                                              rng.choice(types), []))
    n_grams = sum(len(d.annotations) for d in out.values())
    nonsense = []
    for k in range(count - n_grams):
        letters = list(rng.choice(long_words).lower())
        rng.shuffle(letters)
        word = "".join(letters)
        nonsense.append(Document(f"{NONSENSE}{k}", [Passage(0, word, annotations=[
            Annotation(0, len(word), word, rng.choice(types), [])])]))
    return [*out.values(), *nonsense]


def linked_scores(normalizer, docs: list[Document]) -> list[tuple[float | None, tuple]]:
    """``(link score, predicted IDs)`` of every annotation of ``docs``, normalized by
    ``normalizer`` with no NIL threshold (copies: the gold IDs stay), in document order; the
    IDs as ``linker score --kb`` compares them."""
    import copy

    from e2e_linker.scoring import normalized_ids

    copies = copy.deepcopy(docs)
    for doc in copies:
        for ann in doc.annotations:
            ann.concept_ids = []
    normalizer.normalize(copies, nil_threshold=0)
    return [(ann.link_score, normalized_ids(ann, normalizer.kb.resolve))
            for doc in copies for ann in doc.annotations]


def nil_rows(gold: list[tuple[float | None, bool]], made_up: list[float | None],
             thresholds: tuple[float, ...]) -> list[dict]:
    """Per threshold: Acc@1 over ``gold`` (``(score, right)`` of each gold mention; NIL is
    wrong), NIL precision and recall (made-up mentions, ``made_up`` their scores, the
    positives). A mention without a score (nothing found) is NIL at every threshold."""
    def nil(score: float | None, threshold: float) -> bool:
        return score is None or score < threshold

    rows = []
    for threshold in (0.0, *thresholds):
        right = sum(ok and not nil(score, threshold) for score, ok in gold)
        true_nil = sum(nil(score, threshold) for score in made_up)
        false_nil = sum(nil(score, threshold) for score, _ in gold)
        said = true_nil + false_nil
        rows.append({"threshold": threshold, "acc1": round(right / len(gold), 4),
                     "nil_precision": round(true_nil / said, 4) if said else None,
                     "nil_recall": round(true_nil / len(made_up), 4) if made_up else None})
    return rows


def chosen_threshold(cases: dict[str, list[dict]]) -> float:
    """The highest threshold whose Acc@1 is within :data:`NIL_ACCURACY_COST` of no threshold's
    on every dev set: as many made-up mentions NIL as the gold mentions' figures allow."""
    ok = [row["threshold"] for row in next(iter(cases.values()))
          if all(r["acc1"] >= rows[0]["acc1"] - NIL_ACCURACY_COST
                 for rows in cases.values() for r in rows if r["threshold"] == row["threshold"])]
    return max(ok)


def nil_sweep(model: str | None = None, count: int = NIL_MENTIONS, seed: int = 0,
              search: str | None = None, thresholds: tuple[float, ...] = NIL_THRESHOLDS,
              cases: tuple[tuple[str, str], ...] = NIL_CASES) -> dict:
    """The NIL threshold chosen on dev data (see the module docstring): per dev set and
    threshold, Acc@1 and NIL precision/recall; the chosen threshold; the wall time."""
    from data_tools.registry import load_corpus
    from e2e_linker.normalizer.loading import load_normalizer
    from e2e_linker.scoring import is_scored, normalized_ids

    start = time.perf_counter()
    options = {"progress": False, **({"mode": search} if search else {})}
    result: dict = {"model": model or "embedded default", "made_up_per_set": count,
                    "seed": seed, "cases": {}}
    for dev, train in cases:
        normalizer = load_normalizer(model, options=options, train_mentions=[train])
        docs = list(load_corpus(dev))
        found = linked_scores(normalizer, docs)  # one per annotation, in document order
        annotations = [a for d in docs for a in d.annotations]
        gold = [(score, set(ids) == set(normalized_ids(a, normalizer.kb.resolve)))
                for a, (score, ids) in zip(annotations, found, strict=True)
                if is_scored(a) and a.concept_ids]
        made_up_docs = nil_mentions(docs, count, seed)
        made_up = [score for score, _ in linked_scores(normalizer, made_up_docs)]
        nonsense = [d.id.startswith(NONSENSE) for d in made_up_docs for _ in d.annotations]
        rows = nil_rows(gold, made_up, thresholds)
        for kind, mine in (("n_grams", False), ("nonsense", True)):
            part = [score for score, is_nonsense in zip(made_up, nonsense, strict=True)
                    if is_nonsense == mine]
            for row, of_kind in zip(rows, nil_rows(gold, part, thresholds), strict=True):
                row[f"nil_recall_{kind}"] = of_kind["nil_recall"]
        result["cases"][dev] = {"train_mentions": train, "gold_mentions": len(gold),
                                "made_up": len(made_up), "search": normalizer.options.mode,
                                "rows": rows}
    result["threshold"] = chosen_threshold({k: c["rows"] for k, c in result["cases"].items()})
    result["seconds"] = round(time.perf_counter() - start, 1)
    return result


def nil_markdown(result: dict) -> str:
    """The sweep as a table: each threshold's Acc@1 and NIL precision/recall per dev set."""
    cases = result["cases"]
    names = list(cases)
    lines = [f"# NIL threshold of `linker normalize` (dev data; chosen: "
             f"{result['threshold']:g})", "",
             f"Command: `{result.get('command', 'python -m eval.normalize_cli --nil')}`; model: "
             f"{result['model']}; {result['made_up_per_set']} made-up mentions per set (seed "
             f"{result['seed']}); {result['seconds']} s.", "",
             "| threshold | " + " | ".join(f"{n} Acc@1 | {n} NIL P | {n} NIL R" for n in names)
             + " |", "|---|" + "---|---|---|" * len(names)]

    def cell(value: float | None) -> str:
        return "" if value is None else f"{value:.4f}"

    for k, row in enumerate(cases[names[0]]["rows"]):
        cells = [f"{cells_of[key]:.4f}" if key == "acc1" else cell(cells_of[key])
                 for name in names for cells_of in [cases[name]["rows"][k]]
                 for key in ("acc1", "nil_precision", "nil_recall")]
        mark = " (chosen)" if row["threshold"] == result["threshold"] else ""
        lines.append(f"| {row['threshold']:g}{mark} | " + " | ".join(cells) + " |")
    chosen = {name: next(r for r in cases[name]["rows"] if r["threshold"] == result["threshold"])
              for name in names}
    lines += ["", f"NIL recall at {result['threshold']:g}, word n-grams / nonsense words: "
              + "; ".join(f"{n} {cell(r.get('nil_recall_n_grams'))} / "
                          f"{cell(r.get('nil_recall_nonsense'))}" for n, r in chosen.items())
              + "."]
    lines += ["", "; ".join(f"{n}: {c['gold_mentions']} gold mentions (D pool "
                            f"{c['train_mentions']}, search {c['search']}), {c['made_up']} "
                            "made up" for n, c in cases.items()) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
