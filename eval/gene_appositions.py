"""How often a gene mention written right before a bracketed gene mention names the same gene,
in the training files' gold annotations (no model).

    python -m eval.gene_appositions [--out DIR]

Why: the steps ``gene_appositions`` and ``gene_apposition_links``
(docs/decisions/0047-gene-appositions.md) give a name written right before a bracketed Gene
span ("Psoriasin (S100A7)") the gene the bracket is linked to. Whether that holds as a class,
not only on the dev abstracts that prompted it, is a question the gold annotations of the
training splits answer: for every pair of gold mentions where one ends right before a pair of
round brackets the other fills exactly (:func:`e2e_linker.collective.gene_appositions.bracketed`),
both of the corpus's gene type, the pair counts as agreeing when the two share an ID; pairs
where either text is a short form the document's abbreviation scan defines (a Schwartz–Hearst
definition, which 0039's rules already handle) are counted apart.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from data_tools.registry import get_dataset
from e2e_linker.collective.gene_appositions import bracketed
from e2e_linker.lexical.abbreviations import DocumentAbbreviations
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "dev_table" / "gene_appositions" / "train_gold"
#: training splits and the gene type their gold uses (dev folds and test sets left out)
SPLITS = (("biored", "train", "GeneOrGeneProduct"), ("gnormplus", "fit", "Gene"),
          ("nlmgene", "fit", "Gene"))


def pair_counts(docs, gene_type: str) -> Counter:
    """``(defined, agree)`` → pairs: ``defined`` whether either text is a defined short form,
    ``agree`` whether the two mentions share an ID."""
    counts: Counter = Counter()
    for doc in docs:
        text = doc.text
        genes = [a for a in doc.annotations if a.type == gene_type]
        ending = {}
        for a in genes:
            ending.setdefault(a.end, a)
        defined = DocumentAbbreviations.scan(text).definitions
        for symbol in genes:
            end = bracketed(text, symbol.start, symbol.end)
            name = ending.get(end) if end is not None else None
            if name is None:
                continue
            agree = bool(set(name.concept_ids) & set(symbol.concept_ids))
            counts[(symbol.text in defined or name.text in defined, agree)] += 1
    return counts


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    rows = []
    for name, split, gene_type in SPLITS:
        counts = pair_counts(list(get_dataset(name, split).documents()), gene_type)
        rows.append({"corpus": f"{name}:{split}",
                     "apposition_agree": counts[(False, True)],
                     "apposition_differ": counts[(False, False)],
                     "definition_agree": counts[(True, True)],
                     "definition_differ": counts[(True, False)]})
    result = {"command": command_line("gene_appositions", argv), "machine": machine(),
              "rows": rows}
    lines = ["Gene mention right before a bracketed gene mention, training gold "
             "(eval/gene_appositions.py)", "",
             "| corpus | no definition: same ID | no definition: other ID | "
             "defined short form: same ID | defined short form: other ID |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['corpus']} | {r['apposition_agree']} | {r['apposition_differ']} | "
              f"{r['definition_agree']} | {r['definition_differ']} |" for r in rows]
    lines += ["", f"Command: `{result['command']}`"]
    write_results(args.out, result, "\n".join(lines) + "\n")
    return result


if __name__ == "__main__":
    main()
