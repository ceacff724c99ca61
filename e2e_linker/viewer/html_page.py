"""Annotated documents as one self-contained HTML page (``linker view``).

Why a page: before trusting a linker, users look at what it did. The page needs no network
when it is opened (CSS inline, no scripts, no fonts), so it can be mailed or archived with the
run. Every piece of document text is escaped: the input is untrusted.

Mentions are highlighted by type; hovering one shows its concept IDs, the concepts' preferred
names (when a KB is given) and scores, with a link to each MeSH ID's page. Given the gold
documents, gold and prediction stand side by side and each mention is marked true positive,
false positive or false negative by the strict criterion of ``linker score --strict``: same
document, same span, same concept IDs (:func:`e2e_linker.scoring.kbid`).

Overlapping mentions: the page highlights the outermost of a group of overlapping mentions and
lists the others in its tooltip, so no text is drawn twice.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from data_tools.documents import Annotation, Document
from e2e_linker.scoring import is_scored, kbid

#: MeSH descriptor (D…) and supplementary concept (C…) IDs, with or without "MESH:"
MESH_ID = re.compile(r"^(?:MESH:)?([CD]\d{6,9})$", re.IGNORECASE)
MESH_PAGE = "https://meshb.nlm.nih.gov/record/ui?ui={}"
#: highlight colours: the two BC5CDR types first, then any other type in order of appearance
PALETTE = ("#ffd27f", "#9fd4ff", "#c6f0a6", "#f5b5e8", "#d9c8ff", "#ffb3a7", "#b8f2e6")
KNOWN_TYPES = ("Chemical", "Disease")

STYLE = """
body{font:15px/1.6 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin:28px 0 6px}
.doc{border-top:1px solid #ddd;padding-top:6px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:24px}
.col h3{font-size:13px;text-transform:uppercase;color:#666;margin:4px 0}
.m{position:relative;border-radius:3px;padding:1px 2px}
.m .tip{display:none;position:absolute;left:0;top:1.5em;z-index:9;min-width:260px;
  background:#fff;border:1px solid #999;border-radius:4px;padding:6px 8px;font-size:13px;
  box-shadow:0 2px 6px rgba(0,0,0,.2)}
.m:hover .tip{display:block}
.fp{outline:2px dashed #d00}.fn{outline:2px dashed #d00;text-decoration:line-through}
.tp{outline:1px solid #2a2}
.legend span{margin-right:12px}.counts{font-size:13px;color:#444}
.nav{columns:4;font-size:13px}
"""


@dataclass
class Marked:
    """An annotation on the page: its verdict against gold ("tp", "fp", "fn" or "") and the
    annotations it hides (overlapping ones, listed in its tooltip)."""

    annotation: Annotation
    verdict: str = ""
    hidden: tuple[Annotation, ...] = ()


def mesh_link(concept_id: str) -> str | None:
    """The MeSH browser page of a MeSH ID; None for any other ID."""
    match = MESH_ID.match(concept_id.strip())
    return MESH_PAGE.format(match.group(1).upper()) if match else None


def type_colours(types: Iterable[str]) -> dict[str, str]:
    """A colour per mention type, stable for the BC5CDR types."""
    ordered = [t for t in KNOWN_TYPES if t in set(types)]
    ordered += sorted(set(types) - set(ordered))
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(ordered)}


def strict_key(annotation: Annotation) -> tuple[int, int, str]:
    """What ``linker score --strict`` compares within a document: span and concept IDs."""
    return annotation.start, annotation.end, kbid(annotation)


def verdicts(pred: Sequence[Annotation], gold: Sequence[Annotation]
             ) -> tuple[list[str], list[str]]:
    """Per predicted annotation "tp"/"fp", per gold annotation "tp"/"fn" (multiset match)."""
    pred_found = found_in(pred, Counter(strict_key(a) for a in gold))
    gold_found = found_in(gold, Counter(strict_key(a) for a in pred))
    return (["tp" if hit else "fp" for hit in pred_found],
            ["tp" if hit else "fn" for hit in gold_found])


def found_in(annotations: Sequence[Annotation], other: Counter) -> list[bool]:
    """Whether each annotation has a strict match left in ``other`` (a multiset of keys, used
    up as matched, so two equal predictions of one gold mention count once)."""
    hits = []
    for a in annotations:
        key = strict_key(a)
        hits.append(other[key] > 0)
        if hits[-1]:
            other[key] -= 1
    return hits


def scored(doc: Document) -> list[Annotation]:
    """The annotations ``linker score`` counts, in offset order."""
    return sorted((a for a in doc.annotations if is_scored(a)), key=lambda a: (a.start, -a.end))


def outermost(marked: list[Marked]) -> list[Marked]:
    """Drop annotations that overlap an earlier (longer) one into that one's ``hidden``."""
    kept: list[Marked] = []
    for item in sorted(marked, key=lambda m: (m.annotation.start, -m.annotation.end)):
        if kept and item.annotation.start < kept[-1].annotation.end:
            kept[-1].hidden += (item.annotation,)
        else:
            kept.append(item)
    return kept


def describe(annotation: Annotation, name_of: Callable[[str], str | None] | None) -> str:
    """Tooltip lines of one annotation: type, IDs with names and MeSH links, scores."""
    parts = [f"<b>{html.escape(annotation.type or 'untyped')}</b> "
             f"“{html.escape(annotation.text or '')}”"]
    for cid in annotation.concept_ids or ["(no concept)"]:
        link = mesh_link(cid)
        label = html.escape(cid)
        line = f'<a href="{html.escape(link)}">{label}</a>' if link else label
        name = name_of(cid) if name_of and annotation.concept_ids else None
        if name:
            line += f" {html.escape(name)}"
        parts.append(line)
    scores = [f"{label} {value:.3f}" for label, value in
              (("mention", annotation.mention_score), ("link", annotation.link_score))
              if value is not None]
    if scores:
        parts.append(html.escape(", ".join(scores)))
    return "<br>".join(parts)


def render_text(doc: Document, marked: list[Marked], colours: dict[str, str],
                name_of: Callable[[str], str | None] | None) -> str:
    """The document's passages with the marked annotations highlighted."""
    out = []
    items = outermost(marked)
    for passage in doc.passages:
        text = passage.text or ""
        cursor = passage.offset
        pieces = []
        for item in items:
            a = item.annotation
            if a.start < passage.offset or a.end > passage.offset + len(text) or a.start < cursor:
                continue
            pieces.append(html.escape(text[cursor - passage.offset:a.start - passage.offset]))
            tip = describe(a, name_of)
            for other in item.hidden:
                tip += "<hr>also: " + describe(other, name_of)
            verdict = f" {item.verdict}" if item.verdict else ""
            pieces.append(
                f'<span class="m{verdict}" style="background:{colours.get(a.type, "#ddd")}">'
                f'{html.escape(text[a.start - passage.offset:a.end - passage.offset])}'
                f'<span class="tip">{tip}</span></span>')
            cursor = a.end
        pieces.append(html.escape(text[cursor - passage.offset:]))
        out.append(f"<p>{''.join(pieces)}</p>")
    return "\n".join(out)


def render_page(documents: Sequence[Document], gold: Sequence[Document] | None = None,
                name_of: Callable[[str], str | None] | None = None,
                title: str = "e2e_linker") -> str:
    """The whole page. ``gold`` documents are matched by ID; ``name_of`` gives a concept's
    preferred name (or None)."""
    gold_by_id = {d.id: d for d in gold} if gold is not None else None
    types = {a.type for d in documents for a in scored(d)}
    if gold_by_id:
        types |= {a.type for d in gold_by_id.values() for a in scored(d)}
    colours = type_colours(types)
    totals = Counter()
    sections = []
    for number, doc in enumerate(documents):
        pred = scored(doc)
        header = f'<h2 id="doc-{number}">{html.escape(doc.id)}</h2>'
        if gold_by_id is None:
            body = render_text(doc, [Marked(a) for a in pred], colours, name_of)
            sections.append(f'<div class="doc">{header}{body}</div>')
            continue
        reference = gold_by_id.get(doc.id)
        gold_anns = scored(reference) if reference is not None else []
        pred_marks, gold_marks = verdicts(pred, gold_anns)
        counts = Counter(pred_marks) + Counter(m for m in gold_marks if m == "fn")
        totals.update(counts)
        gold_html = (render_text(reference, [Marked(a, v) for a, v in
                                             zip(gold_anns, gold_marks, strict=True)],
                                 colours, name_of)
                     if reference is not None else "<p><i>not in the gold file</i></p>")
        pred_html = render_text(doc, [Marked(a, v) for a, v in
                                      zip(pred, pred_marks, strict=True)], colours, name_of)
        sections.append(
            f'<div class="doc">{header}<div class="counts">{count_line(counts)}</div>'
            f'<div class="cols"><div class="col"><h3>gold</h3>{gold_html}</div>'
            f'<div class="col"><h3>predicted</h3>{pred_html}</div></div></div>')
    legend = "".join(f'<span class="m" style="background:{c}">{html.escape(t)}</span>'
                     for t, c in colours.items())
    if gold_by_id is not None:
        legend += ('<span class="m tp">true positive</span><span class="m fp">false positive'
                   '</span><span class="m fn">false negative</span>')
    summary = (f'<p class="counts">all documents: {count_line(totals)}</p>'
               if gold_by_id is not None else "")
    nav = "".join(f'<li><a href="#doc-{n}">{html.escape(d.id)}</a></li>'
                  for n, d in enumerate(documents))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p class=\"legend\">{legend}</p>{summary}"
            f"<ul class=\"nav\">{nav}</ul>{''.join(sections)}</body></html>\n")


def count_line(counts: Counter) -> str:
    """"TP n · FP n · FN n" with strict precision, recall and F1 when defined."""
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    line = f"TP {tp} · FP {fp} · FN {fn}"
    if tp:
        p, r = tp / (tp + fp), tp / (tp + fn)
        line += f" · strict P {p:.3f} R {r:.3f} F1 {2 * p * r / (p + r):.3f}"
    return line
