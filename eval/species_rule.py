"""Which species a gene mention means: the document-level rule against two simpler ones.

    python -m eval.species_rule [--out eval/results/species_rule]

Why: the gene KB holds human, mouse, fly and yeast genes, and a symbol names a gene in each;
``data_tools.species.preferred_taxa`` decides which species a document's gene mentions
prefer. Each rule is scored by how often the taxon it ranks first is the taxon of the gold
gene (gold gene mentions with one NCBI Gene ID that the ``genes`` KB holds), on the training
splits of the gene corpora and on BioRED dev (decided there; the test splits are not read):

* ``counts`` (the rule used): species by how often the document names them, human on a tie
  and always present;
* ``non-human first``: any species the document names before human;
* ``always human``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from data_tools.registry import apply_type_map, dataset_of, load_corpus, load_kb
from data_tools.species import DEFAULT_TAXON, document_species, preferred_taxa
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "species_rule"
CORPORA = ("gnormplus:train", "nlmgene:train", "biored:dev")


def non_human_first(text: str) -> list[str]:
    """Any species the document names, non-human ones first, then human."""
    named = [t for t in document_species(text) if t != DEFAULT_TAXON]
    return [*named, DEFAULT_TAXON]


RULES = {"counts": preferred_taxa, "non-human first": non_human_first,
         "always human": lambda text: [DEFAULT_TAXON]}


def agreement(spec: str, taxa: dict[str, str]) -> dict:
    """Per rule, the share of gold gene mentions whose taxon the rule ranks first."""
    docs = load_corpus(spec)
    apply_type_map(docs, dataset_of(spec).type_map)
    hits = dict.fromkeys(RULES, 0)
    total = 0
    for doc in docs:
        firsts = {name: rule(doc.text)[0] for name, rule in RULES.items()}
        for ann in doc.annotations:
            ids = [i for i in ann.concept_ids if i in taxa]
            if ann.type != "Gene" or len(ann.concept_ids) != 1 or not ids:
                continue
            total += 1
            for name, first in firsts.items():
                hits[name] += first == taxa[ids[0]]
    return {"gold_gene_mentions": total,
            **{name: round(hits[name] / total, 4) if total else 0.0 for name in RULES}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    taxa = {c.id: c.taxon for c in load_kb("genes") if c.taxon}
    rows = {spec: agreement(spec, taxa) for spec in CORPORA}
    result = {"command": command_line("species_rule", argv), "machine": machine(), "rows": rows}
    lines = ["| corpus | gold gene mentions | " + " | ".join(RULES) + " |",
             "|---|---|" + "---|" * len(RULES)]
    for spec, row in rows.items():
        lines.append(f"| {spec} | {row['gold_gene_mentions']} | "
                     + " | ".join(f"{row[name]:.3f}" for name in RULES) + " |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
