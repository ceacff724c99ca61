"""One confidence per annotation: an estimate, in [0, 1], that the span and its concept are
both right (strict correctness: span, type and concept ID).

Why one number: an annotation carries a mention score (the mention head's probability), a link
score (a raw dense similarity, absent for exact and sieve links and for genes) and the step
that decided its concept (the ``link_method`` infon); none of them alone says how far to trust
the annotation. The confidence is a logistic model over features of those three and the type:

    confidence = sigmoid(bias + Σ weight_f · feature_f)

with the features of :func:`features_of` (the mention score's logit; whether a link score
exists and its value over :data:`LINK_SCALE`; the deciding step, one-hot over the fitted list,
any other step → ``method=other``; the type, one-hot likewise). The weights are fitted on dev
predictions labelled by strict correctness (``python -m eval.ood_dev --confidence-fit``;
docs/results.md, "One confidence", says on what and how well it is calibrated) and stored in
the model directory's :data:`CONFIDENCE_FILE`, read when the model loads. A model without the
file gets :data:`FALLBACK`: the mention score alone (weight 1 on its logit), never null.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from data_tools.documents import Annotation
from data_tools.formats.mentions_jsonl import CONFIDENCE, LINK_METHOD
from e2e_linker.errors import UserError

#: the file in a model directory holding the fitted confidence model
CONFIDENCE_FILE = "confidence.json"
#: link scores are divided by this, so their weight reads on the scale of the other features
LINK_SCALE = 10.0
#: mention scores are clipped this far from 0 and 1 before their logit
EPSILON = 1e-4
#: the one-hot value for a deciding step or type outside the fitted lists
OTHER = "other"


def logit(p: float) -> float:
    """The log-odds of ``p``, clipped to [:data:`EPSILON`, 1 - :data:`EPSILON`]."""
    p = min(max(p, EPSILON), 1 - EPSILON)
    return math.log(p / (1 - p))


def features_of(ann: Annotation, methods: Sequence[str] = (),
                types: Sequence[str] = ()) -> dict[str, float]:
    """The named features of ``ann`` (see the module docstring): ``mention_logit`` (0 when the
    annotation has no mention score: even odds), ``has_link_score``, ``link_score`` (its value
    over :data:`LINK_SCALE`, 0 when absent), ``method=<step>`` for the deciding step when it is
    in ``methods`` (else ``method=other``), ``type=<type>`` likewise over ``types``. Only
    features that are not 0 are listed."""
    out = {"mention_logit": logit(ann.mention_score) if ann.mention_score is not None else 0.0}
    if ann.link_score is not None:
        out["has_link_score"] = 1.0
        out["link_score"] = ann.link_score / LINK_SCALE
    method = ann.infons.get(LINK_METHOD) or "none"
    out[f"method={method if method in methods else OTHER}"] = 1.0
    out[f"type={ann.type if ann.type in types else OTHER}"] = 1.0
    return {k: v for k, v in out.items() if v}


@dataclass(frozen=True)
class ConfidenceModel:
    """A fitted (or the fallback) logistic confidence: ``weights`` by feature name (a feature
    without a weight counts 0), the one-hot lists ``methods`` and ``types``, and ``fitted``,
    how it was fitted (data, regularisation, held-out figures), kept for the reader."""

    weights: dict[str, float]
    bias: float = 0.0
    methods: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    fitted: dict = field(default_factory=dict)

    def __call__(self, ann: Annotation) -> float:
        """``ann``'s confidence, in [0, 1]."""
        return self.probability(features_of(ann, self.methods, self.types))

    def probability(self, features: dict[str, float]) -> float:
        """The model's value, in [0, 1], on named ``features`` (a model fitted on other
        features than :func:`features_of`'s, such as the normalizer's:
        :mod:`e2e_linker.normalizer.confidence`)."""
        z = self.score(features)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def score(self, features: dict[str, float]) -> float:
        """The weighted sum before the sigmoid (``bias + Σ weight_f · feature_f``): what a
        ranking compares, with no rounding to 1.0 of large values."""
        return self.bias + sum(self.weights.get(name, 0.0) * value
                               for name, value in features.items())

    def to_json(self) -> dict:
        """What :data:`CONFIDENCE_FILE` holds (read back by :meth:`from_json`)."""
        return {"formula": "sigmoid(bias + sum(weights[f] * features[f]))",
                "features": "e2e_linker.collective.confidence.features_of",
                "link_scale": LINK_SCALE, "bias": self.bias, "weights": self.weights,
                "methods": list(self.methods), "types": list(self.types),
                "fitted": self.fitted}

    @classmethod
    def from_json(cls, data: dict) -> ConfidenceModel:
        return cls(weights={k: float(v) for k, v in data["weights"].items()},
                   bias=float(data.get("bias", 0.0)), methods=tuple(data.get("methods", ())),
                   types=tuple(data.get("types", ())), fitted=data.get("fitted", {}))

    @classmethod
    def from_file(cls, path: str | os.PathLike, what: str = "model's file",
                  refit: str = "") -> ConfidenceModel:
        """The fitted model a model directory's JSON file holds (``confidence.json``,
        ``species_choice.json``, ``gene_families.json``); ``what`` names it in the error and
        ``refit`` is the command that fits it again. Why one error: a hand-edited or damaged
        file would otherwise stop the load with a traceback (a JSON decode error, a missing
        ``weights`` key) that says neither which file nor what is wrong with it."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError(f"{path}: cannot read it as JSON ({exc})") from None
        try:
            if not isinstance(data, dict) or not isinstance(data.get("weights"), dict):
                raise TypeError("expected an object with a 'weights' object")
            return cls.from_json(data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"{path}: not a fitted {what} ({exc}); restore it from the model "
                            f"as shipped, or refit it{f' ({refit})' if refit else ''}") from None


#: a model without :data:`CONFIDENCE_FILE`: the mention score itself (sigmoid of its logit)
FALLBACK = ConfidenceModel(weights={"mention_logit": 1.0},
                           fitted={"data": "none: the mention score alone"})


def load_confidence(model_dir: str | os.PathLike | None) -> ConfidenceModel:
    """The confidence model of the model in ``model_dir``: its :data:`CONFIDENCE_FILE`, or
    :data:`FALLBACK` when there is none (no directory, or a model fitted before the file
    existed)."""
    if model_dir is None:
        return FALLBACK
    path = Path(model_dir) / CONFIDENCE_FILE
    if not path.is_file():
        return FALLBACK
    return ConfidenceModel.from_file(path)


def feature_matrix(rows: Sequence[dict[str, float]], names: Sequence[str]) -> np.ndarray:
    """Rows of named features as a matrix, a column for each of ``names`` in order (a feature
    a row lacks: 0): what a fit over named features (:func:`fit_confidence`, the species
    choice's) solves on."""
    return np.array([[row.get(name, 0.0) for name in names] for row in rows],
                    dtype=float).reshape(len(rows), len(names))


def fit_confidence(features: Sequence[dict[str, float]], correct: Sequence[bool],
                   methods: Sequence[str], types: Sequence[str], l2: float = 1.0,
                   fitted: dict | None = None) -> ConfidenceModel:
    """The logistic model of ``correct`` on ``features`` (as :func:`features_of` gives them,
    with the same ``methods`` and ``types``), by Newton's method on the log-likelihood with an
    L2 penalty ``l2`` on the weights (not the bias): a few thousand rows and a dozen features
    converge in a few steps. ``fitted`` is recorded as is."""
    names = sorted({name for row in features for name in row})
    x = np.hstack([feature_matrix(features, names), np.ones((len(features), 1))])
    y = np.asarray(correct, dtype=float)
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return ConfidenceModel(weights={n: round(float(v), 6) for n, v in zip(names, w[:-1],
                                                                           strict=True)},
                           bias=round(float(w[-1]), 6), methods=tuple(methods),
                           types=tuple(types), fitted=fitted or {})


def assign_confidence(annotations: Iterable[Annotation | None],
                      model: ConfidenceModel) -> None:
    """Write each annotation's confidence into its :data:`~data_tools.formats.mentions_jsonl.CONFIDENCE`
    infon (4 places, as the
    scores), in place (None: one a pipeline step dropped)."""
    for ann in annotations:
        if ann is not None:
            ann.infons[CONFIDENCE] = f"{model(ann):.4f}"

