"""Detection behind ``linker annotate``: the model's pass over whole documents.

Documents are chunked, chunks of many documents are batched by padded length, and one encoder
pass per batch yields mention probabilities for every span (vectorised), span vectors and types
for the candidates; selection (:mod:`e2e_linker.collective.span_selection`) keeps spans, and
linking (:mod:`e2e_linker.collective.span_linking`) gives them concepts in one batched index
search. Each document's text is scanned for abbreviations once per call
(:func:`~e2e_linker.lexical.abbreviations.scan_documents`) and that scan is what selection,
linking and a text linker read.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence

import torch

from data_tools.documents import Annotation, Document
from e2e_linker.collective.batches import PAD_MULTIPLE, collate_chunks, length_batches
from e2e_linker.collective.chunking import Chunk, chunk_documents
from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.collective.per_mention import reencode_per_mention
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.collective.span_linking import SpanLinker
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import DocumentAbbreviations, scan_documents


class Annotator:
    """A :class:`CollectiveLinker` that detects spans, with the :class:`SpanLinker` that links
    them and the settings (resolved against the model's config once) that govern both."""

    def __init__(self, model: CollectiveLinker, linker: SpanLinker,
                 settings: AnnotateSettings | None = None, kb=None):
        self.model = model.eval()
        self.linker = linker
        #: every option, with the model's defaults filled in (:meth:`AnnotateSettings.for_model`)
        self.settings = (settings or AnnotateSettings()).for_model(model.config)
        #: the KB the index was built from (None when the caller did not say)
        self.kb = kb
        self.stats = {"documents": 0, "chunks": 0, "tokens": 0, "mentions": 0}

    @classmethod
    def from_parts(cls, model: CollectiveLinker, index, names=None,
                   settings: AnnotateSettings | None = None, sieves=None, kb=None,
                   text_linker=None) -> Annotator:
        """An annotator over an entity index: its :class:`SpanLinker` takes the exact-name
        sieve ``names`` and short-form linking as the model's config says (the one place that
        decides it), ``sieves``/``text_linker`` as given, and the settings' composites and
        name-only types."""
        taxa = kb.taxa() if kb is not None else None
        settings = (settings or AnnotateSettings()).for_model(model.config)
        linker = SpanLinker(index, names if model.config.exact_match_sieve else None, sieves,
                            text_linker, model.config.resolve_abbreviations, taxa,
                            settings.composites, settings.lexical_types,
                            kb.concepts if kb is not None else None)
        return cls(model, linker, settings, kb)

    @property
    def quantized(self) -> bool:
        """Whether the mention encoder runs int8-quantized."""
        return bool(getattr(self.model, "quantized", False))

    # ---- mention detection ---------------------------------------------------------------
    @torch.inference_mode()
    def detect(self, docs: Sequence[Document], threshold: float | None = None,
               resolve: bool = True,
               abbreviations: Sequence[DocumentAbbreviations] | None = None
               ) -> tuple[list[SpanPrediction], list[Chunk]]:
        """Spans with p > threshold (owned by their chunk), with vectors and types, selected
        by the settings (``abbreviations``: each document's scan, made here when not given).

        ``resolve=False`` returns every candidate instead (used to sweep thresholds on dev).
        """
        cfg = self.model.config
        settings = self.settings
        threshold = settings.threshold if threshold is None else threshold
        keep = threshold  # spans are kept above this one; ``threshold`` may be lowered below
        if resolve:
            threshold = settings.selection_rules(threshold).detection_floor()
        tokenizer = self.model.tokenizer
        chunks = chunk_documents(docs, tokenizer, cfg.max_length, settings.max_span_len,
                                 cfg.chunk_overlap)
        self.stats["chunks"] += len(chunks)
        self.stats["tokens"] += sum(len(c) for c in chunks)
        spans: list[SpanPrediction] = []
        device = self.model.device
        # one padded length per batch: a chunk's forward does not depend on its batch
        # (collective/batches.py says why; the check is eval/results/batch_identity)
        for group in length_batches(chunks, settings.batch_size, settings.max_batch_tokens,
                                    PAD_MULTIPLE):
            batch_chunks = [chunks[i] for i in group]
            batch = collate_chunks(batch_chunks, tokenizer.pad_token_id or 0, device,
                                   PAD_MULTIPLE)
            states = self.model.token_states(batch)
            found = self.model.candidate_spans(states, batch, threshold, settings.max_span_len)
            if found is None:
                continue
            b, i, j, p = found
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
        return self.select(spans, docs, keep, abbreviations), chunks

    def select(self, spans: list[SpanPrediction], docs: Sequence[Document],
               keep: float | None = None,
               abbreviations: Sequence[DocumentAbbreviations] | None = None
               ) -> list[SpanPrediction]:
        """The spans :meth:`detect` returns, from every candidate it scored: Chemical spans
        a gene name links retyped Gene first (:meth:`SpanLinker.gene_named_chemicals`, with
        ``gene_named_chemicals``), then :meth:`SelectionRules.select` with these settings and
        the linker's KB lookups.
        Public so that evaluations can score once and select under several settings."""
        abbreviations = scan_documents(docs) if abbreviations is None else abbreviations
        if self.settings.gene_named_chemicals:
            spans = self.linker.gene_named_chemicals(
                spans, [docs[s.doc_index].text_at(s.start, s.end) for s in spans])
        return self.settings.selection_rules(keep).select(
            spans, docs,
            lambda found: self.linker.lexically_linked(
                found, [docs[s.doc_index].text_at(s.start, s.end) for s in found],
                abbreviations),
            self.linker.is_name, abbreviations)

    def link(self, spans: list[SpanPrediction], docs: Sequence[Document],
             abbreviations: Sequence[DocumentAbbreviations] | None = None
             ) -> list[Annotation | None]:
        """:meth:`SpanLinker.link` of the kept spans (``abbreviations``: as in :meth:`detect`),
        each span's type then settled against its concept's
        (:class:`~e2e_linker.collective.concept_types.ConceptTypeRules`), then short forms the
        document does not support
        (:class:`~e2e_linker.collective.short_form_rules.ShortFormRules`) and chemicals named
        as sequence residues
        (:class:`~e2e_linker.collective.sequence_context.SequenceContextRule`) and names used
        inside a gene's name (:class:`~e2e_linker.collective.gene_context.GeneContextRule`)
        dropped, and genes of a species the document does not name
        (:meth:`SpanLinker.drop_unnamed_species`, with ``unnamed_species="drop"``)."""
        abbreviations = scan_documents(docs) if abbreviations is None else abbreviations
        linked = self.linker.link(spans, docs, abbreviations, explain=self.settings.explain)
        linked = self.settings.type_rules().apply(linked, self.kb, self.model.config.types)
        linked = self.settings.short_form_rules().apply(linked, spans, abbreviations, self.kb)
        linked = self.settings.sequence_rule().apply(linked, spans, docs, abbreviations,
                                                     self.kb)
        linked = self.settings.gene_rule().apply(linked, spans, docs)
        if self.settings.unnamed_species == "drop":
            linked = self.linker.drop_unnamed_species(linked, spans, docs)
        return linked

    def annotate(self, docs: Sequence[Document], replace: bool = False) -> list[Document]:
        """Copies of ``docs`` with predicted annotations added (or replacing the old ones)."""
        docs = list(docs)
        abbreviations = scan_documents(docs)  # the one scan of each text in this call
        spans, _ = self.detect(docs, abbreviations=abbreviations)
        if self.settings.mode == "per-mention":
            reencode_per_mention(self.model, docs, spans, self.settings.context_window)
        annotations = self.link(spans, docs, abbreviations)
        if self.settings.types is not None:  # --types: the output's types only
            wanted = set(self.settings.types)
            annotations = [a if a is not None and a.type in wanted else None
                           for a in annotations]
        self.stats["documents"] += len(docs)
        self.stats["mentions"] += sum(a is not None for a in annotations)
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
