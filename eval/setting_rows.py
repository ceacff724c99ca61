"""One detection pass, many pipelines: the rows the dev tables and ablations report.

Why its own module: the ablation (:mod:`eval.accuracy_ablation`), the sweeps
(:mod:`eval.setting_sweep`) and the benchmark's plain row all score the same candidates under
several pipelines; the candidates are scored once (at the lowest floor any row needs) and each
row only selects, links and scores, so a table costs one encoder pass per corpus. A row is a
change of the model's declared pipeline (``--disable`` and ``--set``, the one mechanism
annotate has) and optionally γ, so its steps come from the declaration and cannot drift from
the code.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e_linker.collective.annotator import attach_annotations

MODES = ("strict", "partial", "mentions")


@dataclass(frozen=True)
class Row:
    """One configuration to score: a label, the steps it leaves out, the parameters it sets
    (``step.param=value``) and its γ (None: the model's)."""

    label: str
    disable: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    threshold: float | None = None


def rule_steps(pipeline) -> list[str]:
    """The declared steps a row may switch off (every step but the required ones)."""
    return pipeline.rule_steps()


def plain_row(pipeline, label: str = "every rule step off") -> Row:
    """The row with every rule step of ``pipeline`` disabled: detection, overlap resolution
    and the linker's dense search alone."""
    return Row(label, tuple(rule_steps(pipeline)))


def ablation_rows(pipeline) -> list[Row]:
    """All declared steps on, then each rule step off in turn, then all of them off: the
    rows read from the declaration, so a step added to it gets its row."""
    return [Row("all declared steps"),
            *(Row(f"without {name}", (name,)) for name in rule_steps(pipeline)),
            plain_row(pipeline)]


def undeclared_rows(pipeline) -> list[Row]:
    """A row for each registered rule step ``pipeline`` does not declare, added with its
    defaults (``--set STEP``): the steps the re-earning left off, measured again.

    Why: a step dropped from the default because it gained too little on one model may earn
    its place on the next; re-earning only the declared steps would never find out."""
    from e2e_linker.pipeline.declaration import STEPS

    return [Row(f"with {name}", overrides=(name,)) for name, step in STEPS.items()
            if not step.required and not pipeline.has(name)]


def runner_for(annotator, row: Row):
    """``annotator`` running ``row``'s pipeline."""
    return annotator.with_pipeline(annotator.pipeline.changed(row.disable, (), row.overrides))


def row_predictions(annotator, gold, rows: list[Row]):
    """``(row, γ, pipeline step names, predicted documents, seconds)`` for each row, in order:
    the candidates detected once, at the lowest floor any row's pipeline reads, then each
    row's pipeline selects and links them (seconds: the detection plus the row's own work).

    Why a generator: a table over a corpus holds one row's predictions at a time, and each
    caller scores them its own way (:func:`setting_rows` by type in every mode; the widened
    dev table's ablation on each corpus's rows, :mod:`eval.accuracy_ablation`)."""
    runners = [runner_for(annotator, row) for row in rows]
    keeps = [annotator.settings.threshold if row.threshold is None else row.threshold
             for row in rows]
    lowest = min(r.pipeline.detection_floor(k) for r, k in zip(runners, keeps, strict=True))
    started = time.perf_counter()
    candidates, _ = annotator.detect(gold, threshold=lowest, resolve=False)
    detect_s = time.perf_counter() - started
    for row, runner, keep in zip(rows, runners, keeps, strict=True):
        started = time.perf_counter()
        spans = runner.select(candidates, gold, keep=keep)
        pred = attach_annotations(gold, spans, runner.link(spans, gold), replace=True)
        yield row, keep, runner.pipeline.names, pred, detect_s + time.perf_counter() - started


def setting_rows(annotator, gold, rows: list[Row], types: tuple[str, ...] | None = None,
                 resolve=None) -> list[dict]:
    """One result per row, scored by type in every mode; ``types`` keeps only those predicted
    types, ``resolve`` maps IDs before scoring."""
    from e2e_linker.scoring import score

    out = []
    for row, keep, steps, pred, seconds in row_predictions(annotator, gold, rows):
        result: dict = {"row": row.label, "disable": list(row.disable),
                        "overrides": list(row.overrides), "threshold": keep,
                        "steps": steps}
        if types is not None:
            for doc in pred:
                for passage in doc.passages:
                    passage.annotations = [a for a in passage.annotations if a.type in types]
        result.update(spans=sum(len(d.annotations) for d in pred), seconds=round(seconds, 1))
        for mode in MODES:
            report = score(gold, pred, mode, by_type=True, resolve=resolve)
            result[mode] = {"p": round(report.precision, 4), "r": round(report.recall, 4),
                            "f1": round(report.f1, 4)}
            result[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
        out.append(result)
        print({k: result[k] for k in ("row", "spans", "strict")}, flush=True)
    return out


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


@dataclass
class SweepRows:
    """The rows of one sweep on both dev corpora, and what the report prints about them."""

    bc5cdr_dev: list[dict]
    ncbi_dev: list[dict] = field(default_factory=list)
    bc5cdr_documents: int = 0
    ncbi_documents: int = 0
    biored_dev: list[dict] = field(default_factory=list)
    biored_documents: int = 0
    #: the last annotator loaded (its model's own settings, for the report)
    annotator: object = None


def dev_rows(settings: list[Row], model: str | None, kb_names_from: list[str],
             max_docs: int | None = None, ncbi: bool = True, biored: bool = False
             ) -> SweepRows:
    """:func:`setting_rows` of ``settings`` (the rows) on BC5CDR dev with the model's mined names rebuilt from
    ``kb_names_from`` (the shipped KB also holds dev's names; empty: the model's own KB), then
    — with ``ncbi`` — on NCBI disease dev with the model's own KB, Disease only, IDs through
    MEDIC (a corpus the model was not trained on), and — with ``biored`` — on BioRED dev,
    Chemical + Disease as :mod:`eval.ood_dev` scores it (the out-of-domain dev set). The
    loading every dev sweep shares."""
    from data_tools.registry import load_corpus, load_kb
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings
    from eval.models import model_with_names_from

    bc5cdr = load_corpus("bc5cdr:dev", max_docs)
    with tempfile.TemporaryDirectory() as tmp:  # the model folder lives while its rows run
        if kb_names_from:  # the packed index kept: the names that differ searched beside it
            annotator = load_annotator(AnnotateSettings(model_dir=str(model_with_names_from(
                kb_names_from, Path(tmp), Path(model) if model else None,
                keep_packed_index=True))))
        else:  # the model's own KB: for deltas between rows (the packed index serves it)
            annotator = load_annotator(AnnotateSettings(model_dir=model))
        out = SweepRows(setting_rows(annotator, bc5cdr, settings),
                        bc5cdr_documents=len(bc5cdr), annotator=annotator)
    if (ncbi or biored) and kb_names_from:  # the other corpora link against the model's KB
        out.annotator = load_annotator(AnnotateSettings(model_dir=model))
    if ncbi:
        docs = load_corpus("ncbi_disease:dev", max_docs)
        out.ncbi_dev = setting_rows(out.annotator, docs, settings, ("Disease",),
                                    load_kb("medic").resolve)
        out.ncbi_documents = len(docs)
    if biored:
        from eval.ood_dev import CORPUS_TYPES, gold_of, only_types

        types = CORPUS_TYPES["biored:dev"]
        docs = only_types(gold_of("biored:dev", max_docs), types)
        out.biored_dev = setting_rows(out.annotator, docs, settings, types,
                                      load_kb("bc5cdr").resolve)
        out.biored_documents = len(docs)
    return out
