"""The KB a model links against: a base KB spec plus names mined from training corpora.

The mined names are saved inside the model directory (``kb_extra_names.tsv``), so a model
carries what it learned from its corpora while the large ontology files stay where the user
keeps them. The manifest records the base spec and the content hash of the merged KB; loading
a model against a different KB is an error unless the user asks for it (``--kb``).
"""

from __future__ import annotations

import os
from pathlib import Path

from e2e_linker.collective.model_dir import EXTRA_NAMES_FILE, read_manifest
from e2e_linker.errors import UserError


def mined_names(corpus_specs: list[str]):
    """A KB of annotation texts from the given corpora (``bc5cdr:train`` style specs), each
    dataset split's types mapped to the model's first (a gene corpus's ``FamilyName``
    mentions are not gene names; see :func:`data_tools.registry.apply_type_map`); a
    multi-concept mention gives its parts only when it is a coordination
    (:func:`~e2e_linker.lexical.text_forms.is_composite`)."""
    from data_tools.kb_loaders import names_from_corpus
    from data_tools.registry import apply_type_map, dataset_of, load_corpus
    from e2e_linker.lexical.text_forms import is_composite

    docs = []
    for spec in corpus_specs:
        part = load_corpus(spec)
        dataset = dataset_of(spec)
        if dataset is not None and dataset.type_map:
            apply_type_map(part, dataset.type_map)
        docs += part
    return names_from_corpus(docs, coordinated=is_composite)


def assemble_kb(spec: str, extra=None):
    """``load_kb(spec)`` merged with an optional extra KB (mined names)."""
    from data_tools.registry import load_kb

    try:
        kb = load_kb(spec)
    except FileNotFoundError as exc:
        raise UserError(f"KB '{spec}': {exc}") from exc
    if extra is not None:
        kb = kb.merge(extra)
    return kb


def save_model_kb(directory: str | os.PathLike, spec: str, extra, kb) -> dict:
    """Write the mined names and return the manifest for :func:`CollectiveLinker.save`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if extra is not None:
        extra.save(directory / EXTRA_NAMES_FILE)
    return {
        "kb": spec,
        "extra_names": EXTRA_NAMES_FILE if extra is not None else None,
        "kb_hash": kb.content_hash(),
        "concepts": len(kb),
        "names": len(kb.names()),
    }


def mined_name_triples(directory: str | os.PathLike) -> list[tuple[str, str, str]]:
    """The model's mined names as ``(text, concept_id, type)`` triples: annotate's pool of
    training mentions for the sieve stack (empty for a model without mined names)."""
    from data_tools.kb import KB

    directory = Path(directory)
    name = read_manifest(directory).get("extra_names")
    if not name:
        return []
    return [(text, c.id, c.type) for c in KB.load(directory / name) for text in c.all_names()]


def open_kb(spec: str, extra_names: str | os.PathLike | None = None,
            cache_dir: str | os.PathLike | None = None, progress: bool = True,
            sieves: bool = True):
    """The KB of ``spec`` plus the mined names saved in ``extra_names`` (a :meth:`KB.save`
    file), as annotate and normalize read it: the compiled KB in the cache folder
    (:mod:`e2e_linker.compiled_kb.store`; compiled on first use, with annotate's sieve
    dictionaries unless ``sieves`` is off), or, with the store's bypass set,
    :func:`assemble_kb` of the files."""
    from data_tools.kb import KB
    from e2e_linker.compiled_kb.store import bypassed, open_compiled

    def build():
        return assemble_kb(spec, KB.load(extra_names) if extra_names else None)

    if bypassed():
        return build()
    try:
        return open_compiled(spec, build, Path(extra_names) if extra_names else None,
                             cache_dir, progress, sieves)
    except FileNotFoundError as exc:
        raise UserError(f"KB '{spec}': {exc}") from exc


def load_model_kb(directory: str | os.PathLike, spec: str | None = None,
                  cache_dir: str | os.PathLike | None = None):
    """The KB for a model directory: its manifest's spec (or ``spec``) plus its mined names
    (:func:`open_kb`: compiled, from the cache folder ``cache_dir`` or the default)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    base = spec or manifest.get("kb")
    if not base:
        raise UserError(f"{directory}: the model records no KB; pass --kb")
    extra = directory / manifest["extra_names"] if manifest.get("extra_names") else None
    kb = open_kb(base, extra, cache_dir)
    if spec is None and manifest.get("kb_hash") and kb.content_hash() != manifest["kb_hash"]:
        raise UserError(
            f"{directory}: KB '{base}' on this machine differs from the one the model was built "
            f"with (hash {kb.content_hash()[:12]} != {manifest['kb_hash'][:12]}); "
            "pass --kb explicitly to use it anyway"
        )
    return kb
