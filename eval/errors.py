"""Where ``linker annotate`` loses points: detection and linking errors by cause, on dev.

    python -m eval.errors PRED [--gold bc5cdr:dev] [--kb bc5cdr] [--out eval/results/errors]

``PRED`` is annotate's output for the gold split's documents (annotations stripped, e.g.
``linker annotate CDR_DevelopmentSet.BioC.xml -o pred.xml --replace``). Gold and predicted
mentions are matched by exact span (composite parts in BioC gold are not scored, as in
``linker score``). Each error gets one cause, tested in this order:

detection, a gold mention not found with its exact span (false negative):
  ``type`` — the exact span was predicted with another type;
  ``composite`` — the gold mention names several concepts ("breast and ovarian cancer");
  ``abbreviation`` — the gold text is a short form defined in the document, or looks like one
  (one token, two capitals or more);
  ``boundary`` — a predicted span overlaps it;
  ``missed`` — nothing overlaps it.
detection, a predicted span that is no gold mention (false positive): ``type``,
  ``abbreviation``, ``boundary`` as above, else ``spurious`` (overlaps no gold mention); the most
  frequent spurious texts are listed.
linking, span and type right but the concept wrong:
  ``outside KB`` — no gold concept is in the KB; ``short form`` — linked by the abbreviation
  step; ``sieve wrong`` — linked by the exact-name sieve; ``dense wrong`` — by dense search;
  ``composite`` — several gold concepts.

Why: the accuracy work picks its changes from the largest rows, measured on dev, not test.
"""

from __future__ import annotations

import argparse
import platform
from collections import Counter
from pathlib import Path

from data_tools.documents import Annotation, Document, strip_prefix
from data_tools.formats import read_documents
from data_tools.registry import load_corpus, load_kb
from e2e_linker.kb_search.abbreviations import abbreviation_map
from e2e_linker.scoring import is_scored
from eval.reporting import command_line, write_results

DETECTION_CAUSES = ("type", "composite", "abbreviation", "boundary", "missed")
FP_CAUSES = ("type", "abbreviation", "boundary", "spurious")
LINK_CAUSES = ("outside KB", "composite", "short form", "sieve wrong", "dense wrong")


def looks_short(text: str) -> bool:
    """One token with two capitals or more ("TLE", "5-FU", "MPO-ANCA")."""
    return " " not in text.strip() and sum(c.isupper() for c in text) >= 2 and len(text) <= 10


def ids_of(ann: Annotation) -> tuple[str, ...]:
    """Concept IDs without prefixes; ``-1`` and empty IDs dropped."""
    return tuple(strip_prefix(c) for c in ann.concept_ids if c.strip() and c.strip() != "-1")


def classify_document(gold: Document, pred: Document, kb) -> dict[str, Counter]:
    """Error counts of one document, keyed ``"fn"``, ``"fp"``, ``"link"``, ``"tp"`` and
    ``"fp_texts"``, each counting ``(type, cause)`` (``fp_texts``: ``(type, text)``)."""
    out = {key: Counter() for key in ("fn", "fp", "link", "tp", "fp_texts")}
    golds = [a for a in gold.annotations if is_scored(a)]
    preds = [a for a in pred.annotations if is_scored(a)]
    short_forms = set(abbreviation_map(gold.text))
    pred_at = {(a.start, a.end): a for a in preds}
    gold_at = {(a.start, a.end): a for a in golds}

    def overlaps(a: Annotation, others: list[Annotation]) -> bool:
        return any(o.start < a.end and a.start < o.end for o in others)

    def is_short(a: Annotation) -> bool:
        return a.text.strip() in short_forms or looks_short(a.text)

    for g in golds:
        p = pred_at.get((g.start, g.end))
        if p is not None and p.type == g.type:
            out["tp"][(g.type, "span")] += 1
            gold_ids, pred_ids = ids_of(g), ids_of(p)
            if not gold_ids or pred_ids == gold_ids:
                continue
            if len(gold_ids) > 1:
                cause = "composite"
            elif not all(kb.resolve(i) in kb.concepts for i in gold_ids):
                cause = "outside KB"
            elif p.infons.get("link_method") == "abbreviation":
                cause = "short form"
            elif p.infons.get("link_method") == "exact":
                cause = "sieve wrong"
            else:
                cause = "dense wrong"
            out["link"][(g.type, cause)] += 1
            continue
        if p is not None:
            cause = "type"
        elif len(ids_of(g)) > 1:
            cause = "composite"
        elif is_short(g):
            cause = "abbreviation"
        elif overlaps(g, preds):
            cause = "boundary"
        else:
            cause = "missed"
        out["fn"][(g.type, cause)] += 1
    for p in preds:
        g = gold_at.get((p.start, p.end))
        if g is not None and g.type == p.type:
            continue
        if g is not None:
            cause = "type"
        elif is_short(p):
            cause = "abbreviation"
        elif overlaps(p, golds):
            cause = "boundary"
        else:
            cause = "spurious"
            out["fp_texts"][(p.type, p.text)] += 1
        out["fp"][(p.type, cause)] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pred", help="annotate's output for the gold documents")
    parser.add_argument("--gold", default="bc5cdr:dev", help="corpus spec or path")
    parser.add_argument("--kb", default="bc5cdr", help="KB spec (for 'outside KB')")
    parser.add_argument("--out", default="eval/results/errors")
    parser.add_argument("--top", type=int, default=25, help="spurious texts listed")
    args = parser.parse_args(argv)
    gold_docs = {d.id: d for d in load_corpus(args.gold)}
    kb = load_kb(args.kb)
    totals = {key: Counter() for key in ("fn", "fp", "link", "tp", "fp_texts")}
    seen = set()
    for pred in read_documents(args.pred):
        gold = gold_docs.get(pred.id)
        if gold is None:
            raise SystemExit(f"{args.pred}: document {pred.id} is not in {args.gold}")
        seen.add(pred.id)
        for key, counts in classify_document(gold, pred, kb).items():
            totals[key].update(counts)
    missing = sorted(set(gold_docs) - seen)
    if missing:
        raise SystemExit(f"{args.pred} lacks {len(missing)} gold documents (first: {missing[0]})")
    types = sorted({t for key in ("fn", "fp", "link", "tp") for t, _ in totals[key]})

    def table(key: str, causes: tuple[str, ...]) -> dict[str, dict[str, int]]:
        return {t: {c: totals[key][(t, c)] for c in causes} for t in types}

    result = {
        "command": command_line("errors", argv),
        "machine": platform.processor() or platform.machine(),
        "pred": str(Path(args.pred)), "gold": args.gold, "kb": args.kb, "documents": len(seen),
        "true_positive_spans": {t: totals["tp"][(t, "span")] for t in types},
        "false_negatives": table("fn", DETECTION_CAUSES),
        "false_positives": table("fp", FP_CAUSES),
        "linking_errors": table("link", LINK_CAUSES),
        "spurious_texts": [{"type": t, "text": x, "count": n}
                           for (t, x), n in totals["fp_texts"].most_common(args.top)],
    }
    lines = [f"Errors of `{args.pred}` against `{args.gold}` ({len(seen)} documents).", ""]
    for title, key, causes in (("False negatives (gold mention not found)", "false_negatives",
                                DETECTION_CAUSES),
                               ("False positives (predicted span not in gold)", "false_positives",
                                FP_CAUSES),
                               ("Linking errors (span and type right)", "linking_errors",
                                LINK_CAUSES)):
        lines += [f"**{title}**", "", "| entity type | " + " | ".join(causes) + " | total |",
                  "|---" * (len(causes) + 2) + "|"]
        for t in types:
            row = result[key][t]
            lines.append(f"| {t} | " + " | ".join(str(row[c]) for c in causes)
                         + f" | {sum(row.values())} |")
        lines.append("")
    lines += ["**Most frequent spurious spans**", "", "| entity type | text | count |", "|---|---|---|"]
    lines += [f"| {s['type']} | {s['text']} | {s['count']} |" for s in result["spurious_texts"]]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
