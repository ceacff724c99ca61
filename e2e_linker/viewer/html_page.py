"""Annotated documents as one self-contained HTML page (``linker view``).

Why a page: before trusting a linker, users look at what it did. The page needs no network
when it is opened (CSS inline, no scripts, no fonts), so it can be mailed or archived with the
run. Every piece of document text, ID and type is escaped: the input is untrusted.

Mentions are highlighted by type; hovering one shows its concept IDs, the concepts' preferred
names (the record the linker wrote, or a KB's when given), a gene's species, and scores, with a
link to each MeSH, NCBI Gene or NCBI Taxonomy ID's page, and, for mentions
annotated with ``--explain``, why: the step that decided and the top dense candidates. Given the gold
documents, gold and prediction stand side by side and each mention is marked true positive,
false positive or false negative by ``linker score --strict`` itself: the keys come from
:func:`e2e_linker.scoring.mentions_of` (its ID policy: ``MESH:`` prefixes, composites, NIL)
and the counts from :func:`e2e_linker.scoring.score`, so the page's numbers are the scorer's.
That criterion is span and concept IDs; the type is not compared, as in ``linker score``.

Overlapping mentions: the page highlights the outermost of a group of overlapping mentions and
lists the others (with their verdicts) in its tooltip, so no text is drawn twice; a red ``+``
flags an outer mention that hides an error.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats.mentions_jsonl import (
    CONCEPT_NAME,
    SPECIES,
    SPECIES_NAME,
    confidence_of,
    explanation_of,
)
from e2e_linker.scoring import is_scored, mentions_of, score

#: MeSH descriptor (D…) and supplementary concept (C…) IDs, with or without "MESH:"
MESH_ID = re.compile(r"^(?:MESH:)?([CD]\d{6,9})$", re.IGNORECASE)
MESH_PAGE = "https://meshb.nlm.nih.gov/record/ui?ui={}"
#: namespaced NCBI Gene and NCBI Taxonomy IDs (a bare number could be either)
GENE_ID = re.compile(r"^NCBIGene:(\d+)$", re.IGNORECASE)
GENE_PAGE = "https://www.ncbi.nlm.nih.gov/gene/{}"
TAXON_ID = re.compile(r"^NCBITaxon:(\d+)$", re.IGNORECASE)
TAXON_PAGE = "https://www.ncbi.nlm.nih.gov/Taxonomy/Browser/wwwtax.cgi?id={}"
#: highlight colours: the two BC5CDR types first, then any other type in sorted order
PALETTE = ("#ffd27f", "#9fd4ff", "#c6f0a6", "#f5b5e8", "#d9c8ff", "#ffb3a7", "#b8f2e6")
KNOWN_TYPES = ("Chemical", "Disease")
VERDICTS = {"tp": "true positive", "fp": "false positive", "fn": "false negative"}
#: a concept's preferred name, or None when unknown
NameOf = Callable[[str], str | None]
#: the deciding step (the ``link_method`` infon) in words, for the tooltip
STEPS = {"exact": "exact KB name", "dense": "dense: the closest name vector",
         "abbreviation": "short form / in-document abbreviation",
         "training": "sieve: a name mined from training mentions",
         "compact_key": "sieve: the same letters and digits as a KB name",
         "composite": "a coordination: each part an exact name or sieve match",
         "written_form": "sieve: a disease name written another way (singular, tumour word)",
         "name_form": "a gene name written another way (letters and digits, Greek letters)",
         "ortholog": "the gene of the mention's species with the named gene's symbol",
         "apposition": "a name written right before its gene's bracketed symbol",
         "text": "the text linker (normalizer)", "none": "no candidate"}

STYLE = """
body{font:15px/1.6 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin:28px 0 6px}
.doc{border-top:1px solid #ddd;padding-top:6px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:24px}
.col h3{font-size:13px;text-transform:uppercase;color:#666;margin:4px 0}
.m{position:relative;border-radius:3px;padding:1px 2px}
.m .tip{display:none;position:absolute;left:0;top:100%;z-index:9;min-width:260px;
  max-width:420px;background:#fff;border:1px solid #999;border-radius:4px;padding:6px 8px;
  font-size:13px;line-height:1.5;text-decoration:none;box-shadow:0 2px 6px rgba(0,0,0,.2)}
.m:hover .tip{display:block}
.fp{outline:2px dashed #d00}.fn{outline:2px dashed #d00;text-decoration:line-through}
.tp{outline:1px solid #2a2}
.hid::after{content:"+";color:#d00;font-weight:bold;font-size:11px;vertical-align:super}
.legend span{margin-right:12px}.counts{font-size:13px;color:#444}
.nav{columns:4;font-size:13px}.err{color:#d00}
.cand{color:#555;padding-left:10px}
"""


@dataclass
class Marked:
    """An annotation on the page: its verdict against gold ("tp", "fp", "fn" or "") and the
    overlapping annotations it hides (listed in its tooltip)."""

    annotation: Annotation
    verdict: str = ""
    hidden: tuple[Marked, ...] = ()


def concept_link(concept_id: str) -> str | None:
    """The page of a MeSH ID (with or without ``MESH:``), an ``NCBIGene:`` or an
    ``NCBITaxon:`` ID; None for any other ID."""
    concept_id = concept_id.strip()
    if match := MESH_ID.match(concept_id):
        return MESH_PAGE.format(match.group(1).upper())
    if match := GENE_ID.match(concept_id):
        return GENE_PAGE.format(match.group(1))
    if match := TAXON_ID.match(concept_id):
        return TAXON_PAGE.format(match.group(1))
    return None


def linked(concept_id: str) -> str:
    """``concept_id`` escaped, as a link to its page when it has one (:func:`concept_link`)."""
    link = concept_link(concept_id)
    return f'<a href="{html.escape(link)}">{html.escape(concept_id)}</a>' if link \
        else html.escape(concept_id)


def type_colours(types: Iterable[str]) -> dict[str, str]:
    """A colour per mention type, stable for the BC5CDR types."""
    types = set(types)
    ordered = [t for t in KNOWN_TYPES if t in types]
    ordered += sorted(types - set(ordered))
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(ordered)}


def scored(doc: Document | None) -> list[Annotation]:
    """The annotations ``linker score`` counts, in document order. Empty spans, which the
    scorer rejects and the page cannot draw, are left out."""
    if doc is None:
        return []
    return [a for a in doc.annotations if is_scored(a) and a.end > a.start]


def compare(doc_id: str, pred: Sequence[Annotation], gold: Sequence[Annotation]
            ) -> tuple[list[str], list[str], Counter]:
    """Verdicts of one document's annotations by ``linker score --strict``: "tp"/"fp" per
    predicted one, "tp"/"fn" per gold one, and the document's TP/FP/FN counts.

    The scorer matches sets (as neleval does), so a duplicate of a found mention is also "tp"
    and the counts take it once.
    """
    pred_doc, gold_doc = holder(doc_id, pred), holder(doc_id, gold)
    pred_keys, gold_keys = strict_keys(pred_doc), strict_keys(gold_doc)
    report = score([gold_doc], [pred_doc], "strict")
    found_pred, found_gold = set(pred_keys), set(gold_keys)
    return (["tp" if k in found_gold else "fp" for k in pred_keys],
            ["tp" if k in found_pred else "fn" for k in gold_keys],
            Counter(tp=report.tp, fp=report.fp, fn=report.fn))


def holder(doc_id: str, annotations: Sequence[Annotation]) -> Document:
    """A text-less document holding ``annotations``, to hand them to the scorer."""
    return Document(id=doc_id, passages=[Passage(offset=0, text="",
                                                 annotations=list(annotations))])


def strict_keys(doc: Document) -> list[tuple[int, int, str | None]]:
    """Per annotation (in order), what ``--strict`` compares: span and linked concept."""
    return [(m.start, m.end, m.link) for m in mentions_of([doc], include_parts=True)]


def outermost(marked: Iterable[Marked]) -> list[Marked]:
    """Fold annotations that overlap an earlier (longer) one into that one's ``hidden``."""
    kept: list[Marked] = []
    for item in sorted(marked, key=lambda m: (m.annotation.start, -m.annotation.end)):
        if kept and item.annotation.start < kept[-1].annotation.end:
            kept[-1].hidden += (item,)
        else:
            kept.append(item)
    return kept


def describe(item: Marked, name_of: NameOf | None) -> str:
    """Tooltip lines of one annotation: verdict, type, IDs with names and links, a gene's
    species, the confidence and the scores."""
    a = item.annotation
    parts = [f'<b class="err">{VERDICTS[item.verdict]}</b>'] if item.verdict in ("fp", "fn") \
        else []
    parts.append(f"<b>{html.escape(a.type or 'untyped')}</b> “{html.escape(a.text or '')}”")
    recorded = a.infons.get(CONCEPT_NAME) if len(a.concept_ids) == 1 else None
    for cid in a.concept_ids or ["(no concept)"]:
        line = linked(cid)
        name = recorded or (name_of(cid) if name_of and a.concept_ids else None)
        if name:
            line += f" {html.escape(name)}"
        parts.append(line)
    if a.infons.get(SPECIES):
        species = " ".join(linked(taxon) for taxon in a.infons[SPECIES].split("|"))
        if a.infons.get(SPECIES_NAME):
            species += f" {html.escape(a.infons[SPECIES_NAME])}"
        parts.append(f"<i>species:</i> {species}")
    scores = [f"{label} {value:.3f}" for label, value in
              (("confidence", confidence_of(a)), ("mention", a.mention_score),
               ("link", a.link_score)) if value is not None]
    if scores:
        parts.append(html.escape(", ".join(scores)))
    parts.extend(explain_lines(a, name_of))
    return "<br>".join(parts)


def explain_lines(a: Annotation, name_of: NameOf | None) -> list[str]:
    """Tooltip lines saying why an explained annotation got its concept: the deciding step
    and the dense candidates with scores (nothing for an annotation without explanation)."""
    found = explanation_of(a)
    if found is None:
        return []
    step = found["step"] or "unknown"
    line = f"<i>why:</i> {html.escape(STEPS.get(step, 'sieve: ' + step))}"
    if found.get("long_form"):
        line += f" (long form “{html.escape(found['long_form'])}”)"
    lines = [line]
    if found["candidates"]:
        lines.append("<i>dense ranking:</i>")
    for cand in found["candidates"]:
        name = name_of(cand["concept_id"]) if name_of else None
        score = "" if cand["score"] is None else f" {cand['score']:.3f}"
        lines.append(f'<span class="cand">{html.escape(cand["concept_id"])}'
                     f'{" " + html.escape(name) if name else ""}{score}</span>')
    return lines


def render_text(doc: Document, marked: Iterable[Marked], colours: dict[str, str],
                name_of: NameOf | None) -> str:
    """The document's passages with the marked annotations highlighted.

    Offsets are document offsets in characters (code points), as the readers give them, so
    slicing the passage's ``str`` is exact on non-ASCII text.
    """
    out = []
    items = outermost(marked)
    for passage in doc.passages:
        text = passage.text or ""
        cursor = passage.offset
        pieces = []
        for item in items:
            a = item.annotation
            if a.start < cursor or a.end > passage.offset + len(text):
                continue  # another passage's (or crossing passages: not drawn)
            pieces.append(html.escape(text[cursor - passage.offset:a.start - passage.offset]))
            tip = describe(item, name_of)
            for other in item.hidden:
                tip += "<hr>also: " + describe(other, name_of)
            hides_error = any(h.verdict in ("fp", "fn") for h in item.hidden)
            classes = " ".join(c for c in ("m", item.verdict, "hid" * hides_error) if c)
            pieces.append(
                f'<span class="{classes}" style="background:{colours.get(a.type, "#ddd")}">'
                f'{html.escape(text[a.start - passage.offset:a.end - passage.offset])}'
                f'<span class="tip">{tip}</span></span>')
            cursor = a.end
        pieces.append(html.escape(text[cursor - passage.offset:]))
        out.append(f"<p>{''.join(pieces)}</p>")
    return "\n".join(out)


def render_page(documents: Sequence[Document], gold: Sequence[Document] | None = None,
                name_of: NameOf | None = None, title: str = "e2e_linker",
                intro: str = "") -> str:
    """The whole page: a legend, the counts, a list of the documents and each document.

    With ``gold`` (matched by document ID), each document shows gold and prediction side by
    side; gold documents without a prediction come last, their mentions all misses, so the
    totals equal ``linker score --strict`` on the same two files. ``name_of`` gives a concept's
    preferred name (or None). ``intro`` is trusted HTML placed under the title (``linker
    serve``'s form); callers must escape whatever untrusted text it holds.
    """
    with_gold = gold is not None
    gold_by_id = {d.id: d for d in gold or ()}
    pairs: list[tuple[Document | None, Document | None]] = [
        (d, gold_by_id.get(d.id)) for d in documents]
    seen = {d.id for d in documents}
    pairs += [(None, g) for g in gold_by_id.values() if g.id not in seen]
    colours = type_colours(a.type for p, g in pairs for a in scored(p) + scored(g))
    totals: Counter = Counter()
    sections, nav = [], []
    for number, (pred_doc, gold_doc) in enumerate(pairs):
        doc_id = (pred_doc or gold_doc).id
        header = f'<h2 id="doc-{number}">{html.escape(doc_id)}</h2>'
        label = html.escape(doc_id)
        if not with_gold:
            body = render_text(pred_doc, [Marked(a) for a in scored(pred_doc)], colours, name_of)
            sections.append(f'<div class="doc">{header}{body}</div>')
            nav.append(f'<li><a href="#doc-{number}">{label}</a></li>')
            continue
        pred, ref = scored(pred_doc), scored(gold_doc)
        pred_marks, gold_marks, counts = compare(doc_id, pred, ref)
        totals.update(counts)
        columns = []
        for name, doc, anns, marks, missing in (
                ("gold", gold_doc, ref, gold_marks, "not in the gold file"),
                ("predicted", pred_doc, pred, pred_marks, "not in the predictions")):
            text = (render_text(doc, [Marked(a, v) for a, v in zip(anns, marks, strict=True)],
                                colours, name_of)
                    if doc is not None else f"<p><i>{missing}</i></p>")
            columns.append(f'<div class="col"><h3>{name}</h3>{text}</div>')
        sections.append(f'<div class="doc">{header}<div class="counts">{count_line(counts)}'
                        f'</div><div class="cols">{"".join(columns)}</div></div>')
        errors = counts["fp"] + counts["fn"]
        flag = (f' <span class="err">{errors} error{"s" * (errors > 1)}</span>'
                if errors else "")
        nav.append(f'<li><a href="#doc-{number}">{label}</a>{flag}</li>')
    legend = "".join(f'<span class="m" style="background:{c}">{html.escape(t)}</span>'
                     for t, c in colours.items())
    summary = ""
    if with_gold:
        legend += "".join(f'<span class="m {v}">{label}</span>' for v, label in VERDICTS.items())
        legend += '<span class="m hid">hides an error (hover)</span>'
        summary = (f'<p class="counts">{len(pairs)} documents: {count_line(totals)}'
                   " (strict, as <code>linker score</code>)</p>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{intro}<p class=\"legend\">{legend}</p>{summary}"
            f"<ul class=\"nav\">{''.join(nav)}</ul>{''.join(sections)}</body></html>\n")


def count_line(counts: Counter) -> str:
    """"TP n · FP n · FN n" with strict precision, recall and F1 when defined."""
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    line = f"TP {tp} · FP {fp} · FN {fn}"
    if tp:
        p, r = tp / (tp + fp), tp / (tp + fn)
        line += f" · P {p:.3f} R {r:.3f} F1 {2 * p * r / (p + r):.3f}"
    return line
