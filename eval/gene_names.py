"""Which gene an exact name means: the order in which the linker tries a name's genes.

    python -m eval.gene_names [--out eval/results/gene_names]

Why: with genes linked by name only (``lexical_types``, as the gene model links them), a gene
span takes the first of the genes its text names exactly, after the species rule
(:meth:`e2e_linker.collective.gene_ranking.GeneRanking.species_first`). Within a species an
alias is still shared ("p62": SQSTM1 and GTF2H1), and the KB's order is no reason. Each order
is scored on the gold gene mentions whose text names the gold gene exactly, by how often
its first gene is a gold one (lexical only: no model; the training splits of the gene corpora and BioRED dev — decided
there; the test splits are not read). The KB is the multi-corpus model's: ``bc5cdr_genes``
plus the gene names mined from the gene corpora's training splits, so a gene of a species
the vocabularies lack (rat) is a concept too, named by its training mentions — and on those
training splits every gold mention names its gold gene, so their rows are optimistic (BioRED
dev, never mined, is not):

* ``KB order`` — :meth:`GeneRanking.name_ranking` without the KB's concepts;
* ``primary name first`` — the genes whose primary name (official symbol) the text is first,
  a mined concept's name (a training mention) not counted;
* ``most names first`` — the genes with more names first;
* ``primary name, then most names`` (the linker's) — :meth:`GeneRanking.name_ranking` with
  the KB's concepts.

The columns also say how many gold mentions no gene name matches (``no name``) or whose gold
gene is not among the genes their text names (``other genes named``): what no order fixes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from data_tools.kb_loaders import CORPUS_SOURCE
from data_tools.species import preferred_taxa
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.lexical.sieves import normalize_name
from eval.ood_dev import gold_of
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "gene_names"
CORPORA = ("gnormplus:train", "nlmgene:train", "biored:dev")
KB_SPEC = "bc5cdr_genes"
#: the corpora whose gene names the KB adds (as configs/multi_corpus.yaml's ``kb_corpus_names``)
MINED_FROM = ("gnormplus:train", "nlmgene:train")


def orders(kb, names) -> dict[str, Callable[[str, list[str]], list[str]]]:
    """Each order of a name's genes, as ``(text, genes in KB order) → genes``, before the
    species rule (which keeps each species' genes in the order given); the last is the
    linker's own, :meth:`GeneRanking.name_ranking` over the KB's concepts."""
    own = GeneRanking(names, concepts=kb.concepts)

    def n_names(cid: str) -> int:
        return -len(kb.concepts[cid].all_names())

    def primary(text: str, cid: str) -> bool:
        concept = kb.concepts[cid]
        return concept.source == CORPUS_SOURCE or \
            normalize_name(concept.name) != normalize_name(text)

    return {
        "KB order": lambda text, found: found,
        "primary name first": lambda text, found: sorted(
            found, key=lambda cid: primary(text, cid)),
        "most names first": lambda text, found: sorted(found, key=n_names),
        "primary name, then most names": lambda text, found: [
            cid for cid, _ in own.name_ranking(text, "Gene")],
    }


def agreement(spec: str, kb, names) -> dict:
    """Per order, the share of named gold gene mentions whose first gene is a gold one."""
    taxa = kb.taxa()
    plain = GeneRanking(names, taxa=taxa)
    rules = orders(kb, names)
    hits = dict.fromkeys(rules, 0)
    counts = {"gold_gene_mentions": 0, "no_name": 0, "other_genes_named": 0, "named": 0,
              "ambiguous": 0}
    for doc in gold_of(spec):
        preferred = None
        for ann in doc.annotations:
            if ann.type != "Gene" or not ann.concept_ids:
                continue
            counts["gold_gene_mentions"] += 1
            found = [cid for cid, _ in plain.name_ranking(ann.text, "Gene")]
            if not found:
                counts["no_name"] += 1
                continue
            gold = set(ann.concept_ids)
            if not gold & set(found):
                counts["other_genes_named"] += 1
                continue
            counts["named"] += 1
            counts["ambiguous"] += len(found) > 1
            preferred = preferred or preferred_taxa(doc.text)
            for name, order in rules.items():
                ranked = [(cid, 0.0) for cid in order(ann.text, found)]
                first = plain.species_first(ranked, preferred)[0][0]
                hits[name] += first in gold
    named = counts["named"]
    return {**counts, **{name: round(hits[name] / named, 4) if named else 0.0
                         for name in rules}}


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from e2e_linker.collective.model_kb import mined_names, open_kb
    from e2e_linker.compiled_kb.kb_view import CompiledKB
    from e2e_linker.lexical.sieves import NameDictionary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        extra = Path(tmp) / "mined.tsv"
        mined_names(list(MINED_FROM)).save(extra)
        kb = open_kb(KB_SPEC, extra)
    names = kb.name_dictionary() if isinstance(kb, CompiledKB) and kb.has_sieves \
        else NameDictionary.from_kb(kb)
    rows = {spec: agreement(spec, kb, names) for spec in CORPORA}
    rules = list(orders(kb, names))
    result = {"command": command_line("gene_names", argv), "machine": machine(),
              "kb": KB_SPEC, "mined_from": list(MINED_FROM), "rows": rows}
    lines = ["| corpus | gold gene mentions | no name | other genes named | named (ambiguous) | "
             + " | ".join(rules) + " |", "|---|---|---|---|---|" + "---|" * len(rules)]
    for spec, row in rows.items():
        lines.append(f"| {spec} | {row['gold_gene_mentions']} | {row['no_name']} | "
                     f"{row['other_genes_named']} | {row['named']} ({row['ambiguous']}) | "
                     + " | ".join(f"{row[name]:.3f}" for name in rules) + " |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
