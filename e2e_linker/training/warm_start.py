"""Warm start: a trained collective model as the starting point of a new training run.

Why: the shipped Chemical/Disease model already detects and links those types well; training
it further on more corpora (and a new type such as Gene) costs a few epochs instead of the
whole schedule from the pretrained encoder. The encoders and the span scorer are taken as they
are; the type head is matched by type name, so a type the old model knew keeps its row (and
bias) and a new one starts from a fresh initialisation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
from e2e_linker.errors import UserError

#: model settings that must be the starting model's: they decide the shape of the mention
#: head and how its encoders were built (pooling, name length, which tower is trained)
MATCHING_KEYS = ("mention_head", "shared_encoder", "freeze_entity_encoder", "entity_pooling",
                 "name_max_length")


def copy_type_rows(source: torch.nn.Linear, source_types: Sequence[str],
                   target: torch.nn.Linear, target_types: Sequence[str]) -> list[str]:
    """Copy the type head's weight row and bias of every type ``target_types`` shares with
    ``source_types`` (by name, wherever it sits in either list); returns the copied types.
    Rows of the other target types keep their (fresh) values."""
    where = {t: n for n, t in enumerate(source_types)}
    copied = []
    with torch.no_grad():
        for n, t in enumerate(target_types):
            if t in where:
                target.weight[n].copy_(source.weight[where[t]])
                target.bias[n].copy_(source.bias[where[t]])
                copied.append(t)
    return copied


def entity_tower(config: LinkerConfig) -> str:
    """The named entity tower a frozen, unsaved entity encoder is re-loaded from."""
    return config.entity_encoder or config.encoder


def warm_start(config: LinkerConfig, directory: str | os.PathLike) -> CollectiveLinker:
    """A model with ``config``'s settings and types whose encoders, span scorer and known
    type-head rows come from the model directory ``directory``.

    Refused (UserError) when a :data:`MATCHING_KEYS` setting differs, or when the frozen entity
    tower is another named model: the saved run re-loads that tower by name, so it must be the
    one the starting model's KB vectors and training used.
    """
    old = CollectiveLinker.load(directory)
    changed = [k for k in MATCHING_KEYS if getattr(old.config, k) != getattr(config, k)]
    if config.freeze_entity_encoder and not config.shared_encoder \
            and entity_tower(old.config) != entity_tower(config):
        changed.append("entity_encoder")
    if changed:
        raise UserError(f"init_from {directory}: model settings {', '.join(changed)} differ "
                        "from that model's; a warm start keeps its architecture (set them as "
                        "in its linker_config.json)")
    entity = None if config.shared_encoder else old.entity_encoder
    model = CollectiveLinker(config, old.encoder, entity)
    model.apply_freeze()
    model.span_scorer.load_state_dict(old.span_scorer.state_dict())
    copy_type_rows(old.type_head, old.config.types, model.type_head, config.types)
    return model.float().train()
