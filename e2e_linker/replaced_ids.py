"""MeSH IDs the corpora cite that the KB's vocabulary has replaced, each with the concept that
replaced it: the table ``linker score`` maps gold and predicted IDs through before comparing.

Why: BC5CDR (2015) cites supplementary concepts that MeSH has since made descriptors
(atorvastatin C065179, now D000069059). A model's mined names carry the current ID
(:func:`e2e_linker.collective.model_kb.current_names`), so it answers D000069059 where the gold
says C065179; an older model answers C065179. Mapped through one table, both match the gold,
and figures before and after the change stay comparable.

The table, :data:`TABLE` beside this module, is the rule of
:func:`~e2e_linker.collective.model_kb.replacements` applied to the IDs of :data:`CORPORA` that
the default model's KB lacks, each named by the corpora's mention texts (the names a model
mines). Its ``#`` lines say so; ``python -m e2e_linker.replaced_ids`` writes it again (after
the vocabulary or the corpora change).
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from e2e_linker.errors import UserError

#: the shipped table: old ID, current ID, the current concept's name (tab-separated)
TABLE = Path(__file__).with_name("replaced_ids.tsv")
#: the corpora whose IDs the table covers: every split here that cites MeSH IDs (gene and
#: species IDs are never replaced: :func:`~e2e_linker.collective.model_kb.replacements`)
CORPORA = ("bc5cdr:train", "bc5cdr:dev", "bc5cdr:test", "ncbi_disease:train",
           "ncbi_disease:dev", "biored:train", "biored:dev")


def read_table(path: str | os.PathLike = TABLE) -> dict[str, str]:
    """Old ID → current ID of a table :func:`write_table` wrote (``#`` lines are its header).

    Why an error names the line: the table is read on every ``linker score``; a damaged one
    must not silently score with half a mapping."""
    table: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) < 2 or not cells[0].strip() or not cells[1].strip():
            raise UserError(f"{path}: line {number} is not 'old ID<TAB>current ID<TAB>name'")
        table[cells[0].strip()] = cells[1].strip()
    return table


@functools.cache
def shipped_table() -> dict[str, str]:
    """The shipped :data:`TABLE`, read once a process."""
    return read_table(TABLE)


def current_id(concept_id: str, table: Mapping[str, str] | None = None) -> str:
    """The ID that replaced ``concept_id`` (in the bare form
    :func:`data_tools.formats.namespaces.comparable_id` gives), itself when nothing did;
    ``table`` defaults to the shipped one."""
    return (shipped_table() if table is None else table).get(concept_id, concept_id)


def table_rows(corpus_specs: Iterable[str], kb_spec: str) -> list[tuple[str, str, str]]:
    """``(old ID, current ID, current name)`` for each ID of the corpora that the KB of
    ``kb_spec`` lacks and has replaced, sorted by old ID."""
    from e2e_linker.collective.model_kb import assemble_kb, mined_names, replacements

    vocabulary = assemble_kb(kb_spec)
    names = mined_names(list(corpus_specs))
    return sorted((old, new, vocabulary.get(new).name)
                  for old, new in replacements(names, vocabulary).items() if new is not None)


def write_table(rows: Iterable[tuple[str, str, str]], path: str | os.PathLike,
                corpus_specs: Iterable[str], kb_spec: str) -> None:
    """The TSV :func:`read_table` reads, with its origin in ``#`` lines."""
    lines = [f"# MeSH IDs that {', '.join(corpus_specs)} cite and the KB '{kb_spec}' lacks, "
             "each with the concept of that KB that replaced it (the one MeSH concept holding "
             "its mention texts as names: e2e_linker.collective.model_kb.replacements); "
             "written by `python -m e2e_linker.replaced_ids`",
             "# old ID\tcurrent ID\tcurrent name"]
    lines += ["\t".join(row) for row in rows]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """Derive the table from :data:`CORPORA` and the default model's KB and write it."""
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.collective.model_dir import read_manifest as read_model_manifest

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=TABLE)
    parser.add_argument("--kb", default=None,
                        help="KB spec (default: the default model's, from its kb_manifest.json)")
    args = parser.parse_args(argv)
    spec = args.kb or read_model_manifest(default_linker_dir())["kb"]
    rows = table_rows(CORPORA, spec)
    write_table(rows, args.output, CORPORA, spec)
    print(f"{len(rows)} replaced IDs -> {args.output}")


if __name__ == "__main__":
    main()
