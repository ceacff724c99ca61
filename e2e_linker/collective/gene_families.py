"""Whether a Gene mention is one gene's mention, by logistic models of its name and context:
the family model (a family of genes, fitted on the gene corpora's family annotations) and the
false-alarm model (a span the gene corpora leave unannotated, fitted on the linker's own Gene
spans over their training documents).

Why: a family name ("Notch", "PKC", "Wnt", "TGF-beta", "SNARE") is written like a gene's
name, and the KB often holds it as one gene's alias, so the linker gives it that one gene's
ID. The gene corpora of other groups (GNormPlus, NLM-Gene) annotate such spans as a type of
their own (``FamilyName``) with no gene ID, and most of the gene dev folds' false alarms were
exactly those spans (docs/decisions/0044-gene-families.md). Which names are families is not a
list to keep: those corpora's training files hold 2,000+ family spans beside 12,000 gene
spans, and what tells them apart is learnable — how many genes of one species the name names
and whether it is a gene's official symbol or the stem of one ("Notch" of NOTCH1), a plural,
a digit, the word it ends with, and the words around it ("family", "complex", "signaling").

:func:`family_features` gives those features of one mention; :class:`GeneMentionModel` holds a
logistic model of them (a :class:`~e2e_linker.collective.confidence.ConfidenceModel`'s
weights, fitted by :func:`fit_gene_mention_model`; ``python -m eval.family_fit --write`` writes the
model directory's :data:`GENE_FAMILIES_FILE`); the pipeline step ``gene_families`` drops a
Gene annotation the model finds likelier a family than a gene
(:func:`drop_gene_mentions`).

The false-alarm model reads the same features (:func:`family_features`) with weights fitted
on another label: whether a Gene span the linker writes on the gene corpora's training
documents (GNormPlus, NLM-Gene, BioRED) is a gold Gene mention or overlaps none. What those
corpora leave unannotated though the KB names a gene so is a class that no list covers and
that three groups' guidelines agree on: a cell population or a cell line named by a marker
("LSK cells"), a hormone or drug named like a gene's alias ("PGE2", "asparaginase"), a T-cell
subset ("Th1"). ``python -m eval.false_alarm_fit --write`` writes
:data:`GENE_FALSE_ALARMS_FILE`; the step ``gene_false_alarms`` drops a Gene annotation the
model finds likelier a false alarm than a gene (docs/decisions/0053-gene-false-alarms.md).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from data_tools.documents import Annotation, Document
from data_tools.kb_loaders import GENE_TYPE
from e2e_linker.collective.confidence import ConfidenceModel
from e2e_linker.collective.span_selection import SpanPrediction

if TYPE_CHECKING:  # the pipeline's steps import this module; the facade stays torch-free
    from e2e_linker.collective.gene_ranking import GeneRanking

#: the file in a model directory holding the fitted family model
GENE_FAMILIES_FILE = "gene_families.json"
#: the file in a model directory holding the fitted false-alarm model
GENE_FALSE_ALARMS_FILE = "gene_false_alarms.json"
#: how far around a mention its neighbouring words are looked for, in characters
CONTEXT_CHARS = 30
#: how many characters a gene's official symbol may add to a name that is its stem
#: ("Notch" → NOTCH1, "FOXO" → FOXO3, "Smad" → SMAD4)
STEM_SUFFIX = 3
_WORD = re.compile(r"[A-Za-z0-9]+")


def compact(text: str) -> str:
    """``text`` folded to its lower-case letters and digits ("TGF-beta 1" → "tgfbeta1"):
    :func:`~e2e_linker.lexical.sieves.normalize_name` without its spaces."""
    from e2e_linker.lexical.sieves import normalize_name  # torch-free callers stay so

    return normalize_name(text).replace(" ", "")


def family_features(text: str, doc_text: str, start: int, end: int, genes: GeneRanking
                    ) -> dict[str, float]:
    """The named features of the gene mention ``text`` at ``start``..``end`` of ``doc_text``;
    ``genes`` ranks the name's concepts (and says their taxa and official symbols). Only
    non-zero features are listed.

    The name's genes: how many concepts it names (``log_genes``, ``no_gene``) and how many of
    the one species that has most (``log_same_taxon``: a family names several genes of one
    species, a gene's name several species' orthologs), whether the first gene's official
    symbol is the name (``is_linked_symbol``) or extends it by at most :data:`STEM_SUFFIX`
    characters (``prefix_of_linked``). Its form: a plural (``plural``: a lower-case "s" last
    after a name the KB holds, as in "MMPs"; neither the capital of the acronym "NIS" nor the
    fly gene "echinus" is one), a digit, its length.
    Its words: the last word of the mention and the word before and after it, each a
    feature of its own (``last=``, ``prev=``, ``next=``), whose weights the fit learns."""
    key = compact(text)
    ranked = genes.name_only_ranking(text, GENE_TYPE)
    taxa = genes.taxa or {}
    per_taxon = Counter(taxa[cid] for cid, _ in ranked if cid in taxa)
    words = _WORD.findall(text)
    out = {
        "log_genes": math.log1p(len(ranked)),
        "no_gene": float(not ranked),
        "log_same_taxon": math.log1p(max(per_taxon.values())) if per_taxon else 0.0,
        "plural": float(len(key) > 2 and text.endswith("s")
                        and bool(genes.name_only_ranking(text[:-1], GENE_TYPE))),
        "ends_digit": float(text[-1:].isdigit()),
        "has_digit": float(any(ch.isdigit() for ch in text)),
        "short": float(len(key) <= 3),
        "caps": float(text.isupper()),
        "n_words": min(len(words), 6) / 6,
    }
    first = next((cid for cid, _ in ranked if cid in taxa), None)
    if first is not None:
        symbol = compact(genes.facts(first).name)
        out["is_linked_symbol"] = float(symbol == key)
        out["prefix_of_linked"] = float(symbol != key and symbol.startswith(key)
                                        and len(symbol) - len(key) <= STEM_SUFFIX)
    if words:
        out[f"last={words[-1].lower()}"] = 1.0
    after = _WORD.findall(doc_text[end:end + CONTEXT_CHARS])
    before = _WORD.findall(doc_text[max(0, start - CONTEXT_CHARS):start])
    if after:
        out[f"next={after[0].lower()}"] = 1.0
    if before:
        out[f"prev={before[-1].lower()}"] = 1.0
    return {name: value for name, value in out.items() if value}


@dataclass(frozen=True)
class GeneMentionModel:
    """A fitted model of a Gene mention's :func:`family_features` (the family model or the
    false-alarm model): its probability is that the mention is not one gene's mention — a
    family, or a span the gene corpora leave unannotated."""

    model: ConfidenceModel

    def probability(self, text: str, doc_text: str, start: int, end: int,
                    genes: GeneRanking) -> float:
        """The probability that the gene mention ``text`` at ``start``..``end`` of
        ``doc_text`` is not one gene's mention (as the model was fitted to say)."""
        return self.model.probability(family_features(text, doc_text, start, end, genes))

    def to_json(self) -> dict:
        """What the model's file holds (read back by :func:`load_gene_mention_model`)."""
        return {"formula": "sigmoid(bias + sum(weights[f] * features[f]))",
                "features": "e2e_linker.collective.gene_families.family_features",
                "bias": self.model.bias, "weights": self.model.weights,
                "fitted": self.model.fitted}


def fit_gene_mention_model(rows: Sequence[dict[str, float]], labels: Sequence[float],
                           l2: float = 1.0, fitted: dict | None = None) -> GeneMentionModel:
    """A model fitted on ``rows`` (:func:`family_features` of mentions), each labelled 1 (not
    one gene's mention: a family, a false alarm) or 0 (a gene): logistic regression by L-BFGS
    with an L2 penalty ``l2`` on the weights (the bias unpenalised).

    Why L-BFGS and not the confidence model's Newton steps: the word features make thousands
    of weights, and a Newton step solves a system of that size."""
    import torch

    names = sorted({name for row in rows for name in row})
    column = {name: n for n, name in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    for n, row in enumerate(rows):
        for name, value in row.items():
            x[n, column[name]] = value
    xt = torch.from_numpy(x)
    yt = torch.tensor(list(labels), dtype=torch.float64)
    w = torch.zeros(len(names), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, tolerance_grad=1e-9,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")

    def loss_fn():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            xt @ w + b, yt, reduction="sum") + 0.5 * l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(loss_fn)
    weights = {name: round(float(v), 5) for name, v in zip(names, w.detach().numpy(),
                                                            strict=True)
               if abs(float(v)) >= 1e-5}
    return GeneMentionModel(ConfidenceModel(
        weights=weights, bias=round(float(b.detach()[0]), 5),
        fitted={**(fitted or {}), "rows": len(rows), "positives": int(sum(labels)),
                "l2": l2, "method": "logistic regression, L-BFGS (fit_gene_mention_model)"}))


#: each model file: what messages call it, and the command that fits it
_FITTED_BY = {GENE_FAMILIES_FILE: ("gene family model", "python -m eval.family_fit --write"),
              GENE_FALSE_ALARMS_FILE: ("gene false-alarm model",
                                       "python -m eval.false_alarm_fit --write")}


def load_gene_mention_model(model_dir: str | os.PathLike | None, file_name: str
                            ) -> GeneMentionModel | None:
    """The model in ``model_dir``'s ``file_name`` (:data:`GENE_FAMILIES_FILE`,
    :data:`GENE_FALSE_ALARMS_FILE`), or None when it has none. A damaged file is one
    :class:`~e2e_linker.errors.UserError` naming it and the command that fits it again."""
    if model_dir is None:
        return None
    path = Path(model_dir) / file_name
    if not path.is_file():
        return None
    what, fit = _FITTED_BY[file_name]
    return GeneMentionModel(ConfidenceModel.from_file(path, what, fit))


def drop_gene_mentions(annotations: list[Annotation | None], spans: Sequence[SpanPrediction],
                       docs: Sequence[Document], genes: GeneRanking, model: GeneMentionModel,
                       threshold: float) -> None:
    """Each Gene annotation (one per span; None: a span dropped) whose probability under
    ``model`` (:meth:`GeneMentionModel.probability`: not one gene's mention) is at least
    ``threshold`` is dropped (set to None), in place."""
    texts: dict[int, str] = {}
    for k, (ann, span) in enumerate(zip(annotations, spans, strict=True)):
        if ann is None or ann.type != GENE_TYPE:
            continue
        if span.doc_index not in texts:
            texts[span.doc_index] = docs[span.doc_index].text
        if model.probability(ann.text, texts[span.doc_index], ann.start, ann.end,
                             genes) >= threshold:
            annotations[k] = None
