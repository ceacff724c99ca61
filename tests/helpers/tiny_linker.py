"""A complete tiny linker model directory (random 1-layer BERT + TSV KB) for CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.synthetic import CHEMICALS, DISEASES
from tests.helpers.tiny import tiny_encoder_dir


def tiny_linker_dir(root: Path, threshold: float = 0.0,
                    filler_concepts: int = 0, typed: bool = False) -> tuple[Path, Path]:
    """``(model directory, KB file)``; loads in about a second, annotates hundreds of
    documents per second, so CLI runs can be tested end to end on real corpora.

    ``filler_concepts`` adds that many made-up concepts to the KB (a KB large enough for a
    product-quantised index needs a few thousand names). ``typed``: the KB spec is a saved KB
    (``kb:``) instead of the ``tsv:`` file; both give the concepts' types and synonyms."""
    from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
    from e2e_linker.collective.model_kb import assemble_kb, save_model_kb

    root.mkdir(parents=True, exist_ok=True)
    kb_file = root / "kb.tsv"
    rows = [f"{cid}\t{names[0]}\t{'|'.join(names[1:])}\t{t}"
            for table, t in ((CHEMICALS, "Chemical"), (DISEASES, "Disease"))
            for cid, names in table.items()]
    rows += [f"F{i:05d}\tfiller compound {i}\t\t{'Chemical' if i % 2 else 'Disease'}"
             for i in range(filler_concepts)]
    kb_file.write_text("\n".join(rows) + "\n")
    spec = f"tsv:{kb_file}"
    if typed:
        from data_tools.kb_loaders import load_tsv

        load_tsv(kb_file, synonyms_col=2, type_col=3).save(root / "kb.typed")
        spec = f"kb:{root / 'kb.typed'}"
    tiny = tiny_encoder_dir(root / "tiny")
    config = LinkerConfig(encoder=str(tiny), max_length=64, shared_encoder=False,
                          entity_encoder=str(tiny), freeze_entity_encoder=True,
                          entity_pooling="mean", kb=spec, threshold=threshold)
    model = CollectiveLinker.from_encoder(config)
    out = root / "model"
    kb = assemble_kb(spec)
    model.save(out, kb_manifest=save_model_kb(out, spec, None, kb))
    return out, kb_file


def tiny_annotator(directory: Path, threshold: float = 0.0):
    """An :class:`Annotator` over a random tiny BERT and the synthetic KB, built in memory
    (no cache). Threshold 0: every valid span is a candidate, so overlap resolution and linking
    run on every span."""
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
    from e2e_linker.collective.settings import AnnotateSettings
    from e2e_linker.kb_search.entity_index import EntityIndex
    from e2e_linker.lexical.sieves import NameDictionary
    from tests.helpers.synthetic import synthetic_kb

    encoder = tiny_encoder_dir(directory / "bert")
    model = CollectiveLinker.from_encoder(LinkerConfig(encoder=str(encoder), max_length=64))
    kb = synthetic_kb()
    index = EntityIndex.build(kb, model.entity_encoder, cache_dir=False, progress=False)
    return Annotator.from_parts(model, index, NameDictionary.from_kb(kb),
                                AnnotateSettings(threshold=threshold, batch_size=3), kb=kb)


@contextmanager
def pipeline_changed(annotator, disable=(), overrides=()) -> Iterator[None]:
    """``annotator`` with its pipeline changed (``--disable``, ``--set``) for a ``with``
    block."""
    saved = annotator.pipeline
    annotator.pipeline = saved.changed(disable, (), overrides)
    try:
        yield
    finally:
        annotator.pipeline = saved


@contextmanager
def settings_changed(annotator, **changes) -> Iterator[None]:
    """``annotator`` with some settings replaced for the duration of a ``with`` block."""
    from dataclasses import replace

    saved = annotator.settings
    annotator.settings = replace(saved, **changes)
    try:
        yield
    finally:
        annotator.settings = saved
