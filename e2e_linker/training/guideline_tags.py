"""The guideline tags' input embeddings, learnt at the heads' learning rate while training.

Why (issue 43): a guideline's tag is a vocabulary row (``[unusedN]``,
:mod:`e2e_linker.collective.guidelines`) that pre-training never updated. As a row of the word
embedding matrix it is trained at the encoder's learning rate, and Adam moves a weight by
about the learning rate a step whatever its gradient: a run of
``configs/multi_corpus_guidelines.yaml`` with the rows left there (2e-5 a step, 390 steps) read
NCBI disease dev and BC5CDR dev the same under every tag — the tags had not become different
inputs (docs/decisions/0041-guideline-tags.md). Here the rows are a
parameter of their own (:class:`GuidelineTags`, in the heads' group of the optimiser), put in
place of the vocabulary rows by a forward hook on the word embeddings while training, and
written back into those rows before a model is saved (:func:`fold_tags`), so the saved encoder
is a plain BERT folder and annotate reads the tags with no hook.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from e2e_linker.collective.model import CollectiveLinker


class GuidelineTags(nn.Module):
    """The tags' embedding rows (one per guideline, in ``model.guidelines`` order) and the
    vocabulary ids they stand for."""

    def __init__(self, rows: torch.Tensor, tag_ids: Sequence[int]):
        super().__init__()
        self.rows = nn.Parameter(rows.detach().clone().float())
        self.register_buffer("tag_ids", torch.tensor(list(tag_ids), dtype=torch.long),
                             persistent=False)

    def substitute(self, input_ids: torch.Tensor, embedded: torch.Tensor) -> torch.Tensor:
        """``embedded`` (the word embeddings of ``input_ids``) with every tag id's row
        replaced by its trainable row."""
        match = input_ids[..., None] == self.tag_ids.to(input_ids.device)  # (B, T, G)
        if not bool(match.any()):
            return embedded
        rows = match.to(embedded.dtype) @ self.rows.to(embedded.dtype)
        return torch.where(match.any(-1, keepdim=True), rows, embedded)


def word_embeddings(model: CollectiveLinker) -> nn.Embedding:
    """The mention encoder's word embedding table (a BERT's ``embeddings.word_embeddings``)."""
    return model.encoder.model.embeddings.word_embeddings


def attach_tags(model: CollectiveLinker, tag_ids: Sequence[int]) -> GuidelineTags:
    """Give ``model`` trainable tag rows (``model.guideline_tags``, starting from the
    vocabulary's rows) that its mention encoder reads in place of the vocabulary's: a
    submodule, so the training state's checkpoints hold them."""
    table = word_embeddings(model)
    tags = GuidelineTags(table.weight[list(tag_ids)], tag_ids)
    model.guideline_tags = tags
    table.register_forward_hook(
        lambda module, inputs, output: tags.substitute(inputs[0], output))
    return tags


def fold_tags(model: CollectiveLinker) -> None:
    """Write the trainable rows into the vocabulary rows they stand for (before a save)."""
    tags = getattr(model, "guideline_tags", None)
    if tags is None:
        return
    with torch.no_grad():
        table = word_embeddings(model).weight
        table[tags.tag_ids.to(table.device)] = tags.rows.to(table.dtype)
