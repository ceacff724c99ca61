"""One detection pass, many annotate settings: the rows the dev sweeps of issue 17 report.

Why its own module: ``eval.lexical_gate`` and ``eval.mention_propagation`` sweep different
:class:`~e2e_linker.collective.annotator.Annotator` attributes over the same two corpora; the
candidates are scored once (at the lowest threshold any row needs) and each row only selects,
links and scores, so a sweep costs one encoder pass per corpus.
"""

from __future__ import annotations

import time

from e2e_linker.collective.annotator import attach_annotations

MODES = ("strict", "partial", "mentions")
#: the annotator attributes issue 17 added, all off: annotate's selection and linking as they
#: were before (exact-name sieve and dense search, no gate, no document-level steps)
STEPS_OFF = {"sieves": None, "lexical_gate": None, "short_forms": False,
             "propagation_threshold": None}


def setting_rows(annotator, gold, settings: list[dict], types: tuple[str, ...] | None = None,
                 resolve=None) -> list[dict]:
    """One row per setting (annotator attributes → values), scored by type in every mode;
    ``types`` keeps only those predicted types, ``resolve`` maps IDs before scoring. The
    annotator's attributes are put back afterwards."""
    from e2e_linker.scoring import score

    names = sorted({k for setting in settings for k in setting})
    saved = {k: getattr(annotator, k) for k in names}
    lowest = min([annotator.threshold] + [s[k] for s in settings
                                          for k in ("threshold", "propagation_threshold")
                                          if s.get(k) is not None])
    started = time.perf_counter()
    candidates, _ = annotator.detect(gold, threshold=lowest, resolve=False)
    detect_s = time.perf_counter() - started
    rows = []
    try:
        for setting in settings:
            for key in names:
                setattr(annotator, key, setting.get(key, saved[key]))
            started = time.perf_counter()
            spans = annotator.select(candidates, gold)
            pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
            seconds = detect_s + time.perf_counter() - started
            if types is not None:
                for doc in pred:
                    for passage in doc.passages:
                        passage.annotations = [a for a in passage.annotations
                                               if a.type in types]
            row: dict = {**{k: getattr(annotator, k) for k in names},
                         "spans": sum(len(d.annotations) for d in pred),
                         "seconds": round(seconds, 1)}
            for mode in MODES:
                report = score(gold, pred, mode, by_type=True, resolve=resolve)
                row[mode] = {"p": round(report.precision, 4), "r": round(report.recall, 4),
                             "f1": round(report.f1, 4)}
                row[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
            rows.append(row)
            print(row, flush=True)
    finally:
        for key, value in saved.items():
            setattr(annotator, key, value)
    return rows


def rows_table(title: str, rows: list[dict], columns: dict[str, object],
               by_type: bool = True) -> list[str]:
    """A Markdown table of :func:`setting_rows`: ``columns`` names each setting column and
    how to print its value (a function of the row)."""
    types = sorted(rows[0]["strict_by_type"]) if by_type else []
    header = [*columns, "spans", "strict P", "strict R", "strict F1",
              *(f"{t} strict" for t in types), "partial F1", "mention F1", "s"]
    lines = [f"| {title}: " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in rows:
        cells = [str(show(row)) for show in columns.values()]
        cells += [str(row["spans"]), *(f"{row['strict'][k]:.4f}" for k in ("p", "r", "f1")),
                  *(f"{row['strict_by_type'].get(t, 0.0):.4f}" for t in types),
                  f"{row['partial']['f1']:.4f}", f"{row['mentions']['f1']:.4f}",
                  str(row["seconds"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
