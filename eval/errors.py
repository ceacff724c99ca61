"""Where the strict errors of ``linker annotate`` come from, counted by cause on dev.

    python -m eval.errors [--docs bc5cdr:dev] [--kb-names-from bc5cdr:train] [--model DIR]
                          [--disable STEP,STEP] [--pred FILE] [--out eval/results/errors_dev]

The documents are annotated as ``linker annotate --replace`` would (the model's threshold and
declared pipeline; ``--disable sieve_stack`` leaves out a step, as annotate's ``--disable``
does); the KB's mined names come from
``--kb-names-from`` (train only by default: the shipped KB also holds dev's names, which would
hide dev's linking errors). ``--pred FILE`` scores that file's predictions instead (any
annotate output, or another system's), the KB for "outside the KB" then being the model's.
Every strict error is given one cause, the first that applies:

Detection — a gold mention no prediction matches (false negative) or a prediction no gold
mention matches (false positive), by span and concept as ``linker score --strict`` counts:

* ``type``: a prediction at exactly the gold span, of another type;
* ``composite``: (FN only) a gold mention with several concepts (``D1|D2``), which one span of
  the model cannot link;
* ``boundary``: an overlapping span at other offsets;
* ``abbreviation``: a short form (an in-document Schwartz–Hearst short form, or an upper-case
  token of 2–6 characters) nothing overlaps;
* ``missed`` / ``spurious``: nothing of either side overlaps.

Linking — a prediction at exactly the gold span, of the gold type, with another concept:

* ``gold has no concept`` (``-1``), ``composite`` (gold joins several concepts);
* ``concept outside the KB``: a gold concept the linking KB does not hold;
* ``short form``: the mention is a short form (above);
* ``sieve wrong (<step>)``: an exact-name or sieve-stack step chose the concept;
* ``dense wrong``: dense search chose it.

The most frequent texts of the larger classes follow the table (what a filter would meet).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from e2e_linker.lexical.abbreviations import DocumentAbbreviations
from e2e_linker.scoring import mentions_of
from eval.models import model_with_names_from
from eval.reporting import command_line, f1_fields, machine, write_results

RESULTS = Path(__file__).parent / "results" / "errors_dev"
#: an upper-case token of 2–6 characters ("PD", "NMS", "5-HT" is not one): a short form
ACRONYM = re.compile(r"^(?=(?:.*[A-Z]){2})[A-Z0-9][A-Za-z0-9]{1,5}$")
DETECTION_CAUSES = ("type", "composite", "boundary", "abbreviation", "missed / spurious")
#: link methods a lexical step decided (names, sieves, written forms, a gene's ortholog)
SIEVE_METHODS = ("exact", "abbreviation", "training", "compact_key", "written_form", "name_form",
                 "ortholog", "text")


def short_forms(docs) -> dict[str, set[str]]:
    """Each document's in-document short forms (Schwartz–Hearst)."""
    return {doc.id: {short for p in doc.passages
                     for short in DocumentAbbreviations.scan(p.text).definitions}
            for doc in docs}


def is_short_form(text: str, defined: set[str]) -> bool:
    """A defined short form of its document, or an acronym-shaped token."""
    return text in defined or bool(ACRONYM.match(text))


def detection_cause(m, others, shorts: set[str], text: str, gold_side: bool) -> str:
    """The cause of a strict detection error ``m`` given the other side's mentions of its
    document (``others``)."""
    same_span = [o for o in others if o.start == m.start and o.end == m.end]
    if any(o.type != m.type for o in same_span):
        return "type"
    if gold_side and len(m.ids) > 1:
        return "composite"
    if any(o.overlaps(m) for o in others):
        return "boundary"
    if is_short_form(text, shorts):
        return "abbreviation"
    return "missed / spurious"


def linking_cause(gold_m, pred_ann, kb, shorts: set[str], text: str) -> str:
    """The cause of a wrong concept at a correctly detected span."""
    if gold_m.kbid == "-1":
        return "gold has no concept"
    if len(gold_m.ids) > 1:
        return "composite"
    if any(kb.get(kb.resolve(c)) is None for c in gold_m.ids):
        return "concept outside the KB"
    if is_short_form(text, shorts):
        return "short form"
    method = pred_ann.infons.get("link_method", "dense")
    if method in SIEVE_METHODS:
        return f"sieve wrong ({method})"
    return "dense wrong"


def classify(gold_docs, pred_docs, kb) -> dict:
    """Counts by cause and type, and example texts, for one prediction run."""
    texts = {(d.id, a.start, a.end - 1): a for d in pred_docs for a in d.annotations}
    gold_texts = {(d.id, a.start, a.end - 1): a.text for d in gold_docs for a in d.annotations}
    shorts = short_forms(gold_docs)
    gold = mentions_of(gold_docs)
    pred = mentions_of(pred_docs)
    by_doc_gold: dict[str, list] = defaultdict(list)
    by_doc_pred: dict[str, list] = defaultdict(list)
    for m in gold:
        by_doc_gold[m.docid].append(m)
    for m in pred:
        by_doc_pred[m.docid].append(m)
    pred_keys = {(m.docid, m.start, m.end, m.kbid) for m in pred}
    gold_keys = {(m.docid, m.start, m.end, m.kbid) for m in gold}
    fn: Counter = Counter()
    fp: Counter = Counter()
    linking: Counter = Counter()
    examples: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    linked_pairs = set()
    for m in gold:
        if (m.docid, m.start, m.end, m.kbid) in pred_keys:
            continue
        text = gold_texts[(m.docid, m.start, m.end)]
        same = [p for p in by_doc_pred[m.docid]
                if p.start == m.start and p.end == m.end and p.type == m.type]
        if same:
            cause = linking_cause(m, texts[(m.docid, m.start, m.end)], kb, shorts[m.docid], text)
            linking[(cause, m.type)] += 1
            examples[("linking", cause, m.type)][text] += 1
            linked_pairs.update((p.docid, p.start, p.end) for p in same)
            continue
        cause = detection_cause(m, by_doc_pred[m.docid], shorts[m.docid], text, True)
        fn[(cause, m.type)] += 1
        examples[("FN", cause, m.type)][text] += 1
    for m in pred:
        if (m.docid, m.start, m.end, m.kbid) in gold_keys:
            continue
        if (m.docid, m.start, m.end) in linked_pairs:
            continue  # counted once, as a linking error
        text = texts[(m.docid, m.start, m.end)].text
        cause = detection_cause(m, by_doc_gold[m.docid], shorts[m.docid], text, False)
        fp[(cause, m.type)] += 1
        examples[("FP", cause, m.type)][text] += 1
    methods: Counter = Counter()
    correct: Counter = Counter()
    for m in pred:
        method = texts[(m.docid, m.start, m.end)].infons.get("link_method", "dense")
        methods[method] += 1
        correct[method] += (m.docid, m.start, m.end, m.kbid) in gold_keys
    return {"fn": fn, "fp": fp, "linking": linking, "examples": examples,
            "by_method": {k: {"predicted": methods[k], "strict_correct": correct[k]}
                          for k in sorted(methods)}}


def table(counts: dict, types: list[str], gold_total: dict, pred_total: dict) -> list[str]:
    """The Markdown tables of :func:`classify`'s counts."""
    lines = ["| detection error | " + " | ".join(f"{t} FN | {t} FP" for t in types) + " |",
             "|---" * (1 + 2 * len(types)) + "|"]
    for cause in DETECTION_CAUSES:
        cells = [f"{counts['fn'][(cause, t)]} | {counts['fp'][(cause, t)]}" for t in types]
        lines.append(f"| {cause} | " + " | ".join(cells) + " |")
    totals = [f"{sum(v for (c, tt), v in counts['fn'].items() if tt == t)} | "
              f"{sum(v for (c, tt), v in counts['fp'].items() if tt == t)}" for t in types]
    lines.append("| **all detection** | " + " | ".join(totals) + " |")
    lines += ["", "| linking error (span and type right) | " + " | ".join(types) + " |",
              "|---" * (1 + len(types)) + "|"]
    for cause in sorted({c for c, _ in counts["linking"]},
                        key=lambda c: -sum(counts["linking"][(c, t)] for t in types)):
        lines.append(f"| {cause} | " + " | ".join(str(counts["linking"][(cause, t)])
                                                   for t in types) + " |")
    lines.append("| **all linking** | " + " | ".join(
        str(sum(v for (c, tt), v in counts["linking"].items() if tt == t)) for t in types)
        + " |")
    lines += ["", "Gold mentions " + ", ".join(f"{t} {gold_total[t]}" for t in types)
              + "; predicted " + ", ".join(f"{t} {pred_total[t]}" for t in types) + ".", "",
              "| link method | predicted | strict-correct | precision |", "|---|---|---|---|"]
    for method, row in counts["by_method"].items():
        precision = row["strict_correct"] / max(1, row["predicted"])
        lines.append(f"| {method} | {row['predicted']} | {row['strict_correct']} | "
                     f"{precision:.3f} |")
    lines += ["", "Most frequent texts (count) of the larger classes:", ""]
    ranked = sorted(counts["examples"].items(), key=lambda kv: -sum(kv[1].values()))
    for (side, cause, type_), texts in ranked[:10]:
        common = ", ".join(f"{t} ({n})" for t, n in texts.most_common(15))
        lines.append(f"- {side} {cause}, {type_} ({sum(texts.values())}): {common}")
    return lines


def main(argv: list[str] | None = None) -> int:
    from data_tools.registry import load_corpus
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="bc5cdr:dev")
    parser.add_argument("--kb-names-from", nargs="*", default=["bc5cdr:train"],
                        help="corpora whose annotation texts extend the KB")
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--disable", default="", metavar="STEP,STEP",
                        help="pipeline steps left out, as linker annotate --disable "
                             "(e.g. sieve_stack)")
    parser.add_argument("--pred", default=None,
                        help="a predictions file to classify instead of running the model")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = AnnotateSettings(disable=args.disable)  # an unknown step: stopped here
    gold = load_corpus(args.docs, args.max_docs)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = model_with_names_from(args.kb_names_from, Path(tmp),
                                          Path(args.model) if args.model else None)
        annotator = load_annotator(replace(
            settings, model_dir=None if model_dir is None else str(model_dir)))
    if args.pred:
        by_id = {d.id: d for d in load_corpus(args.pred)}
        missing = [d.id for d in gold if d.id not in by_id]
        if missing:
            raise SystemExit(f"{args.pred} lacks {len(missing)} documents of {args.docs} "
                             f"(first: {missing[0]})")
        pred = [by_id[d.id] for d in gold]
    else:
        pred = annotator.annotate(gold, replace=True)
    counts = classify(gold, pred, annotator.kb)
    types = sorted({m.type for m in mentions_of(gold)})
    gold_total = Counter(m.type for m in mentions_of(gold))
    pred_total = Counter(m.type for m in mentions_of(pred))
    scores = f1_fields(gold, pred, ("strict", "partial", "mentions"))
    result = {"command": command_line("errors", argv), "machine": machine(),
              "docs": args.docs, "documents": len(gold), "model": args.model or "shipped",
              "pred": args.pred, "steps": annotator.pipeline.names,
              "kb_names_from": args.kb_names_from, "disabled": list(settings.disable),
              "threshold": annotator.settings.threshold, **scores,
              "false_negatives": {f"{c}/{t}": n for (c, t), n in sorted(counts["fn"].items())},
              "false_positives": {f"{c}/{t}": n for (c, t), n in sorted(counts["fp"].items())},
              "linking_errors": {f"{c}/{t}": n
                                 for (c, t), n in sorted(counts["linking"].items())},
              "by_link_method": counts["by_method"],
              "examples": {f"{s}/{c}/{t}": dict(texts.most_common(30))
                           for (s, c, t), texts in counts["examples"].items()}}
    system = (f"predictions {args.pred}" if args.pred else
              f"model {args.model or 'shipped'}, threshold {annotator.settings.threshold}, "
              f"steps {', '.join(annotator.pipeline.names)}")
    head = (f"`{args.docs}`, {len(gold)} documents, {system}; KB names mined from "
            f"{', '.join(args.kb_names_from) or 'nothing'}: strict F1 "
            f"{scores['strict']:.4f} (" + ", ".join(f"{t} {v:.4f}" for t, v in
                                                   scores["strict_by_type"].items())
            + f"), partial {scores['partial']:.4f}, mentions {scores['mentions']:.4f}.")
    write_results(args.out, result,
                  "\n".join([head, "", *table(counts, types, gold_total, pred_total)]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
