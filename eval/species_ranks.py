"""Where the species corpora's gold organisms sit in the taxonomy: how many of each corpus's
gold Species mentions are linked to a taxon above a species (a genus, family, order...), to a
species or a taxon below one, or to a taxon the taxonomy slim lacks.

    python -m eval.species_ranks [--corpora linnaeus:train s800:train biored:train biored:dev]
                                 [--out eval/results/dev_table/higher_taxa/gold_ranks]

Why: the ``higher_taxa`` step drops a Species annotation linked to a taxon above a species
(docs/decisions/0048-higher-taxa.md); that is a guideline's choice, and this table is the
evidence that the guidelines we read make it — on their training files, not only on the dev
folds the step was measured on. "Above" is read from the tree as the step reads it
(:func:`data_tools.kb_loaders.taxa_above_species`).
"""

from __future__ import annotations

import argparse
from collections import Counter

from data_tools.kb_loaders import species_id, taxa_above_species
from data_tools.registry import load_corpus, taxonomy_files
from eval.reporting import command_line, machine, write_results

#: the corpus types that are organisms (BioRED's, the species corpora's)
ORGANISM_TYPES = ("OrganismTaxon", "Species")
#: the KB whose taxonomy is read (the default model's)
SPEC = "bc5cdr_genes_species"


def rank_counts(corpus: str, above: frozenset[str], known: frozenset[str]) -> Counter:
    """Per class (``above``, ``species or below``, ``not in the taxonomy``), how many of the
    corpus's gold organism mentions' IDs fall in it (a mention with several IDs counts each)."""
    counts: Counter = Counter()
    for doc in load_corpus(corpus):
        for ann in doc.annotations:
            if ann.type not in ORGANISM_TYPES:
                continue
            for cid in ann.concept_ids:
                taxon = species_id(cid.split(":", 1)[1] if cid.lower().startswith("ncbitaxon:")
                                   else cid)
                counts["above" if taxon in above else
                       "species or below" if taxon in known else "not in the taxonomy"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+",
                        default=["linnaeus:train", "s800:train", "biored:train", "biored:dev"])
    parser.add_argument("--out", default="eval/results/dev_table/higher_taxa/gold_ranks")
    args = parser.parse_args(argv)
    from data_tools.kb_loaders import read_taxonomy_obo

    (obo,) = taxonomy_files(SPEC)
    above = taxa_above_species(str(obo))
    known = frozenset(species_id(t.id) for t in read_taxonomy_obo(obo))
    rows = []
    for corpus in args.corpora:
        counts = rank_counts(corpus, above, known)
        rows.append({"corpus": corpus, "ids": sum(counts.values()), **counts})
    classes = ("above", "species or below", "not in the taxonomy")
    table = (f"Gold organism IDs by place in the taxonomy ({machine()}; the taxonomy of KB "
             f"`{SPEC}`; eval/species_ranks.py)\n\n"
             "| corpus | IDs | " + " | ".join(classes) + " | share above |\n"
             "|---|---|" + "---|" * len(classes) + "---|\n")
    for row in rows:
        share = row.get("above", 0) / row["ids"] if row["ids"] else 0.0
        table += (f"| {row['corpus']} | {row['ids']} | "
                  + " | ".join(str(row.get(c, 0)) for c in classes) + f" | {share:.3f} |\n")
    write_results(args.out, {"command": command_line("species_ranks", argv),
                             "machine": machine(), "kb": SPEC, "rows": rows}, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
