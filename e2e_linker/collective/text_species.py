"""Which species a document's genes belong to, read from its words by a fitted text model.

Why: the species a gene mention means is, for 93–97 % of gold gene mentions, the species most
of its document's genes belong to (docs/decisions/0040-learned-species.md), yet the evidence
the species choice weighs — Species spans, cue words, how gene symbols are written — names
the experiment's species only part of the time. The rest is in the vocabulary of the study:
cell lines (4T1 is a mouse line, IEC-6 a rat one, HeLa a human one), tissues, techniques and
disease models. No list of those is kept here; a multinomial logistic model over the
document's words, fitted on the gene corpora's training documents (the share of each
document's gold genes of each species group as its target), learns which words say which
species. Its probability of a candidate taxon's group is one feature of the species choice
(:func:`~e2e_linker.collective.species_choice.taxon_features`, ``text_prior``), which weighs it
against the rest: it is evidence, not a decision (docs/decisions/0042-text-species.md).

The model is a plain JSON file in the model directory (:data:`TEXT_SPECIES_FILE`): its
vocabulary, inverse document frequencies, one weight row per word and a bias per group.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data_tools.species import FLY, HUMAN, MOUSE, RAT, YEAST, YEAST_S288C
from e2e_linker.errors import UserError

#: the file in a model directory holding the fitted text model
TEXT_SPECIES_FILE = "text_species.json"
#: the species groups the model tells apart; a taxon not listed is ``other``
GROUP_OF_TAXON = {HUMAN: "human", MOUSE: "mouse", RAT: "rat", FLY: "fly",
                  YEAST_S288C: "yeast", YEAST: "yeast"}
GROUPS = ("human", "mouse", "rat", "fly", "yeast", "other")
#: a word of the text: letters, digits, hyphens (cell lines such as "IEC-6" stay whole)
_WORD = re.compile(r"[^\W_](?:[\w-]*[^\W_])?")


def taxon_group(taxon: str) -> str:
    """The group of ``taxon`` that the model gives a probability for."""
    return GROUP_OF_TAXON.get(taxon, "other")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` the model reads."""
    return [w.lower() for w in _WORD.findall(text)]


def weighted_words(text_words: Sequence[str], vocabulary: dict[str, int], idf: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(rows, values) of the known words among ``text_words``: sublinear term frequency
    times idf, scaled to unit length (empty when none is known).

    Why one function: the fit builds its training matrix with it and the model reads a new
    document with it, so the two cannot drift apart."""
    counts = Counter(w for w in text_words if w in vocabulary)
    if not counts:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.array([vocabulary[w] for w in counts], dtype=np.int64)
    values = np.array([1.0 + math.log(c) for c in counts.values()]) * idf[rows]
    return rows, values / np.linalg.norm(values)


@dataclass(frozen=True)
class TextSpecies:
    """A fitted text model: ``vocabulary`` (word → row), ``idf`` (one per word),
    ``weights`` (words × :data:`GROUPS`), ``bias`` (one per group)."""

    vocabulary: dict[str, int]
    idf: np.ndarray
    weights: np.ndarray
    bias: np.ndarray
    fitted: dict

    def features(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) of ``text``'s known words: sublinear term frequency times idf,
        scaled to unit length."""
        return weighted_words(words(text), self.vocabulary, self.idf)

    def probabilities(self, text: str) -> dict[str, float]:
        """The probability of each group (:data:`GROUPS`) that ``text``'s genes belong to."""
        rows, values = self.features(text)
        logits = self.bias + values @ self.weights[rows]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return {group: float(v) for group, v in zip(GROUPS, p, strict=True)}

    def to_json(self) -> dict:
        """What :data:`TEXT_SPECIES_FILE` holds (read back by :meth:`from_json`)."""
        ordered = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {"formula": "softmax(bias + x @ weights), x: (1 + log count) * idf of each "
                           "known word, unit length",
                "words": "e2e_linker.collective.text_species.words",
                "groups": list(GROUPS), "vocabulary": ordered,
                "idf": [round(float(v), 5) for v in self.idf],
                "weights": [[round(float(v), 5) for v in row] for row in self.weights],
                "bias": [round(float(v), 5) for v in self.bias], "fitted": self.fitted}

    @classmethod
    def from_json(cls, data: dict) -> TextSpecies:
        if list(data["groups"]) != list(GROUPS):
            raise ValueError(f"groups {data['groups']} are not {list(GROUPS)}")
        vocabulary = {w: n for n, w in enumerate(data["vocabulary"])}
        idf = np.asarray(data["idf"], dtype=np.float64)
        weights = np.asarray(data["weights"], dtype=np.float64).reshape(-1, len(GROUPS))
        bias = np.asarray(data["bias"], dtype=np.float64)
        if not (len(vocabulary) == len(idf) == len(weights)) or bias.shape != (len(GROUPS),):
            raise ValueError("vocabulary, idf, weights and bias do not match in size")
        return cls(vocabulary, idf, weights, bias, data.get("fitted", {}))


def fit_text_species(texts: Sequence[str], targets: Sequence[dict[str, float]],
                     l2: float = 1.0, min_documents: int = 2,
                     fitted: dict | None = None) -> TextSpecies:
    """The text model fitted on ``texts``, each with its ``targets`` (group → share of the
    document's gold genes): the words of at least ``min_documents`` documents, smoothed idf,
    and a multinomial logistic model by L-BFGS on the soft targets' cross-entropy with an L2
    penalty ``l2`` on the word weights (the bias unpenalised).

    Why soft targets: a document with human and mouse genes says both; its majority alone
    would teach the model that its words mean one species."""
    import torch

    docs = [words(t) for t in texts]
    df = Counter(w for d in docs for w in set(d))
    kept = sorted(w for w, n in df.items() if n >= min_documents)
    vocabulary = {w: n for n, w in enumerate(kept)}
    n = len(docs)
    idf = np.array([math.log((1 + n) / (1 + df[w])) + 1.0 for w in kept])
    x = np.zeros((n, len(kept)))
    for row, d in enumerate(docs):
        cols, values = weighted_words(d, vocabulary, idf)
        x[row, cols] = values
    y = np.array([[t.get(g, 0.0) for g in GROUPS] for t in targets])
    y /= y.sum(axis=1, keepdims=True)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    w = torch.zeros(len(kept), len(GROUPS), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(len(GROUPS), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, tolerance_grad=1e-9,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")

    def loss_fn():
        opt.zero_grad()
        logp = torch.log_softmax(xt @ w + b, dim=1)
        loss = -(yt * logp).sum() + 0.5 * l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(loss_fn)
    return TextSpecies(vocabulary, idf, w.detach().numpy().copy(), b.detach().numpy().copy(),
                       {**(fitted or {}), "documents": n, "words": len(kept), "l2": l2,
                        "min_documents": min_documents})


def load_text_species(model_dir: str | os.PathLike | None) -> TextSpecies | None:
    """The text model of the model in ``model_dir`` (its :data:`TEXT_SPECIES_FILE`), or None
    when it has none. A damaged file is one :class:`UserError` naming it."""
    if model_dir is None:
        return None
    path = Path(model_dir) / TEXT_SPECIES_FILE
    if not path.is_file():
        return None
    try:
        return TextSpecies.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
            ValueError) as exc:
        raise UserError(f"{path}: not a fitted text species model ({exc}); restore it from "
                        "the model as shipped, or refit it (python -m eval.species_fit "
                        "--write)") from None
