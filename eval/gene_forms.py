"""Gene mentions no exact name links, and the species a mention itself names: gold-span steps.

    python -m eval.gene_forms [--out eval/results/gene_forms]

Why: a gene span is linked by its names only (``lexical_types``): its text's exact KB names,
the document's species first (``GeneRanking.species_first``, eval/results/species_rule), then
the official symbol (eval/results/gene_names). Three kinds of gold gene mention fail there:
those whose text is no KB name as written ("SIRT-1", "TGF-b1", "Nas1p", "JNK1/2": dropped by
the lexical gate in ``linker annotate``), those of a species other than the document's ("the
human UAP1 cDNA" in a yeast paper, "Shh(-/-)" in a paper that names patients more often than
mice), and those whose text is an alias recorded for another species' gene only ("VEGF-A" in
a mouse paper names human VEGFA alone). Each row adds one step of the linker's gene ranking
(:class:`~e2e_linker.collective.gene_ranking.GeneRanking`, ``SpanLinker.genes``) to the one
before, and is scored on every gold gene mention with an NCBI Gene ID by how often
the IDs it links are the gold ones (all of them, in order, as strict scoring compares them),
beside how many it links at all (what the lexical gate would keep). Lexical only: no model;
the exact-name sieve of the ``bc5cdr_genes`` KB without names mined from any corpus, so the
training splits' own mentions do not name their gold genes (rows are comparable across
corpora); the sieve stack's other steps (in-document abbreviations, training mentions) are
not run. Decided on the gene corpora's training splits and BioRED dev; their test splits are
not read.

* ``names, document species`` — :meth:`GeneRanking.name_ranking`, then the document's species;
* ``+ species the mention names`` — :meth:`GeneRanking.mention_species` in place of the
  document's order;
* ``+ written forms`` — :meth:`GeneRanking.name_form_ranking` when no exact name links;
* ``+ coordinated genes`` — :meth:`SpanLinker.composite_ids` when neither does;
* ``+ orthologs`` — a gene of another species than the mention's first is replaced by its
  ortholog of that species (:meth:`GeneRanking.ortholog`);
* ``+ other names in the document`` — among the first species' genes, the one with more of its
  other names written in the document first (:meth:`GeneRanking.named_in_document_first`; the
  linker's).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from data_tools.species import preferred_taxa
from e2e_linker.collective.gene_ranking import document_words
from e2e_linker.collective.span_linking import SpanLinker
from eval.ood_dev import gold_of
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "gene_forms"
CORPORA = ("gnormplus:train", "nlmgene:train", "biored:dev")
KB_SPEC = "bc5cdr_genes"
STEPS = ("names, document species", "+ species the mention names", "+ written forms",
         "+ coordinated genes", "+ orthologs", "+ other names in the document")


def linked_ids(linker: SpanLinker, step: int, text: str, doc_text: str, start: int, end: int,
               preferred: list[str]) -> list[str]:
    """The IDs the first ``step + 1`` steps link a gold gene span to (``[]``: none)."""
    ranked = linker.genes.name_ranking(text, "Gene")
    if not ranked and step >= 2:
        ranked = linker.genes.name_form_ranking(text, "Gene")
    taxa = linker.genes.mention_species(ranked, text, doc_text, start, end, preferred) \
        if step >= 1 else preferred
    if ranked:
        ranked = linker.genes.species_first(ranked, taxa)
        if step >= 5:
            ranked = linker.genes.named_in_document_first(ranked, text, document_words(doc_text))
        first = ranked[0][0]
        if step >= 4 and (other := linker.genes.ortholog(first, taxa[0])) is not None:
            return [other]
        return [first]
    if step >= 3:
        return linker.composite_ids(text, "Gene", taxa) or []
    return []


def agreement(spec: str, linker: SpanLinker) -> dict:
    """Per step, how many gold gene mentions it links, and links to their gold IDs."""
    linked = dict.fromkeys(STEPS, 0)
    right = dict.fromkeys(STEPS, 0)
    total = 0
    for doc in gold_of(spec):
        text = doc.text
        preferred = preferred_taxa(text)
        for ann in doc.annotations:
            if ann.type != "Gene" or not ann.concept_ids:
                continue
            total += 1
            for step, name in enumerate(STEPS):
                ids = linked_ids(linker, step, ann.text, text, ann.start, ann.end, preferred)
                linked[name] += bool(ids)
                right[name] += ids == list(ann.concept_ids)
    return {"gold_gene_mentions": total,
            "linked": linked,
            "right": {name: round(right[name] / total, 4) if total else 0.0 for name in STEPS}}


def main(argv: list[str] | None = None) -> int:
    from e2e_linker.collective.model_kb import open_kb
    from e2e_linker.lexical.sieve_stack import SieveStack, SieveSwitches

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    kb = open_kb(KB_SPEC)
    names = kb.name_dictionary()
    # only the compact keys the written forms are looked up in: no other sieve step runs
    sieves = SieveStack(kb, names, switches=SieveSwitches(False, False, True, True, False),
                        ontology_keys=kb.ontology_keys())
    linker = SpanLinker(None, names, sieves, taxa=kb.taxa(), lexical_types=("Gene",),
                        concepts=kb.concepts)
    rows = {spec: agreement(spec, linker) for spec in CORPORA}
    result = {"command": command_line("gene_forms", argv), "machine": machine(),
              "kb": KB_SPEC, "rows": rows}
    lines = ["| corpus | gold gene mentions | " + " | ".join(STEPS) + " |",
             "|---|---|" + "---|" * len(STEPS)]
    for spec, row in rows.items():
        lines.append(f"| {spec} | {row['gold_gene_mentions']} | " + " | ".join(
            f"{row['right'][name]:.4f} ({row['linked'][name]})" for name in STEPS) + " |")
    lines.append("")
    lines.append("(Share of the gold gene mentions linked to their gold IDs; in brackets, how "
                 "many are linked at all.)")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
