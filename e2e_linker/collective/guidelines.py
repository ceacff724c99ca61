"""Annotation guidelines as tag tokens: one model trained on corpora that disagree.

Why (issue 43): the training corpora annotate the same text differently — NCBI disease keeps
modifiers ("sporadic breast cancers") and BioRED does not; BioRED and the gene corpora call
"Wiskott-Aldrich syndrome protein" a gene where NCBI disease marks the disease inside it. One
model taught all of them at once learns their average. As in AIONER (Luo et al. 2023), a model
may instead be trained with each corpus's guideline named by a tag token right after [CLS]
(:func:`~e2e_linker.collective.chunking.chunk_document`'s ``prefix_ids``), so each guideline is
learnt as itself. At annotate time the pipeline declaration names the guideline
(``guideline = "NAME"`` in a ``pipeline.NAME.toml`` the model ships, chosen with
``linker annotate --pipeline NAME``, the existing switch between guidelines), and the model's
default guideline is read otherwise.

A guideline's tag is one of the tokenizer's unused vocabulary entries (``[unused1]``,
``[unused2]``, … in the order of :attr:`~e2e_linker.collective.model.LinkerConfig.guidelines`),
so the vocabulary and the embedding matrix keep their size and any BERT-vocabulary encoder
(MiniLM, PubMedBERT, SapBERT) takes tags without a resize. A model whose config names no
guidelines reads no tag: its chunks are exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from e2e_linker.errors import UserError


def tag_token(position: int) -> str:
    """The vocabulary entry that tags the guideline at ``position`` of the config's list."""
    return f"[unused{position + 1}]"


def guideline_prefix(tokenizer, guidelines: Sequence[str], default: str | None,
                     chosen: str | None) -> list[int]:
    """The token ids read after [CLS] for ``chosen`` (a pipeline's guideline; None:
    ``default``) among a model's ``guidelines``: one tag id, or none when the model has no
    guidelines.

    Why an error rather than no tag for a name the model lacks: a misspelt guideline would
    otherwise annotate under an input the model never saw in training."""
    if not guidelines:
        if chosen is not None:
            raise UserError(f"the pipeline names the guideline {chosen!r}, but this model "
                            "was trained without guideline tags")
        return []
    name = chosen if chosen is not None else default
    if name is None:
        raise UserError("this model was trained with guideline tags "
                        f"({', '.join(guidelines)}) but names no default guideline: the "
                        "pipeline must name one (guideline = \"NAME\")")
    if name not in guidelines:
        raise UserError(f"unknown guideline {name!r}; this model knows "
                        f"{', '.join(guidelines)}")
    token = tag_token(list(guidelines).index(name))
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise UserError(f"guideline {name!r}: the tokenizer has no {token} entry to tag it "
                        "with (a BERT vocabulary has [unused1] ... [unused99])")
    return [token_id]
