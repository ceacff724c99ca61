"""Dataset definitions: where each corpus split lives, its format, types and KB.

The data directory is ``$E2E_LINKER_DATA``, else ``../shared/data`` beside the checkout.
NCBI disease's test split is deliberately absent (it is held out for acceptance checks), and
MedMentions' text is not distributed here: its definition reads the official PubTator file
(``corpus_pubtator.txt[.gz]``) if you put it in place, filtered by the official PMID lists.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import Document, FormatError


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
        from data_tools.formats import read_documents

        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: {self.name} {self.split} is not available here")
        if self.pmids is None:
            yield from read_documents(self.path, self.fmt)
            return
        wanted = {line.strip() for line in self.pmids.read_text().splitlines() if line.strip()}
        yield from (d for d in _read_maybe_gzip(self.path, self.fmt) if d.id in wanted)

    def kb(self):
        from data_tools.kb_loaders import load_kb

        return load_kb(self.kb_spec)


def _read_maybe_gzip(path: Path, fmt: str) -> Iterator[Document]:
    from data_tools.formats import read_documents

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
