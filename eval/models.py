"""Which model directory an evaluation runs.

Why its own module: several evaluations take the same ``--models`` labels (the shipped model,
a path, or ``git:REV`` — the model directory as committed at REV) and score dev fairly by
rebuilding the model's mined KB names from train only (the shipped KB also holds dev's names);
one spelling of each serves them all.
"""

from __future__ import annotations

import json
from pathlib import Path


def model_source(label: str, scratch: Path) -> Path | None:
    """The model directory a ``--models`` entry names (None: the shipped one); ``git:REV`` is
    extracted from the repository into ``scratch``."""
    if label == "shipped":
        return None
    if not label.startswith("git:"):
        return Path(label)
    import io
    import subprocess
    import tarfile

    from e2e_linker.collective.model_dir import default_linker_dir

    root = Path(__file__).resolve().parent.parent
    folder = default_linker_dir().resolve().relative_to(root)
    archive = subprocess.run(["git", "-C", str(root), "archive", label[4:], str(folder)],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(scratch, filter="data")
    return scratch / folder


def model_with_names_from(corpora: list[str], tmp: Path, source: Path | None = None,
                          keep_packed_index: bool = False) -> Path:
    """The files of the model in ``source`` (default: the shipped one; linked, not copied)
    with names mined from ``corpora`` in place of its own mined names, and a manifest for
    that KB.

    ``keep_packed_index``: link the model's packed index too. It then serves the names it
    holds and the few that differ are searched exactly beside it (``kb_search/packed_index.py``
    ``MAX_CHANGE``), as for a user's grown KB; without it the new name list is searched
    through a full matrix, which costs a whole-KB encode on a cache that lacks one."""
    from e2e_linker.collective.model_dir import (
        EXTRA_NAMES_FILE,
        MANIFEST_FILE,
        PACKED_INDEX_FILE,
        default_linker_dir,
        read_manifest,
    )
    from e2e_linker.collective.model_kb import assemble_model_kb, save_model_kb

    source = (source or default_linker_dir()).resolve()  # links must not be relative
    skip = (EXTRA_NAMES_FILE, MANIFEST_FILE) + (() if keep_packed_index else (PACKED_INDEX_FILE,))
    link_files(source, tmp, skip=skip)
    spec = read_manifest(source)["kb"]
    extra, kb = assemble_model_kb(spec, corpora)
    manifest = save_model_kb(tmp, spec, extra, kb)
    manifest["corpus_names"] = corpora
    (tmp / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    return tmp


def gene_ranking_with_names_from(corpora: list[str], tmp: Path, source: Path | None = None):
    """The gene ranking (:class:`~e2e_linker.collective.gene_ranking.GeneRanking`) of the
    default pipeline's linker over the model in ``source`` (default: the shipped one) with
    names mined from ``corpora`` only (:func:`model_with_names_from`, its files under ``tmp``,
    which must outlive the ranking), and that linker.

    Why: the fits of the gene steps (the species choice, the family model) read their rows'
    features as the linker would on a new document, so a training document's own gold genes
    must not be among the names it looks up."""
    from dataclasses import replace

    from e2e_linker.api import Linker
    from e2e_linker.collective.settings import AnnotateSettings

    (tmp / "model").mkdir()
    fair = model_with_names_from(corpora, tmp / "model", source, keep_packed_index=True)
    linker = Linker.load(settings=replace(AnnotateSettings(), model_dir=str(fair)))
    return linker.annotator.linker.genes, linker


def model_with_kb_of(model: Path, tmp: Path, kb_model: Path | None = None) -> Path:
    """The weights of ``model`` with the KB of ``kb_model`` (default: the shipped one): its
    manifest, mined names and packed index, linked into ``tmp``.

    Why: a model trained with a larger KB (genes) is compared with the shipped one on the
    shipped KB, which this machine can search through the shipped packed index; its own KB
    would first need every name encoded. Linking is then the same for both models, so the
    comparison is of detection and typing."""
    from e2e_linker.collective.model_dir import (
        EXTRA_NAMES_FILE,
        MANIFEST_FILE,
        PACKED_INDEX_FILE,
        default_linker_dir,
    )

    kb_files = (EXTRA_NAMES_FILE, MANIFEST_FILE, PACKED_INDEX_FILE)
    kb_model = (kb_model or default_linker_dir()).resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    link_files(model.resolve(), tmp, skip=kb_files)
    link_files(kb_model, tmp, only=kb_files)
    return tmp


def model_with_packed_index_of(model: Path, tmp: Path, kb_model: Path | None = None) -> Path:
    """``model`` whole, with the packed index of ``kb_model`` (default: the shipped one),
    linked into ``tmp``.

    Why: a model whose own KB adds name-only types (genes,
    :attr:`~e2e_linker.collective.model.LinkerConfig.lexical_types`) searches the same
    Chemical/Disease names as the shipped model, give or take the names each mined from its
    corpora; the shipped packed index then serves it as it serves a user's grown KB (the few
    names that differ searched exactly beside it), where the model's own index would first
    need every name encoded."""
    from e2e_linker.collective.model_dir import PACKED_INDEX_FILE, default_linker_dir

    kb_model = (kb_model or default_linker_dir()).resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    link_files(model.resolve(), tmp, skip=(PACKED_INDEX_FILE,))
    link_files(kb_model, tmp, only=(PACKED_INDEX_FILE,))
    return tmp


def model_with_probe_tag(model: Path | None, tmp: Path, probe: int) -> Path:
    """The model in ``model`` (default: the shipped one), every file linked into ``tmp`` but
    its config, which names ``probe`` more annotation guidelines after its own and makes the
    last of them the default: the same weights, every chunk read with one vocabulary entry
    that no training has touched after [CLS] (:func:`~e2e_linker.collective.guidelines.tag_token`
    of the guideline's position).

    Why: a change to the input that teaches the model nothing; how far it moves the dev table
    is the floor under a comparison of models (:mod:`eval.noise_floor`). Probe ``n`` takes the
    ``n``-th entry past the model's own tags, so each probe is another untrained entry."""
    from e2e_linker.collective.model_dir import CONFIG_FILE, default_linker_dir

    if probe < 1:
        raise ValueError(f"probe numbers start at 1, not {probe}")
    source = (model or default_linker_dir()).resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    link_files(source, tmp, skip=(CONFIG_FILE,))
    config = json.loads((source / CONFIG_FILE).read_text())
    own = list(config.get("guidelines") or [])
    probes = [f"noise_probe_{n}" for n in range(1, probe + 1)]
    config["guidelines"] = own + probes
    config["default_guideline"] = probes[-1]
    (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    return tmp


def link_files(source: Path, target: Path, skip: tuple[str, ...] = (),
               only: tuple[str, ...] | None = None) -> None:
    """Symlink the files of model directory ``source`` into ``target`` (absolute links), all
    but ``skip``, or just those of ``only`` that exist: a model assembled from parts of two
    without copying hundreds of MB."""
    for item in source.iterdir():
        if item.name not in skip and (only is None or item.name in only):
            (target / item.name).symlink_to(item)
