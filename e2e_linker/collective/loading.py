"""Load a model directory, its KB and its entity index into a ready :class:`Annotator`."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch

from e2e_linker.collective.annotator import Annotator
from e2e_linker.collective.model_dir import default_linker_dir
from e2e_linker.collective.model_kb import mined_name_triples
from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.collective.span_linking import TextLinker
from e2e_linker.errors import UserError
from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches

#: annotate's lexical steps by default: all of them (docs/decisions/0018-sieve-stack.md)
DEFAULT_SIEVES = SieveSwitches()


def pick_device(device: str | None) -> str:
    """``device`` if it can be had (``cuda`` without a GPU is a :class:`UserError`), else CUDA
    when present, else the CPU."""
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but no CUDA device is available")
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def load_annotator(settings: AnnotateSettings | None = None,
                   text_linker: TextLinker | None = None) -> Annotator:
    """Everything ``linker annotate`` needs, with the KB index built or read from the cache,
    built complete from one :class:`AnnotateSettings` (see ``linker annotate --help`` for each
    option): a pipeline with the ``sieve_stack`` step gets the lexical steps tried on a span
    the exact-name sieve does not resolve, before the dense choice
    (:class:`~e2e_linker.lexical.sieve_stack.SieveStack`, its training pool the model's mined
    names); ``text_linker`` relinks every kept span by its text (``--linking text``)."""
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.compiled_kb.kb_view import CompiledKB
    from e2e_linker.lexical.sieves import NameDictionary

    settings = settings or AnnotateSettings()
    directory = Path(settings.model_dir) if settings.model_dir else default_linker_dir()
    with collection_paused():
        model = CollectiveLinker.load(directory, device=pick_device(settings.device))
        settings = settings.for_model(model.config)
        knowledge, index = build_entity_index(directory, model, settings.kb, settings.cache_dir,
                                              settings.index_kind, settings.kb_memory_budget_mb,
                                              lexical_types=settings.lexical_types)
        if settings.quantize:  # after the index: KB vectors are cached under the unquantized hash
            model.quantize_mention_encoder()
        model.set_precision(settings.precision)
        # the compiled KB holds the exact-name dictionary and the compact keys: mapped, not built
        compiled = isinstance(knowledge, CompiledKB) and knowledge.has_sieves
        names = knowledge.name_dictionary() if compiled else NameDictionary.from_kb(knowledge)
        stack = None
        pipeline = settings.resolved_pipeline(model.config, directory)
        if pipeline.has("sieve_stack"):
            stack = SieveStack(knowledge, names, mined_name_triples(directory), DEFAULT_SIEVES,
                               ontology_keys=knowledge.ontology_keys()
                               if compiled and DEFAULT_SIEVES.salt_free else None)
        return Annotator.from_parts(model, index, names, settings, sieves=stack, kb=knowledge,
                                    text_linker=text_linker, pipeline=pipeline)


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cycle collector off for a block that makes millions of objects that live on.

    Why: loading makes the name lists of the entity index (744k names for ``bc5cdr``) and the
    model's tensors; every full collection during the load walks all of them and frees
    nothing (about a second of a start on this project's 2-core machine,
    docs/decisions/0035-startup.md). The collector is turned back on as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_entity_index(directory: Path, model, kb: str | None = None,
                       cache_dir: str | None = None, index_kind: str = "auto",
                       kb_memory_budget_mb: float | None = None, progress: bool = True,
                       use_packed: bool = True, lexical_types: Sequence[str] | None = None):
    """The model directory's KB (its spec, or ``kb``, plus its mined names) and the entity
    index over it, encoded with the model's entity tower or read from the cache: what
    ``linker annotate`` starts with and ``linker kb build`` prepares ahead of time.

    ``use_packed=False`` ignores the model's packed index (``kb build`` encodes every name).
    Concepts of ``lexical_types`` (default: the model's) are left out of the index: they are
    linked by name only (:attr:`~e2e_linker.collective.model.LinkerConfig.lexical_types`)."""
    from e2e_linker.collective.model_dir import packed_index_file, read_manifest
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.kb_search.entity_index import EntityIndex

    knowledge = load_model_kb(directory, kb, cache_dir)
    own = read_manifest(directory).get("kb")
    spec = kb or own
    packed = packed_index_file(directory) if use_packed else None
    cheaper = own_kb_alternative(knowledge, directory, model.config.types) \
        if kb and kb != own and packed is not None and packed.is_file() else None
    index = EntityIndex.build(knowledge, model.entity_encoder, cache_dir=cache_dir,
                              progress=progress, kind=index_kind,
                              memory_budget_mb=kb_memory_budget_mb,
                              describe={"kb": spec, "model": str(directory),
                                        "concepts": len(knowledge)},
                              packed=packed,
                              exclude_types=model.config.lexical_types if lexical_types is None
                              else lexical_types, alternative=cheaper)
    return knowledge, index


def own_kb_alternative(knowledge, directory: Path, model_types: Sequence[str]) -> str:
    """What ``linker annotate`` can run instead of encoding a ``--kb`` of the user's: the
    model's own KB, which starts at once from its packed index, narrowed with ``--types`` to
    the types ``knowledge`` links — its concepts' types, the concepts of the model's mined
    names apart (they join any KB) — when those are fewer than the model's. Said in the line
    that announces an encode of a minute or more
    (:mod:`e2e_linker.kb_search.encode_estimate`)."""
    mined = {cid for _, cid, _ in mined_name_triples(directory)}
    _, cids, types = knowledge.name_columns()
    held = {part for cid, type_ in zip(cids, types, strict=True) if cid not in mined
            for part in type_.split("|")}
    narrowed = [t for t in model_types if t in held]
    if narrowed and len(narrowed) < len(model_types):
        return (f"`--types {','.join(narrowed)}` without `--kb` links these types against the "
                "model's own KB, which starts at once from its packed index")
    return "without `--kb` the model's own KB starts at once from its packed index"


def pack_linker_index(directory: Path, model, cache_dir: str | None = None, pq_bytes: int = 16,
                  nlist: int | None = None, output: str | os.PathLike | None = None,
                  progress: bool = True) -> Path:
    """Encode the model's whole KB (or read it from the cache), build an IVF-PQ index over it
    and store it packed in the model directory, so that the model's first runs on another
    machine encode only the names their mentions shortlist (``linker kb pack``)."""
    from e2e_linker.collective.model_dir import packed_index_file, read_manifest
    from e2e_linker.collective.model_kb import load_model_kb
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.entity_index import index_name_columns
    from e2e_linker.kb_search.packed_index import pack_vectors

    knowledge = load_model_kb(directory, None, cache_dir)
    names, _, _ = index_name_columns(knowledge, model.config.lexical_types)
    cache = VectorStore(cache_dir, model.entity_encoder)
    vectors = cache.matrix(names, progress=progress,
                           describe={"kb": read_manifest(directory).get("kb"),
                                     "model": str(directory), "concepts": len(knowledge)})
    return pack_vectors(vectors, names, cache.fingerprint,
                        str(read_manifest(directory).get("kb") or ""),
                        Path(output) if output else packed_index_file(directory), pq_bytes,
                        nlist, progress)
