"""Import neleval 3.1.1 on Python ≥3.10 / NumPy 2, and score Documents with it.

neleval imports ``collections.Sequence`` (removed in Python 3.10) and its bundled munkres uses
``np.bool`` (removed in NumPy 1.24; ``np.int``/``np.float``/``np.object`` went at the same time).
We put those aliases back before importing it: a shim, not a fork, no neleval code copied.
The tests and eval/neleval_crosscheck.py use it to check e2e_linker.scoring; neleval is a test
dependency only, so nothing here is imported by ``linker score``.

Documents become neleval Annotations through e2e_linker.scoring.mentions_of, so both scorers
see the same mentions (same ID policy, inclusive end offsets, same skipped annotations).
"""

from __future__ import annotations

import collections
import collections.abc
import json
import warnings
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from data_tools.documents import Document
from e2e_linker.scoring import mentions_of

#: our mode name → neleval measure name
MEASURES = {
    "strict": "strong_all_match",
    "partial": "overlap-maxmax::span+kbid",
    "mentions": "strong_mention_match",
}


def import_neleval() -> ModuleType:
    """The ``neleval`` package with ``annotation``, ``document`` and ``evaluate`` loaded."""
    import numpy as np

    for name in ("Sequence", "Mapping", "MutableMapping", "Iterable", "Callable"):
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    for name, value in (("int", int), ("float", float), ("bool", bool), ("object", object)):
        if name not in np.__dict__:
            setattr(np, name, value)
    import neleval
    import neleval.annotation
    import neleval.document
    import neleval.evaluate  # noqa: F401 - loaded so callers can use neleval.evaluate

    return neleval


def to_neleval(docs: Iterable[Document], include_parts: bool = False) -> list[Any]:
    """neleval Documents built with e2e_linker.scoring's ID and span policy.

    The kbid string goes to neleval as the candidate's entity ID (so a ``NIL…`` ID is a NIL
    cluster there, which scoring mirrors) and the annotation type as the candidate's type.
    """
    import_neleval()
    from neleval.annotation import Annotation, Candidate
    from neleval.document import Document as NDocument

    docs = list(docs)
    by_doc: dict[str, list[Any]] = {doc.id: [] for doc in docs}
    for m in mentions_of(docs, include_parts=include_parts):
        by_doc[m.docid].append(Annotation(m.docid, m.start, m.end,
                                          [Candidate(m.kbid, None, m.type)]))
    return [NDocument(docid, anns) for docid, anns in by_doc.items()]


def _with_tp(results: dict[str, float]) -> dict[str, float]:
    """neleval's results plus ``tp`` (= ptp), the name e2e_linker.scoring.ScoreReport uses."""
    return {**results, "tp": results["ptp"]}


def neleval_scores(gold: Iterable[Document], pred: Iterable[Document],
                   measures: Iterable[str] = ("strict", "partial", "mentions"),
                   include_parts: bool = False) -> dict[str, dict[str, float]]:
    """{measure: {precision, recall, fscore, tp, ptp, fp, rtp, fn}} computed by neleval itself.

    ``measures`` are our mode names (``strict``…) or neleval measure strings; the result is keyed
    by what was asked. 0/0 rates are 0 (neleval warns; the warning is silenced).
    """
    import_neleval()
    from neleval.evaluate import Evaluate

    asked = list(measures)
    names = [MEASURES.get(m, m) for m in asked]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = Evaluate(to_neleval(pred, include_parts), to_neleval(gold, include_parts),
                           measures=names, fmt="none")()
    return {m: _with_tp(results[name]) for m, name in zip(asked, names, strict=True)}


def neleval_scores_by_type(gold: Iterable[Document], pred: Iterable[Document],
                           measures: Iterable[str] = ("strict", "partial", "mentions"),
                           ) -> dict[str, dict[str, dict[str, float]]]:
    """{measure: {type: results}} from neleval's ``group_by=['type']``.

    neleval only makes groups for types present in gold, so a type seen only in predictions
    has no entry here (e2e_linker.scoring reports it, with all its mentions false positives).
    """
    import_neleval()
    from neleval.evaluate import Evaluate

    asked = list(measures)
    names = [MEASURES.get(m, m) for m in asked]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = Evaluate(to_neleval(pred), to_neleval(gold), measures=names, fmt="none",
                           group_by=["type"])()
    out: dict[str, dict[str, dict[str, float]]] = {m: {} for m in asked}
    for m, name in zip(asked, names, strict=True):
        prefix = f"{name};type="
        for key, value in results.items():
            raw = key[len(prefix):] if key.startswith(prefix) else None
            # per-type keys hold json.dumps(type); the averages are bare <micro>/<macro>
            if raw is not None and raw not in ("<micro>", "<macro>"):
                out[m][json.loads(raw)] = _with_tp(value)
    return out
