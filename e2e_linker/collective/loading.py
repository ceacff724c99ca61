"""Load a model directory, its KB and its entity index into a ready :class:`Annotator`."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from e2e_linker.collective.annotator import Annotator
from e2e_linker.collective.model_dir import default_model_dir
from e2e_linker.collective.model_kb import mined_name_triples
from e2e_linker.errors import UserError
from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches

#: annotate's lexical steps by default: all of them (eval/results/linking_ablation_fair)
DEFAULT_SIEVES = SieveSwitches()


def pick_device(device: str | None) -> str:
    """``device`` if it can be had (``cuda`` without a GPU is a :class:`UserError`), else CUDA
    when present, else the CPU."""
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but no CUDA device is available")
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def load_annotator(model_dir: str | os.PathLike | None = None, kb: str | None = None,
                   device: str | None = None, threshold: float | None = None,
                   batch_size: int = 16, mode: str = "collective",
                   cache_dir: str | None = None, quantize: bool = False,
                   index_kind: str = "auto",
                   kb_memory_budget_mb: float | None = None,
                   precision: str = "fp32",
                   sieves: SieveSwitches | None = DEFAULT_SIEVES,
                   lexical_gate: float | None = None,
                   propagation_threshold: float | None = None,
                   short_forms: bool | None = None,
                   dictionary_threshold: float | None = None) -> Annotator:
    """Everything ``linker annotate`` needs, with the KB index built or read from the cache.

    ``quantize`` runs the mention encoder with int8 dynamic quantization (CPU; see
    :meth:`CollectiveLinker.quantize_mention_encoder`); ``index_kind`` and
    ``kb_memory_budget_mb`` choose the KB search backend (:mod:`e2e_linker.kb_search.backends`);
    ``precision`` the mention encoder's forward (:mod:`e2e_linker.encoder.precision`);
    ``sieves`` the lexical steps tried on a span the exact-name sieve does not resolve, before
    the dense choice (:class:`~e2e_linker.lexical.sieve_stack.SieveStack`, its training pool
    the model's mined names; None: exact-name sieve and dense search alone);
    ``lexical_gate`` the mention score a span no lexical step links must reach (default: the
    model's; 0: keep every span); ``propagation_threshold``, ``short_forms`` and
    ``dictionary_threshold`` the document- and KB-level detection steps (default: the model's;
    see :class:`Annotator`).
    """
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.lexical.sieves import NameDictionary

    directory = Path(model_dir) if model_dir else default_model_dir()
    model = CollectiveLinker.load(directory, device=pick_device(device))
    knowledge, index = build_entity_index(directory, model, kb, cache_dir, index_kind,
                                          kb_memory_budget_mb)
    if quantize:  # after the index: KB vectors are cached under the unquantized weights' hash
        model.quantize_mention_encoder()
    model.set_precision(precision)
    names = NameDictionary.from_kb(knowledge)
    stack = None
    if sieves is not None and sieves != SieveSwitches.none():
        stack = SieveStack(knowledge, names, mined_name_triples(directory), sieves)
    return Annotator(model, index, names, threshold=threshold, batch_size=batch_size, mode=mode,
                     kb=knowledge, sieves=stack, lexical_gate=lexical_gate,
                     propagation_threshold=propagation_threshold, short_forms=short_forms,
                     dictionary_threshold=dictionary_threshold)


def build_entity_index(directory: Path, model, kb: str | None = None,
                       cache_dir: str | None = None, index_kind: str = "auto",
                       kb_memory_budget_mb: float | None = None, progress: bool = True,
                       use_packed: bool = True):
    """The model directory's KB (its spec, or ``kb``, plus its mined names) and the entity
    index over it, encoded with the model's entity tower or read from the cache: what
    ``linker annotate`` starts with and ``linker kb build`` prepares ahead of time.

    ``use_packed=False`` ignores the model's packed index (``kb build`` encodes every name)."""
    from e2e_linker.collective.model_dir import packed_index_file, read_manifest
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.kb_search.entity_index import EntityIndex

    knowledge = load_model_kb(directory, kb)
    spec = kb or read_manifest(directory).get("kb")
    index = EntityIndex.build(knowledge, model.entity_encoder, cache_dir=cache_dir,
                              progress=progress, kind=index_kind,
                              memory_budget_mb=kb_memory_budget_mb,
                              describe={"kb": spec, "model": str(directory),
                                        "concepts": len(knowledge)},
                              packed=packed_index_file(directory) if use_packed else None)
    return knowledge, index


def pack_kb_index(directory: Path, model, cache_dir: str | None = None, pq_bytes: int = 16,
                  nlist: int | None = None, output: str | os.PathLike | None = None,
                  progress: bool = True) -> Path:
    """Encode the model's whole KB (or read it from the cache), build an IVF-PQ index over it
    and store it packed in the model directory, so that the model's first runs on another
    machine encode only the names their mentions shortlist (``linker kb pack``)."""
    from e2e_linker.collective.model_dir import packed_index_file, read_manifest
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.kb_search.cache import NameVectorCache, default_cache_dir
    from e2e_linker.kb_search.entity_index import kb_names
    from e2e_linker.kb_search.packed_index import pack_vectors

    knowledge = load_model_kb(directory, None)
    names = [name for name, _ in kb_names(knowledge)]
    cache = NameVectorCache(Path(cache_dir or default_cache_dir()), model.entity_encoder)
    vectors, _ = cache.kb_matrix(names, progress=progress,
                                 describe={"kb": read_manifest(directory).get("kb"),
                                           "model": str(directory), "concepts": len(knowledge)})
    return pack_vectors(vectors, names, cache.folder.name,
                        str(read_manifest(directory).get("kb") or ""),
                        Path(output) if output else packed_index_file(directory), pq_bytes,
                        nlist, progress)
