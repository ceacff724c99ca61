"""What the steps of one annotate call read and write: :class:`Batch`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from data_tools.documents import Annotation, Document
from e2e_linker.collective.span_selection import SpanPrediction, resolve_overlaps
from e2e_linker.lexical.abbreviations import DocumentAbbreviations

if TYPE_CHECKING:  # the linker imports the search stack (torch): settings must not
    from e2e_linker.collective.span_linking import SpanLinker


@dataclass
class Batch:
    """The documents of one annotate call and everything the steps know about them.

    Why one object: every step reads some of the same things (the documents, their one
    abbreviation scan, the linker's KB lookups) and hands on spans or annotations; a step's
    contract is which fields it reads and writes (:attr:`Step.reads`, :attr:`Step.writes`).

    Selection steps work on :attr:`spans` (the candidates still in the running) and
    :attr:`kept` (the spans selected); linking fills :attr:`annotations`, one per kept span
    (None: dropped), which the annotation steps change in place or set to None.
    """

    docs: Sequence[Document]
    abbreviations: Sequence[DocumentAbbreviations]
    linker: SpanLinker
    #: the mention threshold γ of this call: a span scored above it is kept on its own
    keep: float
    #: the lowest score a selection step reads below γ (:meth:`Pipeline.selection_floor`)
    floor: float
    #: the KB (``get(concept_id)`` → concept; the annotator hands in its
    #: :class:`~e2e_linker.collective.remembered.RememberedKB`; None: none at hand)
    kb: Any = None
    model_types: Sequence[str] = ()
    explain: bool = False
    #: every candidate scored that is still a possible mention (name extension reads them)
    candidates: list[SpanPrediction] = field(default_factory=list)
    #: the candidates still in the running
    spans: list[SpanPrediction] = field(default_factory=list)
    #: weaker spans (at most γ) a step found support for, by identity
    rescued: set[int] = field(default_factory=set)
    #: the candidates the lexical gate took out of the running
    gated: list[SpanPrediction] = field(default_factory=list)
    #: the selected spans, in document order
    kept: list[SpanPrediction] = field(default_factory=list)
    annotations: list[Annotation | None] = field(default_factory=list)
    _strong: list[SpanPrediction] | None = None

    def replace_spans(self, spans: list[SpanPrediction]) -> None:
        """Set the candidates still in the running (and forget what was derived from them)."""
        self.spans = spans
        self._strong = None

    def text(self, span: SpanPrediction) -> str:
        """A span's text."""
        return self.docs[span.doc_index].text_at(span.start, span.end)

    def strong(self) -> list[SpanPrediction]:
        """The candidates above γ with overlaps resolved (computed once: the rescue steps
        and overlap resolution read the same list)."""
        if self._strong is None:
            self._strong = resolve_overlaps([s for s in self.spans if s.mention_score > self.keep])
        return self._strong
