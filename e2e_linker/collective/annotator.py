"""Detection behind ``linker annotate``: the model's pass over whole documents.

Documents are chunked, chunks of many documents are batched by padded length, and one encoder
pass per batch yields mention probabilities for every span (vectorised), span vectors and types
for the candidates; selection (:mod:`e2e_linker.collective.span_selection`) keeps spans, and
linking (:mod:`e2e_linker.collective.span_linking`) gives them concepts in one batched index
search. Each document's text is scanned for abbreviations once per call
(:func:`~e2e_linker.lexical.abbreviations.scan_documents`) and that scan is what selection,
linking and a text linker read. The annotations :meth:`Annotator.annotate` returns carry the
record every door writes (:mod:`data_tools.formats.records`: namespaced IDs, the concept's
name, a gene's species; and the confidence, :mod:`e2e_linker.collective.confidence`), filled
after every pipeline step. It runs in two phases, :meth:`Annotator.begin` (chunking, and the
scoring work it returns: the encoder forward and the span heads) and :meth:`Annotator.finish`
(the steps and the records), which the corpus engine overlaps across groups of documents
(docs/scaling.md, "Overlap").
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

from data_tools.documents import Annotation, Document
from data_tools.formats.records import record_annotations
from e2e_linker.collective.batches import PAD_MULTIPLE, collate_chunks, length_batches
from e2e_linker.collective.chunking import Chunk, chunk_documents
from e2e_linker.collective.confidence import assign_confidence, load_confidence
from e2e_linker.collective.gene_families import (
    GENE_FALSE_ALARMS_FILE,
    GENE_FAMILIES_FILE,
    load_gene_mention_model,
)
from e2e_linker.collective.guidelines import guideline_prefix
from e2e_linker.collective.model import CollectiveLinker
from e2e_linker.collective.model_dir import read_manifest
from e2e_linker.collective.per_mention import reencode_per_mention
from e2e_linker.collective.remembered import RememberedKB
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.collective.span_linking import SpanLinker
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.collective.species_choice import load_species_choice
from e2e_linker.console import say
from e2e_linker.lexical.abbreviations import DocumentAbbreviations, scan_documents
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.declaration import Pipeline

#: :meth:`Annotator.with_pipeline`'s "the same text linker"
KEEP = object()


@dataclasses.dataclass(frozen=True)
class ScoredGroup:
    """What annotate's first phase (:meth:`Annotator.begin`) hands its second
    (:meth:`Annotator.finish`): a group's chunks and every span scored above the detection
    floor."""

    chunks: list[Chunk]
    spans: list[SpanPrediction]


class Annotator:
    """A :class:`CollectiveLinker` that detects spans, with the :class:`SpanLinker` that links
    them and the settings (resolved against the model's config once) that govern both."""

    def __init__(self, model: CollectiveLinker, linker: SpanLinker,
                 settings: AnnotateSettings | None = None, kb=None,
                 pipeline: Pipeline | None = None, model_dir: str | os.PathLike | None = None):
        self.model = model.eval()
        #: the padding token, read here once: :meth:`score_chunks` must not ask the tokenizer
        self.pad_id = model.tokenizer.pad_token_id or 0
        self.linker = linker
        #: every option, with the model's defaults filled in (:meth:`AnnotateSettings.for_model`)
        self.settings = (settings or AnnotateSettings()).for_model(model.config)
        #: the steps this annotator runs (:meth:`AnnotateSettings.resolved_pipeline`)
        self.pipeline = pipeline or self.settings.resolved_pipeline(
            model.config, model_dir or self.settings.model_dir or model_directory(model))
        self.pipeline.check_model_types(model.config.types)
        #: the tag of the pipeline's guideline, read after [CLS] (none for a model trained
        #: without guideline tags)
        self.prefix_ids = guideline_prefix(model.tokenizer, model.config.guidelines,
                                           model.config.default_guideline,
                                           self.pipeline.guideline)
        #: the KB the index was built from (None when the caller did not say)
        self.kb = kb
        #: its concepts as the steps and the records ask for them, remembered
        self.concept_lookup = RememberedKB(kb) if kb is not None else None
        #: each annotation's confidence: the model directory's confidence.json, or the
        #: mention score alone (:mod:`e2e_linker.collective.confidence`)
        self.confidence = load_confidence(model_dir or self.settings.model_dir
                                          or model_directory(model))
        #: what the linker was built from (:meth:`from_parts`; None: a linker handed in)
        self.parts: LinkerParts | None = None
        self.stats = {"documents": 0, "chunks": 0, "tokens": 0, "mentions": 0}

    @classmethod
    def from_parts(cls, model: CollectiveLinker, index, names=None,
                   settings: AnnotateSettings | None = None, sieves=None, kb=None,
                   text_linker=None, model_dir: str | os.PathLike | None = None,
                   pipeline: Pipeline | None = None) -> Annotator:
        """An annotator over an entity index: its :class:`SpanLinker` takes the linker parts
        the pipeline declares (the exact-name sieve ``names``, the sieve stack ``sieves``,
        composites, short-form links; the one place that decides them), ``text_linker`` as
        given, and the settings' name-only types. ``pipeline``: the settings' pipeline when
        the caller has resolved it already; else resolved from ``model_dir`` (where the
        model's ``pipeline.toml`` is; default: the settings')."""
        settings = (settings or AnnotateSettings()).for_model(model.config)
        pipeline = pipeline or settings.resolved_pipeline(
            model.config, model_dir or settings.model_dir or model_directory(model))
        directory = model_dir or settings.model_dir or model_directory(model)
        parts = LinkerParts(index, names, sieves, text_linker, kb,
                            load_species_choice(directory),
                            load_gene_mention_model(directory, GENE_FAMILIES_FILE),
                            load_gene_mention_model(directory, GENE_FALSE_ALARMS_FILE),
                            settings.kb or (read_manifest(directory).get("kb")
                                            if directory is not None else None))
        annotator = cls(model, parts.linker(pipeline, settings), settings, kb, pipeline)
        annotator.parts = parts
        return annotator

    def with_pipeline(self, pipeline: Pipeline, text_linker=KEEP) -> Annotator:
        """This annotator (same model, KB and index) running ``pipeline`` instead, its linker
        rebuilt with the parts that pipeline switches on (an evaluation's ablation rows);
        ``text_linker`` replaces the text linker (None: none; default: the same)."""
        if self.parts is None:
            raise ValueError("an annotator built without from_parts cannot change its linker")
        parts = self.parts if text_linker is KEEP \
            else dataclasses.replace(self.parts, text_linker=text_linker)
        other = Annotator(self.model, parts.linker(pipeline, self.settings), self.settings,
                          self.kb, pipeline)
        other.parts = parts
        other.stats = self.stats
        return other

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
        threshold = self.settings.threshold if threshold is None else threshold
        keep = threshold  # spans are kept above this one; ``threshold`` may be lowered below
        if resolve:
            threshold = self.pipeline.detection_floor(threshold)
        chunks = self.chunk(docs)
        spans = self.score_chunks(chunks, threshold)
        self.count_chunks(chunks)
        if not resolve:
            return spans, chunks
        return self.select(spans, docs, keep, abbreviations), chunks

    def chunk(self, docs: Sequence[Document]) -> list[Chunk]:
        """The model's chunks of ``docs`` (the tokenizer's pass: not thread-safe, see
        :meth:`score_chunks`)."""
        cfg = self.model.config
        return chunk_documents(docs, self.model.tokenizer, cfg.max_length,
                               self.settings.max_span_len, cfg.chunk_overlap, self.prefix_ids)

    def count_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Add ``chunks`` to :attr:`stats` (called by the thread that runs the steps)."""
        self.stats["chunks"] += len(chunks)
        self.stats["tokens"] += sum(len(c) for c in chunks)

    @torch.inference_mode()
    def score_chunks(self, chunks: Sequence[Chunk], floor: float) -> list[SpanPrediction]:
        """Every span of ``chunks`` the model scores above ``floor``, with its vector and type:
        the encoder forward and the span heads, batched by padded length.

        Why on its own: it reads the model and the settings and changes nothing else (no
        tokenizer, no KB, no :attr:`stats`), and torch releases the GIL while it computes,
        so the corpus engine runs it for the next group in a thread of its own while this
        group's steps run (:mod:`e2e_linker.jobs.corpus_run`, docs/scaling.md).
        """
        settings = self.settings
        spans: list[SpanPrediction] = []
        device = self.model.device
        # one padded length per batch: a chunk's forward does not depend on its batch
        # (collective/batches.py says why; the check is docs/decisions/0034-padded-length-batches.md)
        for group in length_batches(chunks, settings.batch_size, settings.max_batch_tokens,
                                    PAD_MULTIPLE):
            batch_chunks = [chunks[i] for i in group]
            batch = collate_chunks(batch_chunks, self.pad_id, device, PAD_MULTIPLE)
            states = self.model.token_states(batch)
            found = self.model.candidate_spans(states, batch, floor, settings.max_span_len)
            if found is None:
                continue
            spans += self.span_objects(found, states, batch_chunks)
        return spans

    def span_objects(self, found, states: torch.Tensor,
                     batch_chunks: Sequence[Chunk]) -> list[SpanPrediction]:
        """One batch's candidates (``found``: batch rows, start and end tokens, scores) as
        :class:`SpanPrediction` objects in document offsets, with their vectors and types."""
        types_of = self.model.config.types
        b, i, j, p = found
        vecs = self.model.span_vectors(states, b, i, j)
        type_ids = self.model.type_logits(vecs).argmax(-1).cpu().tolist()
        vecs_np = vecs.float().cpu().numpy()
        types = [types_of[t] for t in type_ids] if types_of else [""] * len(type_ids)
        # whole tensors to lists once: a tensor indexed per span costs more than the span
        spans = []
        for bb, ii, jj, score, type_, vector in zip(b.tolist(), i.tolist(), j.tolist(),
                                                   p.tolist(), types, vecs_np, strict=True):
            chunk = batch_chunks[bb]
            spans.append(SpanPrediction(chunk.doc_index, chunk.starts[ii], chunk.ends[jj],
                                        score, type_, vector))
        return spans

    def batch(self, docs: Sequence[Document], keep: float | None = None,
              abbreviations: Sequence[DocumentAbbreviations] | None = None) -> Batch:
        """The :class:`Batch` the pipeline's steps work on for ``docs`` (``keep``: γ of this
        call, default the settings'; ``abbreviations``: each document's scan, made here when
        not given)."""
        keep = self.settings.threshold if keep is None else keep
        return Batch(docs, scan_documents(docs) if abbreviations is None else abbreviations,
                     self.linker, keep, self.pipeline.selection_floor(keep),
                     self.concept_lookup, self.model.config.types, self.settings.explain)

    def select(self, spans: list[SpanPrediction], docs: Sequence[Document],
               keep: float | None = None,
               abbreviations: Sequence[DocumentAbbreviations] | None = None
               ) -> list[SpanPrediction]:
        """The spans :meth:`detect` returns, from every candidate it scored: the pipeline's
        select steps (``linker pipeline show``) on them, with γ ``keep``.
        Public so that evaluations can score once and select under several settings."""
        batch = self.batch(docs, keep, abbreviations)
        batch.replace_spans(list(spans))
        self.pipeline.run_stage("select", batch)
        return batch.kept

    def link(self, spans: list[SpanPrediction], docs: Sequence[Document],
             abbreviations: Sequence[DocumentAbbreviations] | None = None
             ) -> list[Annotation | None]:
        """The kept spans linked (the pipeline's link stage:
        :meth:`SpanLinker.link` with the parts switched on), then its annotate steps, in
        order: one annotation per span, None where a step dropped it."""
        batch = self.batch(docs, abbreviations=abbreviations)
        batch.kept = list(spans)
        self.pipeline.run_stage("link", batch)
        self.pipeline.run_stage("annotate", batch)
        return batch.annotations

    def annotate(self, docs: Sequence[Document], replace: bool = False) -> list[Document]:
        """Copies of ``docs`` with predicted annotations added (or replacing the old ones),
        each with its record (:func:`~data_tools.formats.records.record_annotation`:
        namespaced IDs, name, species; and the confidence infon): what leaves the linker by
        every door. The pipeline's steps (:meth:`link`) see the KB's keys.

        It is :meth:`begin`, the work that returns, and :meth:`finish`, one after the other."""
        docs = list(docs)
        return self.finish(docs, self.begin(docs)(), replace)

    def begin(self, docs: list[Document]) -> Callable[[], ScoredGroup]:
        """Annotate's first phase for ``docs``: chunk them here (the tokenizer), and return
        the work that scores the chunks (:meth:`score_chunks`), which may run in another
        thread while this one finishes an earlier group; :meth:`finish` takes its result.

        Why in two: the corpus engine overlaps one group's encoder forward with the previous
        group's steps (docs/scaling.md, "Overlap"); every call in the same order gives the
        same bytes."""
        chunks = self.chunk(docs)
        floor = self.pipeline.detection_floor(self.settings.threshold)
        return functools.partial(self._scored, chunks, floor)

    def _scored(self, chunks: list[Chunk], floor: float) -> ScoredGroup:
        return ScoredGroup(chunks, self.score_chunks(chunks, floor))

    def finish(self, docs: list[Document], scored: ScoredGroup,
               replace: bool = False) -> list[Document]:
        """Annotate's second phase: the steps over what :meth:`begin`'s work scored for
        ``docs`` (the same list), then the records; see :meth:`annotate`."""
        self.count_chunks(scored.chunks)
        abbreviations = scan_documents(docs)  # the one scan of each text in this call
        with torch.inference_mode():  # as in detect, where the selection runs too
            spans = self.select(scored.spans, docs, self.settings.threshold, abbreviations)
        if self.settings.mode == "per-mention":
            reencode_per_mention(self.model, docs, spans, self.settings.context_window,
                                 self.prefix_ids)
        annotations = self.link(spans, docs, abbreviations)
        if self.settings.types is not None:  # --types: the output's types only
            wanted = set(self.settings.types)
            annotations = [a if a is not None and a.type in wanted else None
                           for a in annotations]
        # after the steps: they compare KB keys
        record_annotations(annotations, self.concept_lookup)
        assign_confidence(annotations, self.confidence)
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


@dataclasses.dataclass(frozen=True)
class GroupAnnotation:
    """:meth:`Annotator.annotate` with ``replace`` fixed, as the corpus engine runs it: called
    on a group of documents, or in the two phases ``begin`` and ``finish``, which the engine
    overlaps across groups (:mod:`e2e_linker.jobs.lookahead`)."""

    annotator: Annotator
    replace: bool = False

    def __call__(self, docs: list[Document]) -> list[Document]:
        return self.annotator.annotate(docs, self.replace)

    @property
    def overlap_by_default(self) -> bool:
        """Overlap groups when the encoder runs on a GPU, not on a CPU: there the host work
        competes with the encoder's threads for the same cores (docs/scaling.md, "Overlap")."""
        return self.annotator.model.device.type != "cpu"

    @property
    def fork_unsafe_because(self) -> str | None:
        """Why the second phase (:meth:`finish`) cannot run in a process forked from this one,
        or None when it can. A process forked after CUDA was initialised cannot use the GPU,
        so on a GPU the phase must not need an encoder: no names encoded as the search goes,
        no per-mention re-encoding, no text linking (:mod:`e2e_linker.jobs.host_pool`)."""
        annotator = self.annotator
        if annotator.model.device.type == "cpu":
            return None
        if annotator.settings.mode == "per-mention":
            return "the per-mention mode encodes each mention again after selection"
        if getattr(annotator.linker, "text_linker", None) is not None:
            return "--linking text encodes each span's text with the normalizer"
        index = annotator.parts.index if annotator.parts is not None else None
        if getattr(index, "encodes_on_demand", False):
            return ("the KB search encodes names as it goes (--index packed, or auto while "
                    "the KB is not fully encoded); give --index exact to encode every name "
                    "before the workers start")
        return None

    @property
    def stats(self) -> dict[str, int]:
        """The annotator's counters (a host worker's are added to the main process's:
        :mod:`e2e_linker.jobs.host_pool`)."""
        return self.annotator.stats

    def begin(self, docs: list[Document]) -> Callable[[], ScoredGroup]:
        return self.annotator.begin(docs)

    def finish(self, docs: list[Document], scored: ScoredGroup) -> list[Document]:
        return self.annotator.finish(docs, scored, self.replace)


@dataclasses.dataclass(frozen=True)
class LinkerParts:
    """What a :class:`SpanLinker` is built from: the entity index, the exact-name dictionary,
    the sieve stack, a text linker and the KB; a pipeline decides which of them it uses."""

    index: object
    names: object = None
    sieves: object = None
    text_linker: object = None
    kb: object = None
    #: the model's fitted species choice (None: it has none)
    species_choice: object = None
    #: the model's fitted gene family model (None: it has none)
    gene_families: object = None
    #: the model's fitted gene false-alarm model (None: it has none)
    gene_false_alarms: object = None
    #: the KB's spec (None: not known): where the ``higher_taxa`` step reads the taxonomy
    kb_spec: str | None = None

    def linker(self, pipeline: Pipeline, settings: AnnotateSettings) -> SpanLinker:
        """The linker with the parts ``pipeline`` switches on (``exact_name``,
        ``sieve_stack``, ``abbreviation_links``, ``composites``, ``coordinated_genes``,
        ``species_mentions``,
        ``learned_species``, ``gene_usage``) and the settings' name-only types.
        ``learned_species`` declared for a model without its fitted file is said (``linker
        -v`` or a terminal) and links by the hand species order."""
        kb = self.kb
        if pipeline.has("learned_species") and self.species_choice is None:
            say("learned_species is declared but the model has no species_choice.json "
                "(python -m eval.species_fit --write fits one): genes take the hand species "
                "order")
        if pipeline.has("gene_families") and self.gene_families is None:
            say("gene_families is declared but the model has no gene_families.json "
                "(python -m eval.family_fit --write fits one): no Gene mention is dropped "
                "as a family")
        if pipeline.has("gene_false_alarms") and self.gene_false_alarms is None:
            say("gene_false_alarms is declared but the model has no gene_false_alarms.json "
                "(python -m eval.false_alarm_fit --write fits one): no Gene mention is "
                "dropped as a false alarm")
        return SpanLinker(self.index, self.names if pipeline.has("exact_name") else None,
                          self.sieves if pipeline.has("sieve_stack") else None,
                          self.text_linker, pipeline.has("abbreviation_links"),
                          kb.taxa() if kb is not None else None, pipeline.has("composites"),
                          settings.lexical_types, kb.concepts if kb is not None else None,
                          species_mentions=pipeline.has("species_mentions"),
                          species_choice=self.species_choice
                          if pipeline.has("learned_species") else None,
                          gene_usage=pipeline.has("gene_usage"),
                          gene_families=self.gene_families
                          if pipeline.has("gene_families") else None,
                          gene_false_alarms=self.gene_false_alarms
                          if pipeline.has("gene_false_alarms") else None,
                          species_usage=species_usage(kb)
                          if pipeline.has("species_usage") and kb is not None else None,
                          read_higher_taxa=functools.partial(higher_taxa, self.kb_spec)
                          if pipeline.has("higher_taxa") else None,
                          coordinated_genes=pipeline.has("coordinated_genes"))


def species_usage(kb: Any) -> dict[str, list[str]] | None:
    """Written form → the taxa the species corpora's training mentions written so are
    annotated with (:func:`~data_tools.kb_loaders.species_form_taxa`), those ``kb`` holds;
    None when it holds none (a KB without species). ``kb``: a loaded or compiled KB.

    Why read here: the forms are the KB's too (added as names of their taxa when the species
    KB is built), and only the linker's ranking needs them the other way round."""
    from data_tools.kb_loaders import species_form_taxa
    concepts = kb.concepts
    found = {form: kept for form, taxa in species_form_taxa().items()
             if (kept := [t for t in taxa if t in concepts])}
    return found or None


def higher_taxa(spec: str | None) -> frozenset[str] | None:
    """The taxa above a species in the taxonomy the KB ``spec`` reads
    (:func:`~data_tools.kb_loaders.taxa_above_species`, parsed once a process), None when it
    reads none (a KB without species, or a spec not known).

    Why from the spec's files: the KB keeps no rank or parent of a taxon."""
    if not spec:
        return None
    from data_tools.kb_loaders import taxa_above_species
    from data_tools.registry import taxonomy_files

    found = frozenset().union(*(taxa_above_species(str(path))
                                for path in taxonomy_files(spec)))
    return found or None


def model_directory(model) -> str | None:
    """The directory a model was loaded from (None: built in memory, as in tests and
    training): where its ``pipeline.toml`` is."""
    return getattr(model, "directory", None)


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
