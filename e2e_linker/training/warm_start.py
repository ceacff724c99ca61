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
                   target: torch.nn.Linear, target_types: Sequence[str],
                   share: float = 0.0) -> list[str]:
    """Copy the type head's weight row and bias of every type ``target_types`` shares with
    ``source_types`` (by name, wherever it sits in either list); returns those types. Rows of
    the other target types keep their values. With ``share`` above 0 a shared row is mixed
    instead: ``share · target + (1 − share) · source`` (:func:`interpolate`)."""
    where = {t: n for n, t in enumerate(source_types)}
    copied = []
    with torch.no_grad():
        for n, t in enumerate(target_types):
            if t in where:
                for mine, theirs in ((target.weight, source.weight),
                                     (target.bias, source.bias)):
                    if share:
                        mine[n].copy_(share * mine[n].float()
                                      + (1.0 - share) * theirs[where[t]].float())
                    else:
                        mine[n].copy_(theirs[where[t]])
                copied.append(t)
    return copied


def entity_tower(config: LinkerConfig) -> str:
    """The named entity tower a frozen, unsaved entity encoder is re-loaded from."""
    return config.entity_encoder or config.encoder


def matching_changes(old: LinkerConfig, config: LinkerConfig) -> list[str]:
    """The :data:`MATCHING_KEYS` settings (and the frozen entity tower) in which ``config``
    differs from ``old``: a model built with any of them changed is not the same
    architecture."""
    changed = [k for k in MATCHING_KEYS if getattr(old, k) != getattr(config, k)]
    if config.freeze_entity_encoder and not config.shared_encoder \
            and entity_tower(old) != entity_tower(config):
        changed.append("entity_encoder")
    return changed


def interpolate(tuned: CollectiveLinker, start: CollectiveLinker, share: float) -> list[str]:
    """Move ``tuned`` back toward the model it was trained from, in place: every weight becomes
    ``share · tuned + (1 − share) · start`` (encoders, span scorer, and the type-head rows of
    the types both know, matched by name; a type only ``tuned`` knows keeps its row). Returns
    the types mixed.

    Why: fine-tuning the shipped model on a new corpus mixture moves it toward the new text
    and away from what it did well; the straight line between the two often keeps most of
    both (weight-space ensembling, "WiSE-FT", Wortsman et al. 2022). ``share`` is chosen on
    the widened dev table (docs/decisions/0037-interpolated-model.md).
    """
    if not 0.0 <= share <= 1.0:
        raise UserError(f"the run's share must be between 0 and 1, not {share}")
    changed = matching_changes(start.config, tuned.config)
    if changed:
        raise UserError(f"cannot interpolate: model settings {', '.join(changed)} differ "
                        "between the run and the model it is mixed with")
    pairs = [(tuned.encoder, start.encoder), (tuned.span_scorer, start.span_scorer)]
    if tuned.entity_encoder is not tuned.encoder:
        pairs.append((tuned.entity_encoder, start.entity_encoder))
    with torch.no_grad():
        for mine, theirs in pairs:
            other = theirs.state_dict()
            for key, value in mine.state_dict().items():
                if key not in other or other[key].shape != value.shape:
                    raise UserError(f"cannot interpolate: weight {key} differs in shape "
                                    "between the two models")
                if value.is_floating_point():
                    value.copy_(share * value.float()
                                + (1.0 - share) * other[key].float().to(value.device))
    return copy_type_rows(start.type_head, start.config.types, tuned.type_head,
                          tuned.config.types, share)


def guideline_mismatch(tuned: LinkerConfig, start: LinkerConfig) -> str | None:
    """What a mix of ``tuned`` and ``start`` (:func:`interpolate`) reads that one of them never
    trained with, in words; None when both name the same guidelines.

    Why a warning and not a refusal: the mix keeps ``tuned``'s config, so it reads
    ``tuned``'s default guideline tag (:mod:`e2e_linker.collective.guidelines`) with weights
    that are partly ``start``'s, which never read it — a model that moves on the dev table
    by the tag token alone (docs/decisions/0001-dev-table-decides.md, the noise probe), yet
    a mix that is otherwise sound and was measured so (docs/decisions/0041-guideline-tags.md)."""
    if list(tuned.guidelines) == list(start.guidelines):
        return None
    if not tuned.guidelines:
        return ("the model mixed in was trained with guideline tags "
                f"({', '.join(start.guidelines)}) and the run without: the mix reads no tag, "
                "so its share of that model's weights reads text as they never did")
    named = f"guideline tags ({', '.join(tuned.guidelines)}; default " \
        f"{tuned.default_guideline})"
    if not start.guidelines:
        return (f"the run reads {named} and the model mixed in was trained without: the mix "
                f"reads the run's default tag, which that model's share of the weights never "
                "saw; compare it with the model as it is read with an untrained tag "
                "(python -m eval.noise_floor), not as it ships")
    return (f"the run reads {named} and the model mixed in others "
            f"({', '.join(start.guidelines)}): the mix reads the run's tags, by position")


def warm_start(config: LinkerConfig, directory: str | os.PathLike) -> CollectiveLinker:
    """A model with ``config``'s settings and types whose encoders, span scorer and known
    type-head rows come from the model directory ``directory``.

    Refused (UserError) when a :data:`MATCHING_KEYS` setting differs, or when the frozen entity
    tower is another named model: the saved run re-loads that tower by name, so it must be the
    one the starting model's KB vectors and training used.
    """
    old = CollectiveLinker.load(directory)
    changed = matching_changes(old.config, config)
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
