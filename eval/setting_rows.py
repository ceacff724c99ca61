"""One detection pass, many annotate settings: the rows the dev sweeps of issue 17 report.

Why its own module: ``eval.lexical_gate`` and ``eval.mention_propagation`` sweep different
:class:`~e2e_linker.collective.annotator.Annotator` attributes over the same two corpora; the
candidates are scored once (at the lowest threshold any row needs) and each row only selects,
links and scores, so a sweep costs one encoder pass per corpus.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from e2e_linker.collective.annotator import attach_annotations

MODES = ("strict", "partial", "mentions")
#: the steps issues 17 and 29 added, all off: annotate's selection and linking as they were
#: before (exact-name sieve and dense search, no gate, no document-level steps, the type
#: head's type kept whatever the concept, every short form and residue kept)
STEPS_OFF = {"sieves": None, "lexical_gate": None, "short_forms": False,
             "propagation_threshold": None, "dictionary_threshold": None,
             "type_from_concept": False, "gene_products": "keep",
             "redefined_short_forms": "keep", "undefined_short_max": 0,
             "gene_short_forms": "keep", "disease_symbols": "keep",
             "sequence_residues": "keep", "gene_modifiers": "keep",
             "name_extension": None, "composites": False}
#: the keys of a setting that are the annotator's linking components (its SpanLinker's
#: attributes: a SieveStack or None, a text linker or None, composite linking on or off);
#: every other key is an AnnotateSettings field
LINKER_PARTS = ("sieves", "text_linker", "composites")


def current(annotator, key: str):
    """The value of one setting key (see :data:`LINKER_PARTS`) on ``annotator``."""
    return getattr(annotator.linker if key in LINKER_PARTS else annotator.settings, key)


@contextmanager
def applied(annotator, setting: dict) -> Iterator[None]:
    """``annotator`` under ``setting`` (settings fields and linker parts) for a ``with``
    block, put back as it was afterwards."""
    saved_settings = annotator.settings
    saved_parts = {k: getattr(annotator.linker, k) for k in LINKER_PARTS}
    annotator.settings = replace(saved_settings, **{k: v for k, v in setting.items()
                                                   if k not in LINKER_PARTS})
    for key in LINKER_PARTS:
        if key in setting:
            setattr(annotator.linker, key, setting[key])
    try:
        yield
    finally:
        annotator.settings = saved_settings
        for key, value in saved_parts.items():
            setattr(annotator.linker, key, value)


def setting_rows(annotator, gold, settings: list[dict], types: tuple[str, ...] | None = None,
                 resolve=None) -> list[dict]:
    """One row per setting (annotator attributes → values), scored by type in every mode;
    ``types`` keeps only those predicted types, ``resolve`` maps IDs before scoring. The
    annotator's attributes are put back afterwards."""
    from e2e_linker.scoring import score

    names = sorted({k for setting in settings for k in setting})
    saved = {k: current(annotator, k) for k in names}
    # candidates scored down to the lowest floor any row's selection reads (γ, propagation,
    # dictionary, name extension: SelectionRules.detection_floor of the row's settings, the
    # annotator's where the row sets none)
    lowest = min(replace(annotator.settings, **{k: v for k, v in setting.items()
                                               if k not in LINKER_PARTS}
                         ).selection_rules().detection_floor() for setting in settings)
    started = time.perf_counter()
    candidates, _ = annotator.detect(gold, threshold=lowest, resolve=False)
    detect_s = time.perf_counter() - started
    rows = []
    for setting in settings:
        with applied(annotator, {k: setting.get(k, saved[k]) for k in names}):
            started = time.perf_counter()
            spans = annotator.select(candidates, gold)
            pred = attach_annotations(gold, spans, annotator.link(spans, gold), replace=True)
            seconds = detect_s + time.perf_counter() - started
            row: dict = {**{k: current(annotator, k) for k in names}}
        if types is not None:
            for doc in pred:
                for passage in doc.passages:
                    passage.annotations = [a for a in passage.annotations if a.type in types]
        row.update(spans=sum(len(d.annotations) for d in pred), seconds=round(seconds, 1))
        for mode in MODES:
            report = score(gold, pred, mode, by_type=True, resolve=resolve)
            row[mode] = {"p": round(report.precision, 4), "r": round(report.recall, 4),
                         "f1": round(report.f1, 4)}
            row[f"{mode}_by_type"] = {t: round(r.f1, 4) for t, r in report.per_type.items()}
        rows.append(row)
        print(row, flush=True)
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


def dev_rows(settings: list[dict], model: str | None, kb_names_from: list[str],
             max_docs: int | None = None, ncbi: bool = True, biored: bool = False
             ) -> SweepRows:
    """:func:`setting_rows` on BC5CDR dev with the model's mined names rebuilt from
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
