"""Mini-batches for batch-hard triplet training: P concepts × K texts, every anchor with a positive.

Why: batch-hard mining only works for an anchor whose concept has another text in the same
batch. Random batches over hundreds of thousands of concepts almost never contain two names of
one concept, so we build batches from *chunks*: each concept's texts are shuffled and cut into
chunks of at most K (never 1), and P chunks form a batch. One epoch visits every text once.

A concept with a single text (common in MEDIC and MeSH supplementary records) gets a chunk
holding that text twice: dropout makes the two encodings differ, and the anchor still meets the
batch's negatives. ``singletons="drop"`` leaves such concepts out instead.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence


def concept_chunks(labels: Sequence[int], names_per_concept: int, rng: random.Random,
                   singletons: str = "duplicate") -> list[list[int]]:
    """Indices grouped by label and cut into chunks of 2..K indices (see module docstring)."""
    if names_per_concept < 2:
        raise ValueError("names_per_concept (K) must be at least 2: an anchor needs a positive")
    if singletons not in ("duplicate", "drop"):
        raise ValueError("singletons must be 'duplicate' or 'drop'")
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    chunks: list[list[int]] = []
    for label in sorted(groups):
        members = groups[label]
        if len(members) == 1:
            if singletons == "duplicate":
                chunks.append([members[0], members[0]])
            continue
        members = members[:]
        rng.shuffle(members)
        for start in range(0, len(members), names_per_concept):
            chunk = members[start:start + names_per_concept]
            if len(chunk) == 1:
                # top up with another text of the same concept so the anchor has a positive
                chunk.append(rng.choice([m for m in members if m != chunk[0]]))
            chunks.append(chunk)
    return chunks


def pk_batches(labels: Sequence[int], concepts_per_batch: int, names_per_concept: int,
               seed: int = 0, singletons: str = "duplicate") -> list[list[int]]:
    """One epoch of batches: lists of indices into ``labels``, P distinct concepts × ≤K texts.

    Deterministic for a given ``seed`` (use ``seed + epoch`` for a new order each epoch).
    Every index of a batch shares its label with at least one other position of that batch,
    and every batch holds at least two concepts (a chunk that cannot join a batch with other
    concepts — the tail of a very large concept — is folded into the previous batch).
    """
    if concepts_per_batch < 2:
        raise ValueError("concepts_per_batch (P) must be at least 2: an anchor needs a negative")
    rng = random.Random(seed)
    chunks = concept_chunks(labels, names_per_concept, rng, singletons)
    rng.shuffle(chunks)
    pending = deque(chunks)
    batches: list[list[int]] = []
    while pending:
        taken: list[list[int]] = []
        in_batch: set[int] = set()
        skipped: list[list[int]] = []
        while pending and len(taken) < concepts_per_batch:
            chunk = pending.popleft()
            label = int(labels[chunk[0]])
            if label in in_batch:
                skipped.append(chunk)  # same concept twice: keep it for the next batch
                continue
            in_batch.add(label)
            taken.append(chunk)
        pending.extendleft(reversed(skipped))
        indices = [i for chunk in taken for i in chunk]
        if len(taken) == 1 and batches:
            batches[-1].extend(indices)  # a lone concept would have no negative
        else:
            batches.append(indices)
    return batches
