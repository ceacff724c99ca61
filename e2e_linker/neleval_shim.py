"""Import neleval 3.1.1 on Python ≥3.10 / NumPy 2, and score Documents with it.

neleval uses ``collections.Sequence`` (removed in Python 3.10) and its bundled munkres uses
``np.int`` (removed in NumPy 1.24). We restore those two aliases before importing it — a
shim, not a fork. Used by the tests and benchmarks to check e2e_linker.scoring; neleval is a
test dependency only.
"""

from __future__ import annotations

import collections
import collections.abc
from collections.abc import Iterable

from data_tools.documents import Document
from e2e_linker.scoring import mentions_of

MEASURES = {
    "strict": "strong_all_match",
    "partial": "overlap-maxmax::span+kbid",
    "mentions": "strong_mention_match",
}


def import_neleval():
    """The ``neleval`` package, importable after the compatibility aliases are in place."""
    import numpy as np

    for name in ("Sequence", "Mapping", "MutableMapping", "Iterable", "Callable"):
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    for name, value in (("int", int), ("float", float), ("bool", bool), ("object", object)):
        if name not in np.__dict__:
            setattr(np, name, value)
    import neleval.annotation  # noqa: F401
    import neleval.document  # noqa: F401
    import neleval.evaluate  # noqa: F401

    return neleval


def to_neleval(docs: Iterable[Document]):
    """neleval Documents built with e2e_linker.scoring's ID and span policy."""
    neleval = import_neleval()
    from neleval.annotation import Annotation, Candidate
    from neleval.document import Document as NDocument

    by_doc: dict[str, list] = {}
    order: list[str] = []
    for doc in docs:
        if doc.id not in by_doc:
            by_doc[doc.id] = []
            order.append(doc.id)
    for m in mentions_of(docs):
        by_doc[m.docid].append(Annotation(m.docid, m.start, m.end, [Candidate(m.kbid)]))
    del neleval
    return [NDocument(docid, by_doc[docid]) for docid in order]


def neleval_scores(gold: list[Document], pred: list[Document],
                   modes: Iterable[str] = ("strict", "partial", "mentions")) -> dict[str, dict]:
    """{mode: {precision, recall, fscore, ptp, fp, rtp, fn}} computed by neleval itself."""
    import warnings

    import_neleval()
    from neleval.evaluate import Evaluate

    measures = [MEASURES[m] for m in modes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = Evaluate(to_neleval(pred), to_neleval(gold), measures=measures, fmt="none")()
    return {mode: results[MEASURES[mode]] for mode in modes}
