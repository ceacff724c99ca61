"""The inference pipeline behind ``linker annotate``.

Documents are chunked, chunks of many documents are batched by length, and one encoder pass
per batch yields mention probabilities for every span (vectorised), span vectors and types for
the kept spans; all kept spans of the group are then linked in one batched index search. The
per-mention mode re-encodes each mention in its own 128-token window (the paper's baseline) and
exists for side-by-side speed and accuracy comparisons.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

import numpy as np
import torch

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.collective.batches import collate_chunks, length_batches
from e2e_linker.collective.chunking import Chunk, chunk_documents
from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.collective.span_scorer import decode_bio
from e2e_linker.collective.span_selection import SelectionRules, SpanPrediction
from e2e_linker.kb_search.entity_index import EntityIndex
from e2e_linker.lexical.abbreviations import (
    abbreviation_map,
    expand_mention,
    text_expansions,
)
from e2e_linker.lexical.sieve_stack import SieveStack
from e2e_linker.lexical.sieves import NameDictionary, choose_concept

MODES = ("collective", "per-mention")


class TextLinker(Protocol):
    """What links detected spans by their text: ``linker normalize``'s engine
    (:class:`e2e_linker.normalizer.normalizer.Normalizer`) fits. The collective layer does not
    import the normalizer; the caller that wants it (:class:`e2e_linker.api.Linker`) hands it
    in."""

    def normalize(self, docs: Iterable[Document]) -> list[Document]:
        """Fill each annotation's ``concept_ids`` and ``link_score`` in place."""
        ...


class Annotator:
    """Runs a :class:`CollectiveLinker` with an entity index over batches of documents."""

    def __init__(self, model: CollectiveLinker, index: EntityIndex,
                 names: NameDictionary | None = None, threshold: float | None = None,
                 batch_size: int = 16, max_batch_tokens: int = 16384, mode: str = "collective",
                 context_window: int = 128, sieves: SieveStack | None = None, kb=None,
                 text_linker: TextLinker | None = None,
                 propagation_threshold: float | None = None,
                 lexical_gate: float | None = None, short_forms: bool | None = None,
                 dictionary_threshold: float | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.model = model.eval()
        self.index = index
        self.names = names if model.config.exact_match_sieve else None
        #: the normalizer's lexical steps after the exact-name sieve (None: dense only)
        self.sieves = sieves
        #: the KB the index was built from (None when the caller did not say)
        self.kb = kb
        #: links the kept spans by their text instead (``linker annotate --linking
        #: normalizer``); None: the collective span vectors link them
        self.text_linker = text_linker
        #: a span scored above this (but not above ``threshold``) is kept when its text, case
        #: folded, was detected above ``threshold`` elsewhere in the same document (default:
        #: the model's); None: off
        self.propagation_threshold = (model.config.propagation_threshold
                                      if propagation_threshold is None
                                      else propagation_threshold)
        #: a span scored above this (but not above ``threshold``) is kept when its text is an
        #: exact KB name (default: the model's); None: off
        self.dictionary_threshold = (model.config.dictionary_threshold
                                     if dictionary_threshold is None else dictionary_threshold)
        #: a span no lexical step links (exact name, in-document short form, sieve stack) is
        #: kept only when its mention score reaches this (default: the model's); None or 0:
        #: every span is kept. Checked before overlaps are resolved, so an overlapping span
        #: with a lexical link can win.
        self.lexical_gate = model.config.lexical_gate if lexical_gate is None else lexical_gate
        #: tag every occurrence of a short form defined in the document ("phenobarbital (PB)")
        #: whose long form is a kept span, with that span's type, score and vector (default:
        #: the model's)
        self.short_forms = model.config.short_forms if short_forms is None else short_forms
        self.threshold = model.config.threshold if threshold is None else threshold
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.mode = mode
        self.context_window = context_window
        self.stats = {"documents": 0, "chunks": 0, "tokens": 0, "mentions": 0}

    @property
    def quantized(self) -> bool:
        """Whether the mention encoder runs int8-quantized."""
        return bool(getattr(self.model, "quantized", False))

    # ---- mention detection ---------------------------------------------------------------
    @torch.inference_mode()
    def detect(self, docs: Sequence[Document], threshold: float | None = None,
               resolve: bool = True) -> tuple[list[SpanPrediction], list[Chunk]]:
        """Spans with p > threshold (owned by their chunk), with vectors and types.

        ``resolve=False`` keeps overlapping spans (used to sweep thresholds on dev).
        """
        cfg = self.model.config
        threshold = self.threshold if threshold is None else threshold
        keep = threshold  # spans are kept above this one; ``threshold`` may be lowered below
        if resolve:
            threshold = min([threshold, *self.selection_rules(threshold).weak_floors()])
        tokenizer = self.model.tokenizer
        chunks = chunk_documents(docs, tokenizer, cfg.max_length, cfg.max_span_len,
                                 cfg.chunk_overlap)
        self.stats["chunks"] += len(chunks)
        self.stats["tokens"] += sum(len(c) for c in chunks)
        spans: list[SpanPrediction] = []
        device = self.model.device
        for group in length_batches(chunks, self.batch_size, self.max_batch_tokens):
            batch_chunks = [chunks[i] for i in group]
            batch = collate_chunks(batch_chunks, tokenizer.pad_token_id or 0, device)
            states = self.model.token_states(batch)
            if cfg.mention_head == "bio":
                probs = torch.softmax(self.model.span_scorer(states), -1)
                valid_tok = batch["owned"] & batch["attention_mask"].bool()
                found = decode_bio(probs, valid_tok, batch["word_start"], cfg.max_span_len,
                                   threshold)
                if not found:
                    continue
                b = torch.tensor([f[0] for f in found], device=device)
                i = torch.tensor([f[1] for f in found], device=device)
                j = torch.tensor([f[2] for f in found], device=device)
                p = torch.tensor([f[3] for f in found])
            else:
                probs = torch.sigmoid(self.model.span_logits(states, batch))
                b, i, w = torch.nonzero(probs > threshold, as_tuple=True)
                if len(b) == 0:
                    continue
                j = i + w
                p = probs[b, i, w].cpu()
            vecs = self.model.span_vectors(states, b, i, j)
            type_ids = self.model.type_logits(vecs).argmax(-1).cpu().tolist()
            vecs_np = vecs.float().cpu().numpy()
            for k, (bb, ii, jj) in enumerate(zip(b.tolist(), i.tolist(), j.tolist(), strict=True)):
                chunk = batch_chunks[bb]
                spans.append(SpanPrediction(
                    chunk.doc_index, chunk.starts[ii], chunk.ends[jj], float(p[k]),
                    cfg.types[type_ids[k]] if cfg.types else "", vecs_np[k],
                ))
        if not resolve:
            return spans, chunks
        return self.select(spans, docs, keep), chunks

    def selection_rules(self, keep: float | None = None) -> SelectionRules:
        """This annotator's selection settings, with ``keep`` (default: the threshold)."""
        return SelectionRules(self.threshold if keep is None else keep, self.lexical_gate,
                              bool(self.short_forms), self.propagation_threshold,
                              self.dictionary_threshold)

    def select(self, spans: list[SpanPrediction], docs: Sequence[Document],
               keep: float | None = None) -> list[SpanPrediction]:
        """The spans :meth:`detect` returns, from every candidate it scored
        (:meth:`SelectionRules.select` with this annotator's settings and KB lookups). Public so
        that evaluations can score once and select under several settings."""
        names = self.names
        return self.selection_rules(keep).select(
            spans, docs,
            lambda found: self.lexically_linked(
                found, [docs[s.doc_index].text_at(s.start, s.end) for s in found], docs),
            None if names is None else lambda text, type_: bool(names.lookup(text, type_)))

    def lexically_linked(self, spans: Sequence[SpanPrediction], texts: Sequence[str],
                         docs: Sequence[Document]) -> list[bool]:
        """Per span, whether :meth:`link` would find its concept without dense search: an
        exact KB name, a short form defined in its document, or a sieve-stack step."""
        expansions = self.span_expansions(spans, texts, docs) if self.sieves is not None else {}
        short_forms: dict[int, dict] = {}

        def named(text: str, type_: str, found: dict[str, str] | None) -> bool:
            if self.names is not None and self.names.lookup(text, type_):
                return True
            return self.sieves is not None and self.sieves.match(
                text, type_, expand_mention(text, found) if found else None) is not None

        ends: dict[int, dict[int, list[int]]] = {}  # doc → span end → span starts
        for span in spans:
            ends.setdefault(span.doc_index, {}).setdefault(span.end, []).append(span.start)
        out = []
        for span, text in zip(spans, texts, strict=True):
            found = expansions.get(span.doc_index)
            ok = named(text, span.type, found)
            if not ok and self.model.config.resolve_abbreviations:
                if span.doc_index not in short_forms:
                    short_forms[span.doc_index] = abbreviation_map(docs[span.doc_index].text)
                abbr = short_forms[span.doc_index].get(text)
                # a short form counts when its long form is named or detected, as
                # resolve_abbreviations links it (LES for "lower esophageal sphincter" does
                # not: short forms of undetected, unnamed things were 106 junk spans on dev)
                ok = abbr is not None and (named(abbr.long, span.type, found) or any(
                    start >= abbr.long_start
                    for start in ends[span.doc_index].get(abbr.long_end, ())))
            out.append(ok)
        return out

    @torch.inference_mode()
    def encode_spans(self, docs: Sequence[Document],
                     spans: Sequence[tuple[int, int, int]]) -> tuple[np.ndarray, list[bool]]:
        """Span vectors for given ``(doc_index, start, end)`` spans (gold-span disambiguation).

        Returns the vectors and, per span, whether it could be placed in a chunk (a span that
        does not align with any owning chunk gets a zero vector and ``False``).
        """
        from e2e_linker.collective.chunking import char_span_to_tokens

        cfg = self.model.config
        tokenizer = self.model.tokenizer
        chunks = chunk_documents(docs, tokenizer, cfg.max_length, cfg.max_span_len,
                                 cfg.chunk_overlap)
        by_doc: dict[int, list[int]] = {}
        for n, c in enumerate(chunks):
            by_doc.setdefault(c.doc_index, []).append(n)
        placed: dict[int, list[tuple[int, int, int]]] = {}
        for k, (d, start, end) in enumerate(spans):
            for n in by_doc.get(d, []):
                pos = char_span_to_tokens(chunks[n], start, end)
                if pos and chunks[n].owned[pos[0]]:
                    placed.setdefault(n, []).append((k, pos[0], pos[1]))
                    break
        vectors = np.zeros((len(spans), self.model.encoder.hidden_size), dtype=np.float32)
        ok = [False] * len(spans)
        device = self.model.device
        todo = sorted(placed)
        for group in length_batches([chunks[n] for n in todo], self.batch_size,
                                    self.max_batch_tokens):
            ids = [todo[g] for g in group]
            batch = collate_chunks([chunks[n] for n in ids], tokenizer.pad_token_id or 0, device)
            states = self.model.token_states(batch)
            rows = [(b, k, i, j) for b, n in enumerate(ids) for k, i, j in placed[n]]
            vecs = self.model.span_vectors(
                states, torch.tensor([r[0] for r in rows], device=device),
                torch.tensor([r[2] for r in rows], device=device),
                torch.tensor([r[3] for r in rows], device=device))
            for (_, k, _, _), v in zip(rows, vecs.float().cpu().numpy(), strict=True):
                vectors[k] = v
                ok[k] = True
        return vectors, ok

    # ---- the per-mention baseline --------------------------------------------------------
    @torch.inference_mode()
    def reencode_per_mention(self, docs: Sequence[Document],
                             spans: list[SpanPrediction]) -> None:
        """Replace each span's vector by one from its own ``context_window``-token forward.

        Each document is tokenized once; each mention gets the window of tokens centred on it
        (the paper's per-mention dual encoder), one encoder forward per mention.
        """
        from e2e_linker.collective.chunking import tokenize_document

        tokenizer = self.model.tokenizer
        device = self.model.device
        tokens = {d: tokenize_document(docs[d], tokenizer, d) for d in {s.doc_index for s in spans}}
        room = self.context_window - 2
        for span in spans:
            toks = tokens[span.doc_index]
            inside = [t for t, (a, b) in enumerate(zip(toks.starts, toks.ends, strict=True))
                      if b > span.start and a < span.end]
            if not inside:
                continue
            first, last = inside[0], inside[-1]
            left = max(0, min(first - (room - (last - first + 1)) // 2, len(toks.ids) - room))
            window = toks.ids[left: left + room]
            ids = torch.tensor([[tokenizer.cls_token_id, *window, tokenizer.sep_token_id]],
                               device=device)
            states = self.model.token_states({"input_ids": ids,
                                              "attention_mask": torch.ones_like(ids)})
            a = 1 + first - left
            z = 1 + min(last, left + room - 1) - left
            span.vector = states[0, a: z + 1].float().mean(0).cpu().numpy()

    # ---- linking and output ----------------------------------------------------------------
    def link(self, spans: list[SpanPrediction], docs: Sequence[Document]) -> list[Annotation | None]:
        """One batched index search for all spans, then the name sieve.

        Every span is searched, sieved or not: the sieve breaks ties between concepts that
        share a name by the dense ranking, and falls back to its own order when none of its
        concepts is in the top 64 — scoring only the sieve's concepts changed 0.5 points of
        strict F1 on BC5CDR, so that shortcut is not taken.
        """
        if not spans:
            return []
        queries = np.stack([s.vector for s in spans]).astype(np.float32)
        ranked = self.index.link(queries, [s.type for s in spans])
        texts = [docs[s.doc_index].text_at(s.start, s.end) for s in spans]
        expansions = self.span_expansions(spans, texts, docs) if self.sieves is not None else {}
        out: list[Annotation | None] = []
        for span, dense, text in zip(spans, ranked, texts, strict=True):
            cid, score, method = choose_concept(text, span.type, dense, self.names)
            if self.sieves is not None and method != "exact":
                found = expansions.get(span.doc_index)
                hit = self.sieves.match(text, span.type,
                                        expand_mention(text, found) if found else None)
                if hit is not None:
                    cid, method = hit
                    score = next((s for c, s in dense if c == cid), None)
            out.append(Annotation(
                start=span.start, end=span.end, text=text, type=span.type,
                concept_ids=[cid] if cid else [],
                infons={"annotator": "e2e_linker", "link_method": method},
                mention_score=round(span.mention_score, 4),
                link_score=None if score is None else round(score, 4),
            ))
        if self.text_linker is not None:
            self.link_by_text(spans, out, docs)
        elif self.model.config.resolve_abbreviations:
            self.resolve_abbreviations(spans, out, docs)
        return out

    def link_by_text(self, spans: Sequence[SpanPrediction],
                     annotations: list[Annotation | None], docs: Sequence[Document]) -> None:
        """Relink every span with :attr:`text_linker`, in place.

        Each document goes to it as a bare view: its passages' text with only the detected
        spans, so abbreviations are read from the whole text and the spans (as
        ``linker normalize`` reads them) and the input's own annotations are never touched.
        ``link_score`` becomes the text linker's (the normalizer's cosine, ≤ 1); the
        candidates list it writes is dropped, so the output carries the same infons as with
        collective linking.
        """
        views: dict[int, Document] = {}
        for span, ann in zip(spans, annotations, strict=True):
            if ann is None:
                continue
            if span.doc_index not in views:
                doc = docs[span.doc_index]
                views[span.doc_index] = Document(id=doc.id, passages=[
                    Passage(offset=p.offset, text=p.text) for p in doc.passages])
            views[span.doc_index].add_annotation(ann)
        self.text_linker.normalize(list(views.values()))
        for ann in annotations:
            if ann is not None:
                ann.infons.pop("candidates", None)
                ann.infons["link_method"] = "text"

    def span_expansions(self, spans: Sequence[SpanPrediction], texts: Sequence[str],
                        docs: Sequence[Document]) -> dict[int, dict[str, str]]:
        """Short form → long form per document, from its text and its detected spans (the
        normalizer's :func:`~e2e_linker.lexical.abbreviations.text_expansions`)."""
        by_doc: dict[int, list[tuple[str, str]]] = {}
        for span, text in zip(spans, texts, strict=True):
            by_doc.setdefault(span.doc_index, []).append((span.type, text))
        return {d: text_expansions(docs[d].text, mentions) for d, mentions in by_doc.items()}

    def resolve_abbreviations(self, spans: Sequence[SpanPrediction],
                              annotations: list[Annotation | None],
                              docs: Sequence[Document]) -> None:
        """Give each abbreviation the concept of its long form, defined in the same document.

        The long form's own prediction is used when one covers it; otherwise the name sieve
        looks the long form up. Without either, the short form keeps its own link.
        """
        by_doc: dict[int, list[int]] = {}
        for k, span in enumerate(spans):
            by_doc.setdefault(span.doc_index, []).append(k)
        for doc_index, members in by_doc.items():
            abbreviations = abbreviation_map(docs[doc_index].text)
            if not abbreviations:
                continue
            for k in members:
                ann = annotations[k]
                abbr = abbreviations.get(ann.text) if ann is not None else None
                if abbr is None:
                    continue
                source = next((annotations[m] for m in members if annotations[m] is not None
                               and annotations[m].end == abbr.long_end
                               and annotations[m].start >= abbr.long_start), None)
                if source is not None and source.concept_ids:
                    ann.concept_ids = list(source.concept_ids)
                    ann.type = source.type
                elif self.names is not None:
                    found = self.names.lookup(abbr.long, ann.type)
                    if not found:
                        continue
                    ann.concept_ids = [found[0]]
                else:
                    continue
                ann.infons["link_method"] = "abbreviation"
                ann.infons["long_form"] = abbr.long

    def annotate(self, docs: Sequence[Document], replace: bool = False) -> list[Document]:
        """Copies of ``docs`` with predicted annotations added (or replacing the old ones)."""
        docs = list(docs)
        spans, _ = self.detect(docs)
        if self.mode == "per-mention":
            self.reencode_per_mention(docs, spans)
        annotations = self.link(spans, docs)
        self.stats["documents"] += len(docs)
        self.stats["mentions"] += len(annotations)
        return attach_annotations(docs, spans, annotations, replace)

    def annotate_stream(self, docs: Iterable[Document], group_size: int = 64,
                        replace: bool = False) -> Iterator[Document]:
        """Annotate a stream in groups of ``group_size`` documents (memory bounded by the group)."""
        group: list[Document] = []
        for doc in docs:
            group.append(doc)
            if len(group) >= group_size:
                yield from self.annotate(group, replace)
                group = []
        if group:
            yield from self.annotate(group, replace)


def attach_annotations(docs: Sequence[Document], spans: Sequence[SpanPrediction],
                       annotations: Sequence[Annotation | None],
                       replace: bool = False) -> list[Document]:
    """Copies of ``docs`` with the linked spans appended as annotations, in offset order."""
    out = [copy.deepcopy(d) for d in docs]
    if replace:
        for d in out:
            for p in d.passages:
                p.annotations = []
    counters = [0] * len(out)
    ordered = sorted((s.doc_index, s.start, s.end, k) for k, s in enumerate(spans))
    for doc_index, _, _, k in ordered:  # existing annotations keep their order; ours follow
        ann = annotations[k]
        if ann is None:
            continue
        ann.id = f"e2e{counters[doc_index]}"
        counters[doc_index] += 1
        out[doc_index].add_annotation(ann)
    return out
