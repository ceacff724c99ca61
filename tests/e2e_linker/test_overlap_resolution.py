"""Overlap resolution: same choice as the plain greedy rule, and fast on huge documents."""

from __future__ import annotations

import random
import time

import numpy as np

from e2e_linker.collective.annotator import SpanPrediction, resolve_overlaps

_V = np.zeros(1, np.float32)


def _greedy(spans: list[SpanPrediction]) -> list[tuple[int, int, int]]:
    """The definition: most probable first, kept when it overlaps nothing kept so far."""
    kept = []
    for s in sorted(spans, key=lambda x: (x.doc_index, -x.mention_score, x.start, x.end)):
        if all(k[0] != s.doc_index or s.end <= k[1] or s.start >= k[2] for k in kept):
            kept.append((s.doc_index, s.start, s.end))
    return sorted(kept)


def test_matches_the_greedy_definition_on_random_spans():
    for seed in range(200):
        rng = random.Random(seed)
        spans = []
        for _ in range(rng.randint(0, 50)):
            start = rng.randint(0, 40)
            spans.append(SpanPrediction(rng.randint(0, 2), start, start + rng.randint(1, 8),
                                        round(rng.random(), 2), "", _V))
        got = [(s.doc_index, s.start, s.end) for s in resolve_overlaps(spans)]
        assert got == _greedy(spans), seed


def test_a_hundred_thousand_candidates_resolve_in_seconds():
    rng = random.Random(0)
    spans = [SpanPrediction(0, a, a + w, rng.random(), "", _V)
             for a in range(0, 400_000, 4) for w in (3, 7)]
    started = time.monotonic()
    kept = resolve_overlaps(spans)
    assert time.monotonic() - started < 10
    assert all(a.end <= b.start for a, b in zip(kept, kept[1:], strict=False))
