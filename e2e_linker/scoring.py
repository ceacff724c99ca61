"""Micro P/R/F1 with neleval's semantics, in plain Python (neleval only checks us in tests).

Modes (neleval measure names):

* ``strict``   — ``strong_all_match``: same document, exact span, same concept.
* ``partial``  — ``overlap-maxmax::span+kbid``: same document and concept, overlapping spans;
  each system (gold) mention counts the best character overlap with a paired gold (system)
  mention as a fraction of its own length, using neleval's own sweep to pair them.
* ``mentions`` — ``strong_mention_match``: exact span only.
* ``accuracy`` — Acc@1 of a normalization run on gold spans: a gold mention is correct when the
  prediction at the same span has the same set of concept IDs (a composite is right only if
  every part is). Gold mentions without a concept (``-1``) are not counted.

ID policy (the same when converting for neleval): a ``MESH:`` prefix and surrounding spaces
are stripped; several IDs (composites, ``D1|D2``) form one string joined by ``|``; no concept
(``-1``) is the ordinary ID string ``-1``. An annotation written with no ID field at all
(tmChem's 5-column PubTator rows, a BioC annotation without an ID infon) is a bare mention,
not a link, and is not scored in any mode. Spans use neleval's inclusive end offsets.
Annotations marked ``CompositeRole=IndividualMention`` (the parts BC5CDR's BioC release adds
beside each composite mention) are not scored, so BioC and PubTator gold give equal numbers.
Duplicate annotations (same key) count once, as in neleval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from data_tools.documents import NO_CONCEPT, Annotation, Document, strip_prefix

MODES = ("strict", "partial", "mentions", "accuracy")


@dataclass(eq=False)
class Mention:
    """One scored annotation: neleval's (docid, start, end-inclusive, kbid)."""

    docid: str
    start: int
    end: int
    kbid: str
    type: str = ""
    ids: tuple[str, ...] = ()

    def lt(self, other: Mention) -> bool:
        return (self.start, -self.end) < (other.start, -other.end)

    def overlaps(self, other: Mention) -> bool:
        return not (self.start > other.end or self.end < other.start)


def normalized_ids(ann: Annotation, resolve: Callable[[str], str] | None = None) -> tuple[str, ...]:
    ids = [strip_prefix(c) for c in ann.concept_ids]
    if resolve is not None:
        ids = [resolve(c) for c in ids]
    return tuple(ids)


def kbid(ann: Annotation, resolve: Callable[[str], str] | None = None) -> str:
    ids = normalized_ids(ann, resolve)
    return "|".join(ids) if ids else NO_CONCEPT


def is_scored(ann: Annotation) -> bool:
    """Composite parts and bare mentions written without any ID field are not scored."""
    if ann.no_id and not ann.concept_ids:
        return False
    return ann.infons.get("CompositeRole") != "IndividualMention"


def mentions_of(docs: Iterable[Document], resolve: Callable[[str], str] | None = None) -> list[Mention]:
    return [
        Mention(doc.id, ann.start, ann.end - 1, kbid(ann, resolve), ann.type,
                normalized_ids(ann, resolve))
        for doc in docs for ann in doc.annotations if is_scored(ann)
    ]


@dataclass
class ScoreReport:
    """Counts and rates; ``tp`` is neleval's ptp (equal to rtp except in partial mode)."""

    mode: str
    tp: float = 0.0
    fp: float = 0.0
    fn: float = 0.0
    rtp: float = 0.0
    accuracy: float | None = None
    n: int | None = None
    per_type: dict[str, ScoreReport] = field(default_factory=dict)

    @staticmethod
    def _div(n: float, d: float) -> float:
        return n / d if d else 0.0

    @property
    def precision(self) -> float:
        return self._div(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return self._div(self.rtp, self.rtp + self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return self._div(2 * p * r, p + r)

    def to_dict(self) -> dict:
        out = {"mode": self.mode, "precision": self.precision, "recall": self.recall,
               "f1": self.f1, "tp": self.tp, "fp": self.fp, "fn": self.fn}
        if self.mode == "partial":
            out["rtp"] = self.rtp
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy
            out["n"] = self.n
        if self.per_type:
            out["by_type"] = {t: r.to_dict() for t, r in sorted(self.per_type.items())}
        return out

    def format_table(self) -> str:
        def fmt(v: float) -> str:
            return f"{v:.3f}" if isinstance(v, float) and not float(v).is_integer() else f"{v:g}"

        rows = [("all", self)] + sorted(self.per_type.items())
        if self.mode == "accuracy":
            lines = ["type\taccuracy\tn"]
            lines += [f"{name}\t{r.accuracy:.4f}\t{r.n}" for name, r in rows]
            return "\n".join(lines)
        lines = [f"{self.mode}\tprecision\trecall\tf1\ttp\tfp\tfn"]
        for name, r in rows:
            lines.append(f"{name}\t{r.precision:.4f}\t{r.recall:.4f}\t{r.f1:.4f}\t"
                         f"{fmt(r.tp)}\t{fmt(r.fp)}\t{fmt(r.fn)}")
        return "\n".join(lines)


def _sets(system: list[Mention], gold: list[Mention], with_kbid: bool) -> tuple[int, int, int]:
    def key(m: Mention) -> tuple:
        return (m.docid, m.start, m.end, m.kbid) if with_kbid else (m.docid, m.start, m.end)

    g = {key(m) for m in gold}
    s = {key(m) for m in system}
    tp = len(g & s)
    return tp, len(s) - tp, len(g) - tp


def _overlapping(system: list[Mention], gold: list[Mention]):
    """neleval's Measure.get_overlapping for key span+kbid (grouped by kbid and docid)."""
    over_sys: dict[int, list[Mention]] = {id(m): [] for m in system}
    over_gold: dict[int, list[Mention]] = {id(m): [] for m in gold}
    sys_groups: dict[tuple, list[Mention]] = defaultdict(list)
    gold_groups: dict[tuple, list[Mention]] = defaultdict(list)
    for m in system:
        sys_groups[(m.kbid, m.docid)].append(m)
    for m in gold:
        gold_groups[(m.kbid, m.docid)].append(m)
    sort_key = lambda m: (m.start, -m.end)  # noqa: E731 - neleval's __lt__
    for key, sys_annots in sys_groups.items():
        gold_annots = gold_groups.pop(key, [])
        sys_annots.sort(key=sort_key)
        gold_annots.sort(key=sort_key)
        while sys_annots and gold_annots:
            s, g = sys_annots[-1], gold_annots[-1]
            if s.overlaps(g):
                over_sys[id(s)].append(g)
                over_gold[id(g)].append(s)
            if g.lt(s):
                sys_annots.pop()
            else:
                gold_annots.pop()
    return over_sys, over_gold


def _max_overlap(refs: list[Mention], overlaps: dict[int, list[Mention]]) -> float:
    total = 0.0
    for ref in refs:
        cands = overlaps[id(ref)]
        if not cands:
            continue
        most = max(min(ref.end, c.end) - max(ref.start, c.start) for c in cands)
        total += (most + 1) / (ref.end - ref.start + 1)
    return total


def _partial(system: list[Mention], gold: list[Mention]) -> tuple[float, float, float, float]:
    over_sys, over_gold = _overlapping(system, gold)
    fp = len(system) - _max_overlap(system, over_sys)
    fn = len(gold) - _max_overlap(gold, over_gold)
    return len(system) - fp, fp, len(gold) - fn, fn


def _accuracy(system: list[Mention], gold: list[Mention]) -> tuple[int, int]:
    predicted: dict[tuple, set[str]] = {}
    for m in system:
        predicted.setdefault((m.docid, m.start, m.end), set(m.ids))
    correct = n = 0
    for m in gold:
        if not m.ids:
            continue
        n += 1
        correct += predicted.get((m.docid, m.start, m.end)) == set(m.ids)
    return correct, n


def _score(system: list[Mention], gold: list[Mention], mode: str) -> ScoreReport:
    report = ScoreReport(mode)
    if mode in ("strict", "mentions"):
        tp, fp, fn = _sets(system, gold, with_kbid=mode == "strict")
        report.tp = report.rtp = tp
        report.fp, report.fn = fp, fn
    elif mode == "partial":
        report.tp, report.fp, report.rtp, report.fn = _partial(system, gold)
    elif mode == "accuracy":
        correct, n = _accuracy(system, gold)
        report.accuracy = correct / n if n else 0.0
        report.n = n
        report.tp = report.rtp = correct
        report.fn = n - correct
        report.fp = n - correct
    else:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return report


def score(gold: Iterable[Document], pred: Iterable[Document], mode: str = "strict",
          by_type: bool = False, resolve: Callable[[str], str] | None = None) -> ScoreReport:
    """Score ``pred`` against ``gold`` (micro-averaged over all documents).

    ``resolve`` maps concept IDs before comparison (e.g. a KB's alternative IDs to primary
    IDs); it is applied to both sides.
    """
    gold_m = mentions_of(gold, resolve)
    pred_m = mentions_of(pred, resolve)
    report = _score(pred_m, gold_m, mode)
    if by_type:
        types = sorted({m.type for m in gold_m} | {m.type for m in pred_m})
        for t in types:
            report.per_type[t] = _score([m for m in pred_m if m.type == t],
                                        [m for m in gold_m if m.type == t], mode)
    return report


def merge_predictions(*doc_streams: Iterable[Document]) -> list[Document]:
    """Documents with the same ID from several prediction files merged into one.

    The first stream's text and passages are kept; later streams contribute annotations
    (DNorm for diseases + tmChem for chemicals, say). Order: first appearance.
    """
    merged: dict[str, Document] = {}
    for stream in doc_streams:
        for doc in stream:
            if doc.id not in merged:
                merged[doc.id] = doc
                continue
            target = merged[doc.id]
            for ann in doc.annotations:
                target.add_annotation(ann)
            target.relations.extend(doc.relations)
    return list(merged.values())
