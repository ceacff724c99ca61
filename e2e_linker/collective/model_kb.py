"""The KB a model links against: a base KB spec plus names mined from training corpora.

The mined names are saved inside the model directory (``kb_extra_names.tsv``), so a model
carries what it learned from its corpora while the large ontology files stay where the user
keeps them. The manifest records the base spec and the content hash of the merged KB; loading
a model against a different KB is an error unless the user asks for it (``--kb``).

Every concept ID a mined name carries is one the KB's vocabulary holds (:func:`current_names`):
the corpora cite IDs their vocabulary has since replaced (BC5CDR, of 2015, gives atorvastatin
the supplementary concept C065179, which MeSH has made the descriptor D000069059), and a name
kept under such an ID would answer with an ID that no longer exists, beside the current
concept of the same name. :func:`replacements` is the rule; :mod:`e2e_linker.replaced_ids` applies the same
rule to the corpora's IDs so that ``linker score`` compares old and new IDs as one.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from e2e_linker.collective.model_dir import EXTRA_NAMES_FILE, read_manifest
from e2e_linker.errors import UserError

if TYPE_CHECKING:
    from data_tools.kb import KB


def mined_names(corpus_specs: list[str], vocabulary: KB | None = None) -> KB:
    """A KB of annotation texts from the given corpora (``bc5cdr:train`` style specs), each
    dataset split's types mapped to the model's first (a gene corpus's ``FamilyName``
    mentions are not gene names; see :func:`data_tools.registry.apply_type_map`); a
    multi-concept mention gives its parts only when it is a coordination
    (:func:`~e2e_linker.lexical.text_forms.is_composite`). With ``vocabulary`` (the KB the
    names join), every ID is one it holds (:func:`current_names`); without, the IDs are the
    corpora's as written."""
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
    names = names_from_corpus(docs, coordinated=is_composite)
    return names if vocabulary is None else current_names(names, vocabulary)


def replacements(names: KB, vocabulary: KB) -> dict[str, str | None]:
    """Each concept ID of ``names`` that ``vocabulary`` lacks → the ID of the vocabulary concept
    that replaced it, or None when none did.

    Rule: the concepts of ``vocabulary`` that hold a name of the ID exactly, after the fold of
    the exact-name sieve (:func:`~e2e_linker.lexical.sieves.normalize_name`), are looked up
    name by name; a name held by exactly one concept names it, and the ID is replaced when its
    names name one concept and no other; a name no concept holds may name the one concept whose
    salt it is the base of, as the exact-name sieve reads it (:mod:`e2e_linker.lexical.salt_forms`:
    "quetiapine" → "Quetiapine Fumarate"). Only a MeSH ID is replaced, and only by a MeSH ID:
    MeSH keeps a promoted supplementary concept's name as its descriptor's heading
    (C065179 "atorvastatin" → D000069059 "Atorvastatin"), while a gene symbol names the genes
    of many species, so a shared name is no evidence that one gene ID replaced another (an ID
    of a species the vocabulary lacks, "Sox2" of Xenopus, would become the human gene).
    An ID is "lacked" when ``vocabulary`` cannot resolve it (an alternative ID is held).
    """
    from data_tools.formats.namespaces import BARE_FORMS, MESH
    from e2e_linker.lexical.sieves import normalize_name

    mesh_id = BARE_FORMS[MESH].fullmatch
    lacking = [c.id for c in names if c.id not in vocabulary]
    keys = {cid: {key for name in names.get(cid).all_names() if (key := normalize_name(name))}
            for cid in lacking if mesh_id(cid)}
    wanted = set().union(*keys.values())
    holders: dict[str, set[str]] = defaultdict(set)
    for concept in vocabulary:
        if mesh_id(concept.id):
            for name in concept.all_names():
                key = normalize_name(name)
                if key in wanted:
                    holders[key].add(concept.id)
    # a name no concept holds as written may be the base of a salt the KB files it under
    # ("quetiapine" of "Quetiapine Fumarate"): the names the exact-name sieve itself derives
    # (salt_forms.salt_free_synonyms) name their one concept too
    unheld = wanted - holders.keys()
    if unheld:
        from e2e_linker.lexical.salt_forms import salt_free_synonyms

        for concept_id, name in salt_free_synonyms(vocabulary):
            key = normalize_name(name)
            if key in unheld and mesh_id(concept_id):
                holders[key].add(concept_id)
    out: dict[str, str | None] = {}
    for cid in lacking:
        named = {next(iter(holders[key])) for key in keys.get(cid, ())
                 if len(holders.get(key, ())) == 1}
        out[cid] = named.pop() if len(named) == 1 else None
    return out


def current_names(names: KB, vocabulary: KB) -> KB:
    """``names`` (a KB of mined names) with every concept ID one ``vocabulary`` holds: the names
    of an ID it has replaced move to the replacing concept (:func:`replacements`), those of an
    ID it lacks otherwise are dropped. A composite mention was mined as its parts, each with
    its own ID, so each part is kept, moved or dropped on its own."""
    from data_tools.kb import KB

    replaced = replacements(names, vocabulary)
    out = KB()
    for concept in names:
        cid = replaced.get(concept.id, concept.id)
        if cid is not None:
            out.add(dataclasses.replace(concept, id=cid))
    return out


def assemble_kb(spec: str, extra: KB | None = None) -> KB:
    """``load_kb(spec)`` merged with an optional extra KB (mined names)."""
    from data_tools.registry import load_kb

    try:
        kb = load_kb(spec)
    except FileNotFoundError as exc:
        raise UserError(f"KB '{spec}': {exc}") from exc
    if extra is not None:
        kb = kb.merge(extra)
    return kb


def assemble_model_kb(spec: str, corpus_specs: list[str] | None) -> tuple[KB | None, KB]:
    """``(mined names, KB)`` of a model: the names mined from ``corpus_specs`` with IDs the
    vocabulary of ``spec`` holds (:func:`mined_names`; None when no corpora are given), and
    that vocabulary merged with them (:func:`assemble_kb`) — what training and ``linker
    export`` save beside the model (:func:`save_model_kb`)."""
    vocabulary = assemble_kb(spec)
    if not corpus_specs:
        return None, vocabulary
    extra = mined_names(corpus_specs, vocabulary)
    return extra, vocabulary.merge(extra)


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
