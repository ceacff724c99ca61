"""e2e_linker: end-to-end biomedical entity linking.

The public classes, importable from the package itself::

    from e2e_linker import Linker, load_annotator, Normalizer, read_documents

    linker = Linker.load()          # the default model and KB
    linker("Naloxone reverses the hypotensive effect of clonidine.")  # -> [Mention, ...]

Names are resolved on first use (PEP 562), so ``import e2e_linker`` and ``linker --help`` stay
fast: torch and transformers load only when a model class is touched. Where each lives:

=====================  ===================================================================
``collective``         the collective dual encoder: model, settings, annotator, span linking,
                       loading, model dir
``kb_search``          search both commands share: vector cache, search backends, entity and
                       label indexes, packed indexes
``lexical``            text-level steps both commands share: abbreviations, sieves, the sieve
                       stack, name folding, salt-free forms
``compiled_kb``        a KB spec's names, dictionaries and keys built once into the cache
                       folder and memory-mapped by every later start
``normalizer``         the text-only mention normalizer over given spans
``encoder``            text encoder, LoRA adapters, precision and int8 quantization
``training``           collective and triplet training loops and losses
``jobs``               corpus runs: shards, resume, several processes, memory settings
``api``                ``Linker`` and ``Mention``: the Python door, shared by the command line
``commands``           the ``linker`` command line, one module a command
=====================  ===================================================================
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name → module that defines it
_EXPORTS: dict[str, str] = {
    "Linker": "e2e_linker.api",
    "Mention": "e2e_linker.api",
    "Annotator": "e2e_linker.collective.annotator",
    "CollectiveLinker": "e2e_linker.collective.model",
    "LinkerConfig": "e2e_linker.collective.model",
    "load_annotator": "e2e_linker.collective.loading",
    "AnnotateSettings": "e2e_linker.collective.settings",
    "EntityIndex": "e2e_linker.kb_search.entity_index",
    "ConceptSearcher": "e2e_linker.kb_search.concept_search",
    "Normalizer": "e2e_linker.normalizer.normalizer",
    "NormalizeOptions": "e2e_linker.normalizer.normalizer",
    "normalize_documents": "e2e_linker.normalizer.normalizer",
    "load_normalizer_model": "e2e_linker.normalizer.normalizer_dir",
    "load_normalizer": "e2e_linker.normalizer.loading",
    "TextEncoder": "e2e_linker.encoder.text_encoder",
    "score": "e2e_linker.scoring",
    "UserError": "e2e_linker.errors",
    "Document": "data_tools.documents",
    "Annotation": "data_tools.documents",
    "KB": "data_tools.kb",
    "load_kb": "data_tools.registry",
    "load_corpus": "data_tools.registry",
    "read_documents": "data_tools.formats",
    "write_documents": "data_tools.formats",
}
#: exported under another name than the one its module uses
_RENAMED = {"load_normalizer_model": "load_model"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'e2e_linker' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
