"""Micro P/R/F1 with neleval's semantics, in plain Python (neleval only checks us in tests).

Why our own code: neleval 3.1.1 needs import-time patches on Python 3.11 / NumPy 2 and reads
TAC files; ``linker score`` must work without it. tests/e2e_linker/test_scoring_neleval.py checks
that this module and neleval itself (through eval.neleval_shim) give identical counts.

Modes (neleval measure names):

* ``strict``   — ``strong_all_match``: same document, exact span, same kbid. Duplicate
  annotations (same document, span and kbid) count once, because neleval scores sets.
* ``partial``  — ``overlap-maxmax::span+kbid``: neleval groups mentions by (kbid, docid) and,
  within a group, pairs them with a one-pass sweep from the right over both lists sorted by
  (start, -end) (``Measure.get_overlapping``). A system mention is credited with its largest
  character overlap with any gold mention paired with it, as a fraction of its own length; a gold
  mention the same way with system mentions (max on both sides: "maxmax"). The sweep can miss an
  overlap (a short gold mention between a long one and a system mention cuts the long one off);
  we reproduce that on purpose. Duplicates count separately here, as in neleval.
  ``tp`` is neleval's ptp (precision side); ``rtp`` (recall side) can differ.
* ``mentions`` — ``strong_mention_match``: exact span only, concepts ignored.
* ``accuracy`` — Acc@1 of a normalization run on gold spans (no neleval equivalent): each gold
  mention with at least one concept is correct when a prediction at exactly the same span has the
  same *set* of concept IDs after the ID policy, so a composite is right only if every part
  is (and nothing extra is). The order of parts does not matter here (unlike strict, which
  compares the joined string). Gold mentions without a concept (``-1``) are left out, as
  normalization benchmarks drop them; ``n`` is the number counted. A missing prediction is
  wrong. P, R and F1 are reported equal to the accuracy (fp = fn = n - correct).

ID policy (eval.neleval_shim converts for neleval with the same code, ``mentions_of``):

* IDs compare across prefix styles: each loses surrounding spaces and a ``MESH:``,
  ``NCBIGene:`` or ``NCBITaxon:`` prefix (:func:`data_tools.formats.namespaces.comparable_id`),
  so gold ``D013629`` matches a prediction ``MESH:D013629``, ``672`` matches ``NCBIGene:672``
  and a PubTator file's bare species ``10116`` matches ``NCBITaxon:10116``; ``resolve`` maps
  the KB's key of each (:func:`~data_tools.formats.namespaces.kb_key`) before that;
* an ID the KB's vocabulary has replaced compares as the ID that replaced it, on both sides
  (:func:`e2e_linker.replaced_ids.current_id`, a shipped table: BC5CDR's atorvastatin C065179
  equals D000069059), so a model whose mined names carry current IDs scores as one that
  answers with the corpus's;
* several IDs (a composite, ``D1|D2``) form one kbid string joined by ``|`` in the order written;
* no concept (``-1``, an empty ``concept_ids``) is the ordinary kbid string ``-1``, so ``-1``
  predicted on a ``-1`` gold span is a strict match;
* a kbid starting with ``NIL`` is a NIL cluster in neleval (its kbid is None): in strict and
  partial modes all NIL kbids are treated as one same value, as neleval does;
* an annotation written with no ID field at all (tmChem's 5-column PubTator rows, a BioC
  annotation without an ID infon: ``Annotation.no_id``) is a bare mention, not a link, and is not
  scored in any mode. This is what reproduces the reference DNorm + tmChem numbers;
* annotations marked ``CompositeRole=IndividualMention`` (the parts BC5CDR's BioC release adds
  beside each composite mention) are not scored by default (``include_parts=False``), so BioC
  and PubTator gold give equal numbers;
* the type is not part of the match; ``by_type`` splits both sides by type and scores each;
* spans are the outer bounds ``start``/``end`` (a discontinuous mention counts as its outer
  span) and become neleval's inclusive end offsets (``end - 1``). An empty span is an error.

Rates: 0/0 is 0.0, as in neleval's ``Matrix.div``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from data_tools.documents import NO_CONCEPT, Annotation, Document
from data_tools.formats.namespaces import comparable_id, kb_key
from e2e_linker.replaced_ids import current_id

MODES = ("strict", "partial", "mentions", "accuracy")

#: neleval: an entity ID beginning with this is a NIL cluster, not a KB link
NIL_PREFIX = "NIL"


@dataclass(eq=False)
class Mention:
    """One scored annotation: neleval's (docid, start, end-inclusive, kbid).

    ``eq=False`` keeps identity semantics, like neleval's Annotation objects, so duplicates stay
    distinct in partial mode.
    """

    docid: str
    start: int
    end: int
    kbid: str
    type: str = ""
    ids: tuple[str, ...] = ()

    @property
    def link(self) -> str | None:
        """The value neleval compares as ``kbid``: None for a NIL cluster, else the kbid."""
        return None if self.kbid.startswith(NIL_PREFIX) else self.kbid

    def lt(self, other: Mention) -> bool:
        """neleval's ``Annotation.__lt__``: by start, longer first."""
        return (self.start, -self.end) < (other.start, -other.end)

    def overlaps(self, other: Mention) -> bool:
        """Inclusive-offset overlap, as ``compare_spans`` != 'non-overlapping'."""
        return not (self.start > other.end or self.end < other.start)


def normalized_ids(ann: Annotation, resolve: Callable[[str], str] | None = None) -> tuple[str, ...]:
    """The annotation's concept IDs under the ID policy; ``resolve`` maps each KB key (e.g.
    alt → primary: a KB's ``resolve``) before the prefixes are dropped, and a replaced ID
    becomes the one that replaced it after (each part of a composite on its own)."""
    ids = [kb_key(c) for c in ann.concept_ids]
    if resolve is not None:
        ids = [resolve(c) for c in ids]
    return tuple(current_id(comparable_id(c)) for c in ids)


def kbid(ann: Annotation, resolve: Callable[[str], str] | None = None) -> str:
    """The single string neleval compares: IDs joined by ``|``, ``-1`` when there are none."""
    ids = normalized_ids(ann, resolve)
    return "|".join(ids) if ids else NO_CONCEPT


def is_scored(ann: Annotation, include_parts: bool = False) -> bool:
    """Bare mentions written without any ID field are not links; composite parts are extras."""
    if ann.no_id and not ann.concept_ids:
        return False
    return include_parts or ann.infons.get("CompositeRole") != "IndividualMention"


def mentions_of(docs: Iterable[Document], resolve: Callable[[str], str] | None = None,
                include_parts: bool = False) -> list[Mention]:
    """Every scored annotation as a Mention (inclusive end), in document and passage order."""
    out: list[Mention] = []
    for doc in docs:
        for ann in doc.annotations:
            if not is_scored(ann, include_parts):
                continue
            if ann.end <= ann.start:
                raise ValueError(f"document {doc.id}: annotation {ann.start}-{ann.end} "
                                 f"({ann.text!r}) has an empty span and cannot be scored")
            out.append(Mention(doc.id, ann.start, ann.end - 1, kbid(ann, resolve), ann.type,
                               normalized_ids(ann, resolve)))
    return out


@dataclass
class ScoreReport:
    """Counts and rates of one scoring run (and of each type when ``by_type``).

    ``tp`` is neleval's ptp, the precision-side true positives; ``rtp`` the recall side. They are
    equal except in partial mode, where they are fractional sums of overlaps.
    """

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: precision, recall, f1, tp, fp, fn (+ rtp, accuracy/n, by_type if any)."""
        out: dict[str, Any] = {"mode": self.mode, "precision": self.precision,
                               "recall": self.recall, "f1": self.f1,
                               "tp": self.tp, "fp": self.fp, "fn": self.fn}
        if self.mode == "partial":
            out["rtp"] = self.rtp
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy
            out["n"] = self.n
        if self.per_type:
            out["by_type"] = {t: r.to_dict() for t, r in sorted(self.per_type.items())}
        return out

    def format_table(self) -> str:
        """Tab-separated table: one row for all types, then one per type when by_type."""
        def fmt(v: float) -> str:
            return f"{v:.3f}" if not float(v).is_integer() else f"{v:g}"

        rows = [("all", self), *sorted(self.per_type.items())]
        if self.mode == "accuracy":
            lines = ["type\taccuracy\tn"]
            lines += [f"{name}\t{r.accuracy or 0.0:.4f}\t{r.n}" for name, r in rows]
            return "\n".join(lines)
        lines = [f"{self.mode}\tprecision\trecall\tf1\ttp\tfp\tfn"]
        for name, r in rows:
            lines.append(f"{name}\t{r.precision:.4f}\t{r.recall:.4f}\t{r.f1:.4f}\t"
                         f"{fmt(r.tp)}\t{fmt(r.fp)}\t{fmt(r.fn)}")
        return "\n".join(lines)


def _sets(system: list[Mention], gold: list[Mention], with_kbid: bool) -> tuple[int, int, int]:
    """neleval ``count_matches``: keys in sets, so duplicates collapse."""
    def key(m: Mention) -> tuple[Any, ...]:
        return (m.docid, m.start, m.end, m.link) if with_kbid else (m.docid, m.start, m.end)

    g = {key(m) for m in gold}
    s = {key(m) for m in system}
    tp = len(g & s)
    return tp, len(s) - tp, len(g) - tp


Overlaps = dict[int, list[Mention]]


def _overlapping(system: list[Mention], gold: list[Mention]) -> tuple[Overlaps, Overlaps]:
    """neleval ``Measure.get_overlapping`` for key span+kbid: groups by (kbid, docid), then sweeps.

    Mentions are keyed by ``id()`` because duplicates must stay distinct, as neleval's
    Annotation objects (hashed by identity) do.
    """
    over_sys: Overlaps = {id(m): [] for m in system}
    over_gold: Overlaps = {id(m): [] for m in gold}
    sys_groups: dict[tuple[str | None, str], list[Mention]] = defaultdict(list)
    gold_groups: dict[tuple[str | None, str], list[Mention]] = defaultdict(list)
    for m in system:
        sys_groups[(m.link, m.docid)].append(m)
    for m in gold:
        gold_groups[(m.link, m.docid)].append(m)

    def sort_key(m: Mention) -> tuple[int, int]:  # neleval's Annotation.__lt__; sort is stable
        return (m.start, -m.end)

    for key, sys_annots in sys_groups.items():
        gold_annots = gold_groups.pop(key, [])
        sys_annots.sort(key=sort_key)
        gold_annots.sort(key=sort_key)
        while sys_annots and gold_annots:
            s, g = sys_annots[-1], gold_annots[-1]
            if s.overlaps(g):
                over_sys[id(s)].append(g)
                over_gold[id(g)].append(s)
            if g.lt(s):  # neleval: ``if sys_annots[-1] > gold_annots[-1]``
                sys_annots.pop()
            else:
                gold_annots.pop()
    return over_sys, over_gold


def _max_overlap(refs: list[Mention], overlaps: Overlaps) -> float:
    """neleval ``measure_overlap(mode='max')``: best overlap as a fraction of the ref's length."""
    total = 0.0
    for ref in refs:
        cands = overlaps[id(ref)]
        if not cands:
            continue
        most = max(min(ref.end, c.end) - max(ref.start, c.start) for c in cands)
        total += (most + 1) / (ref.end - ref.start + 1)
    return total


def _partial(system: list[Mention], gold: list[Mention]) -> tuple[float, float, float, float]:
    """neleval ``count_overlap`` + ``contingency``: (ptp, fp, rtp, fn)."""
    over_sys, over_gold = _overlapping(system, gold)
    fp = len(system) - _max_overlap(system, over_sys)
    fn = len(gold) - _max_overlap(gold, over_gold)
    return len(system) - fp, fp, len(gold) - fn, fn


def _accuracy(system: list[Mention], gold: list[Mention]) -> tuple[int, int]:
    """(correct, n) over gold mentions that have a concept; the first prediction at a span wins."""
    predicted: dict[tuple[str, int, int], set[str]] = {}
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
          by_type: bool = False, resolve: Callable[[str], str] | None = None,
          include_parts: bool = False) -> ScoreReport:
    """Score ``pred`` against ``gold``, micro-averaged over all documents (see module doc).

    Documents are matched by ID; a document on one side only contributes its mentions as
    misses (fn) or false alarms (fp). ``resolve`` maps concept IDs before comparison (e.g. a KB's
    alternative IDs to primary IDs) on both sides. ``include_parts`` also scores BioC
    ``CompositeRole=IndividualMention`` annotations.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    gold_m = mentions_of(gold, resolve, include_parts)
    pred_m = mentions_of(pred, resolve, include_parts)
    report = _score(pred_m, gold_m, mode)
    if by_type:
        types = sorted({m.type for m in gold_m} | {m.type for m in pred_m})
        for t in types:
            report.per_type[t] = _score([m for m in pred_m if m.type == t],
                                        [m for m in gold_m if m.type == t], mode)
    return report


def merge_predictions(*doc_streams: Iterable[Document]) -> list[Document]:
    """Documents with the same ID from several prediction files merged into one.

    Why: BC5CDR's official baselines come as one file per type (DNorm for diseases, tmChem for
    chemicals) over the same documents. The first stream's text and passages are kept; later
    streams contribute annotations and relations. Order: first appearance. The input documents
    are not modified (passages are copied with fresh annotation lists).
    """
    merged: dict[str, Document] = {}
    for stream in doc_streams:
        for doc in stream:
            target = merged.get(doc.id)
            if target is None:
                merged[doc.id] = dataclasses.replace(
                    doc,
                    passages=[dataclasses.replace(p, annotations=list(p.annotations),
                                                  relations=list(p.relations))
                              for p in doc.passages],
                    relations=list(doc.relations))
                continue
            for ann in doc.annotations:
                target.add_annotation(ann)
            target.relations.extend(doc.relations)
    return list(merged.values())
