"""A gene mention's species, chosen by a model fitted on gold gene IDs.

Why: a gene symbol names a gene in every species, and which species a mention means decides
its NCBI Gene ID. The rule it replaces (the document's species order,
:func:`~data_tools.species.preferred_taxa` and :func:`~data_tools.species.mentioned_taxa_first`,
with three per-mention cues in
:meth:`~e2e_linker.collective.gene_ranking.GeneRanking.mention_species`) ranks first the
species a document names most, while the species most of a document's gold genes belong to
is the gold gene's far more often (the figures: docs/decisions/0040-learned-species.md). The
evidence is there — which species the text names and where, how the document writes its genes
(mouse symbols "Foxp3", human "FOXP3"), a species word right before the mention — but how much
each weighs differs from one group's abstracts to another's, which is what a model fitted on
several corpora's gold genes learns and a hand order does not.

For one gene mention, each candidate taxon (:func:`candidate_taxa`: the taxa of its name's
genes; the document's first three and a species named right before it when the ortholog step
reaches them) gets the features of :func:`taxon_features`; :class:`SpeciesChoice` scores them
with a conditional logit (:func:`fit_species_choice`: a softmax over the mention's candidates,
its weights held in a :class:`~e2e_linker.collective.confidence.ConfidenceModel`) and orders
them by it, the rule's order after them. One feature, ``text_prior``, is what a text model
says of the document's species from its words (:mod:`~e2e_linker.collective.text_species`,
docs/decisions/0042-text-species.md). The fitted weights are the model directory's
:data:`SPECIES_CHOICE_FILE` (``python -m eval.species_fit --write``); the pipeline step
``learned_species`` switches it on.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from data_tools.kb_loaders import GENE_TYPE
from data_tools.species import (
    HUMAN,
    MOUSE,
    RAT,
    mutant_mark_after,
    species_before,
    species_cue_offsets,
)
from e2e_linker.collective.confidence import ConfidenceModel, feature_matrix
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.collective.text_species import (
    TEXT_SPECIES_FILE,
    TextSpecies,
    load_text_species,
    taxon_group,
)
from e2e_linker.errors import UserError
from e2e_linker.lexical.sieves import normalize_name

#: the file in a model directory holding the fitted species choice
SPECIES_CHOICE_FILE = "species_choice.json"
#: the taxa with their own prior and style features (with human and mouse, the rat); any
#: other → ``other``
TAXON_GROUPS = {HUMAN: "human", MOUSE: "mouse", RAT: "rat"}
#: how many of the document's species order are candidates even without a gene of theirs
#: among the mention's concepts (the ortholog step may find one)
DOCUMENT_CANDIDATES = 3
#: the lowest text-model probability ``text_prior`` reads (its log bounds the feature)
PRIOR_FLOOR = 1e-3
#: where a sentence ends, for "named in the same sentence"
_SENTENCE_END = re.compile(r"[.!?;]\s+(?=[A-Z0-9(\[])|\n")


@dataclass
class DocumentSpecies:
    """What one document says about its species: ``named`` — (offset, taxon) of each
    species it names (its Species spans' links and the cue words,
    :func:`~data_tools.species.species_cue_offsets`); ``mentioned`` and ``cued`` — how many
    times each taxon is named by Species spans and by cue words; ``order`` — the rule's
    document order; ``symbols`` — how many of its gene spans are written exactly as the
    official symbol of a gene of each taxon, and ``only`` how many name genes of that taxon
    alone, of ``gene_spans`` in all."""

    named: list[tuple[int, str]] = field(default_factory=list)
    mentioned: dict[str, int] = field(default_factory=dict)
    cued: dict[str, int] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)
    only: dict[str, int] = field(default_factory=dict)
    gene_spans: int = 0
    #: :func:`sentence_ends` of the text
    ends: list[tuple[int, int]] = field(default_factory=list)
    #: the text model's probability of each species group
    #: (:meth:`~e2e_linker.collective.text_species.TextSpecies.probabilities`; empty: none)
    text_prior: dict[str, float] = field(default_factory=dict)

    @functools.cached_property
    def mentioned_total(self) -> int:
        """How many Species spans name a taxon."""
        return sum(self.mentioned.values())

    @functools.cached_property
    def cued_total(self) -> int:
        """How many cue words name a species."""
        return sum(self.cued.values())

    @functools.cached_property
    def symbol_leader(self) -> str | None:
        """The one taxon whose official symbols the most gene spans are written as (None: no
        gene span is, or several taxa tie)."""
        if not self.symbols:
            return None
        most = max(self.symbols.values())
        leaders = [taxon for taxon, count in self.symbols.items() if count == most]
        return leaders[0] if most > 0 and len(leaders) == 1 else None


def document_species(text: str, species_spans: Sequence[tuple[int, str]],
                     gene_texts: Sequence[str], order: Sequence[str],
                     genes: GeneRanking, text_prior: dict[str, float] | None = None
                     ) -> DocumentSpecies:
    """The :class:`DocumentSpecies` of a document: its ``text``, its Species spans as
    (start, taxon), the texts of its gene spans and the rule's species ``order``; ``genes``
    ranks a gene text's concepts (and says their taxa and official symbols); ``text_prior``:
    the text model's group probabilities for ``text`` (:meth:`SpeciesChoice.text_prior`)."""
    cues = species_cue_offsets(text)
    out = DocumentSpecies(named=sorted([*species_spans, *cues]), order=list(order),
                          gene_spans=len(gene_texts), ends=sentence_ends(text),
                          text_prior=dict(text_prior or {}))
    for _, taxon in species_spans:
        out.mentioned[taxon] = out.mentioned.get(taxon, 0) + 1
    for _, taxon in cues:
        out.cued[taxon] = out.cued.get(taxon, 0) + 1
    taxa = genes.taxa or {}
    for gene_text in gene_texts:
        ranked = genes.name_only_ranking(gene_text, GENE_TYPE)
        written = {taxa[cid] for cid, _ in ranked
                   if cid in taxa and genes.facts(cid).name == gene_text}
        for taxon in written:
            out.symbols[taxon] = out.symbols.get(taxon, 0) + 1
        named = {taxa[cid] for cid, _ in ranked if cid in taxa}
        if len(named) == 1:
            (taxon,) = named
            out.only[taxon] = out.only.get(taxon, 0) + 1
    return out


def sentence_ends(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s sentences end, in order: each end mark's (start, end) offsets — a
    sentence mark with the spaces after it when a capital, digit or bracket follows, or a
    line end — for :func:`sentence_bounds`, found once a document."""
    return [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)]


def sentence_bounds(text: str, start: int, end: int,
                    ends: Sequence[tuple[int, int]] | None = None) -> tuple[int, int]:
    """The offsets of the sentence of ``text`` that holds ``start``..``end``: from the last
    end mark (:func:`sentence_ends`, or ``ends`` when the caller found them) that ends before
    the next character after it reaches ``start`` — a sentence mark whose following
    character is at ``start`` does not count, a line end right before it does — to the next
    mark at or after ``end``."""
    found = sentence_ends(text) if ends is None else ends
    lo = 0
    n = bisect.bisect_left(found, (start, -1))
    for index in range(n - 1, -1, -1):  # the nearest mark first; most stop at it
        mark_start, mark_end = found[index]
        if mark_end < start or (mark_end == start and text[mark_start] == "\n"):
            lo = mark_end
            break
    k = bisect.bisect_left(found, (end, -1))
    return lo, found[k][0] if k < len(found) else len(text)


def _style(text: str) -> str | None:
    """``caps`` for a symbol written in capitals ("FOXP3"), ``title`` for one with a capital
    then lower case ("Foxp3"), else None."""
    letters = [ch for ch in text if ch.isalpha()]
    if len(letters) < 2:
        return None
    if all(ch.isupper() for ch in letters):
        return "caps"
    if letters[0].isupper() and any(ch.islower() for ch in letters[1:]):
        return "title"
    return None


def candidate_taxa(ranked: Sequence[tuple[str, float]], genes: GeneRanking,
                   doc: DocumentSpecies, before: Sequence[str]) -> list[str]:
    """The taxa one gene mention can be linked to: its concepts' taxa (in their order), then
    those of the document order's first :data:`DOCUMENT_CANDIDATES` and of a species named
    right before it that the ortholog step reaches from its first gene (a gene of that taxon
    with the same symbol: :meth:`~e2e_linker.collective.gene_ranking.GeneRanking.ortholog`).
    Only these: a taxon first in the order with no gene to link is passed over by the
    linker, so choosing it would choose nothing."""
    taxa = genes.taxa or {}
    out: list[str] = []
    for cid, _ in ranked:
        if cid in taxa and taxa[cid] not in out:
            out.append(taxa[cid])
    first = next((cid for cid, _ in ranked if cid in taxa), None)
    for taxon in [*doc.order[:DOCUMENT_CANDIDATES], *before]:
        if first is not None and taxon not in out and genes.ortholog(first, taxon) is not None:
            out.append(taxon)
    return out


def text_prior_feature(taxon: str, prior: dict[str, float]) -> float:
    """The ``text_prior`` feature of ``taxon``: the log of the text model's probability of its
    group (:func:`~e2e_linker.collective.text_species.taxon_group`), floored at
    :data:`PRIOR_FLOOR`; 0 for every taxon when there is no text model (``prior`` empty), which
    the choice's softmax over a mention's candidates then ignores (a feature equal for all
    candidates cancels)."""
    if not prior:
        return 0.0
    return math.log(max(prior.get(taxon_group(taxon), 0.0), PRIOR_FLOOR))


def taxon_features(taxon: str, text: str, doc_text: str, start: int, end: int,
                   ranked: Sequence[tuple[str, float]], doc: DocumentSpecies,
                   genes: GeneRanking, before: Sequence[str],
                   sentence: tuple[int, int]) -> dict[str, float]:
    """The named features of ``taxon`` for the gene mention ``text`` at ``start``..``end`` of
    ``doc_text``, its concepts ``ranked``; ``before``: :func:`~data_tools.species.species_before`
    of the mention, ``sentence``: :func:`sentence_bounds` of it. Only non-zero features are
    listed. See the module docstring and docs/decisions/0040-learned-species.md."""
    taxa = genes.taxa or {}
    group = TAXON_GROUPS.get(taxon, "other")
    own = [cid for cid, _ in ranked if taxa.get(cid) == taxon]
    key = normalize_name(text)
    style = _style(text)
    out = {
        f"taxon={group}": 1.0,
        "mentioned_share": doc.mentioned.get(taxon, 0) / doc.mentioned_total
        if doc.mentioned_total else 0.0,
        "cued_share": doc.cued.get(taxon, 0) / doc.cued_total if doc.cued_total else 0.0,
        "named_nowhere": float(taxon not in doc.mentioned and taxon not in doc.cued),
        "document_first": float(bool(doc.order) and doc.order[0] == taxon),
        "document_second": float(len(doc.order) > 1 and doc.order[1] == taxon),
        "most_symbols": float(doc.symbol_leader == taxon),
        "named_before": float(taxon in before),
        "same_sentence": float(any(sentence[0] <= offset < sentence[1] and named == taxon
                                   for offset, named in doc.named)),
        "has_gene": float(bool(own)),
        "first_gene": float(bool(ranked) and taxa.get(ranked[0][0]) == taxon),
        "written_symbol": float(any(genes.facts(cid).name == text for cid in own)),
        "symbol_key": float(any(genes.facts(cid).key == key for cid in own)),
        "symbol_share": doc.symbols.get(taxon, 0) / doc.gene_spans if doc.gene_spans else 0.0,
        "only_share": doc.only.get(taxon, 0) / doc.gene_spans if doc.gene_spans else 0.0,
        "mutant_mark": float(taxon == MOUSE and mutant_mark_after(doc_text, end)),
        "text_prior": text_prior_feature(taxon, doc.text_prior),
    }
    if style is not None:
        out[f"{style}:{group}"] = 1.0
    return {name: value for name, value in out.items() if value}


@dataclass(frozen=True)
class SpeciesChoice:
    """The fitted species choice: ``model`` scores a (mention, taxon) pair's
    :func:`taxon_features`; a higher score, a likelier taxon (the softmax over a mention's
    candidates, :func:`fit_species_choice`, is monotone in it)."""

    model: ConfidenceModel
    #: the text model read for the ``text_prior`` feature (None: the choice was fitted
    #: without it)
    text: TextSpecies | None = None

    def text_prior(self, doc_text: str) -> dict[str, float]:
        """The text model's group probabilities for a document (empty without a model)."""
        return self.text.probabilities(doc_text) if self.text is not None else {}

    def order(self, text: str, doc_text: str, start: int, end: int,
              ranked: Sequence[tuple[str, float]], doc: DocumentSpecies,
              genes: GeneRanking) -> list[str]:
        """The species order for one gene mention: its candidate taxa
        (:func:`candidate_taxa`) by the model's score, best first (the earlier
        candidate on a tie), then the rest of the document's order."""
        before = species_before(doc_text, start)
        sentence = sentence_bounds(doc_text, start, end, doc.ends)
        found = candidate_taxa(ranked, genes, doc, before)
        scores = [self.model.score(taxon_features(taxon, text, doc_text, start, end,
                                                  ranked, doc, genes, before, sentence))
                  for taxon in found]
        best = [found[n] for n in sorted(range(len(found)), key=lambda n: (-scores[n], n))]
        return [*best, *(t for t in doc.order if t not in best)]

    def to_json(self) -> dict:
        """What :data:`SPECIES_CHOICE_FILE` holds (read back by :func:`load_species_choice`)."""
        return {**self.model.to_json(),
                "features": "e2e_linker.collective.species_choice.taxon_features"}


def fit_species_choice(mentions: Sequence[tuple[Sequence[dict[str, float]], int]],
                       l2: float = 1.0, fitted: dict | None = None) -> SpeciesChoice:
    """The species choice fitted on ``mentions``, each its candidates' features and the index
    of the gold one: a conditional logit (the probability of a candidate is the softmax of
    the weighted features over the mention's candidates), by Newton's method on its
    log-likelihood with an L2 penalty ``l2``.

    Why a softmax over each mention's candidates and not a logistic model of each candidate
    alone: the choice is one taxon among a varying number, and only the differences between
    candidates' features say which; a per-candidate model also learns how many candidates a
    mention has, which says nothing about which one is right."""
    names = sorted({name for found, _ in mentions for row in found for name in row})
    groups = [(feature_matrix(found, names), gold) for found, gold in mentions]
    w = np.zeros(len(names))
    for _ in range(100):
        gradient = l2 * w
        hessian = l2 * np.eye(len(names)) + 1e-9 * np.eye(len(names))
        for x, gold in groups:
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            mean = p @ x
            gradient -= x[gold] - mean
            centred = x - mean
            hessian += (centred * p[:, None]).T @ centred
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return SpeciesChoice(ConfidenceModel(
        weights={name: round(float(v), 6) for name, v in zip(names, w, strict=True)},
        fitted=fitted or {}))


def load_species_choice(model_dir: str | os.PathLike | None) -> SpeciesChoice | None:
    """The species choice fitted for the model in ``model_dir`` (its
    :data:`SPECIES_CHOICE_FILE`), or None when it has none."""
    if model_dir is None:
        return None
    path = Path(model_dir) / SPECIES_CHOICE_FILE
    if not path.is_file():
        return None
    model = ConfidenceModel.from_file(path)
    text = load_text_species(model_dir)
    if text is None and model.weights.get("text_prior"):
        raise UserError(f"{path} weighs the text model's species (text_prior) but "
                        f"{Path(model_dir) / TEXT_SPECIES_FILE} is missing; restore it from "
                        "the model as shipped, or refit both (python -m eval.species_fit "
                        "--write)")
    return SpeciesChoice(model, text)
