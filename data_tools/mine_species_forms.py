"""Mine the written forms of species that the training corpora annotate and the vocabularies
lack ("patients", "women" → human), into ``data_tools/species_forms.tsv``.

Why mined, and why from these corpora: NCBI Taxonomy and UniProt name a species by its
scientific and common names ("Homo sapiens", "human", "mouse"), but the corpora also annotate
the words papers use for the organism studied: BioRED links "patients", "women" and "men" to
human (9606) and "mice" and "murine" to mouse (10090). Which words, and to which taxon, is a
corpus convention, so it is read from the training corpora's annotations, never from an
evaluation split: ``linnaeus:fit``, ``s800:fit`` (the species corpora without their dev
folds, which are measured) and ``biored:train`` (BioRED dev is never read).

Rule (:func:`mine_species_forms`): a written form (case-folded) is kept for a taxon when at
least ``min_docs`` documents annotate it with that taxon, that taxon takes at least
``min_share`` of the documents annotating the form, the KB has the taxon, and the form is not
already one of the taxon's names. Run ``python -m data_tools.mine_species_forms`` to write
the file again.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from data_tools.documents import Document
from data_tools.kb import KB
from data_tools.kb_loaders import SPECIES_FORMS, TAXON_PREFIX

#: the training corpora the forms are mined from (never an evaluation split)
TRAINING_CORPORA = ("linnaeus:fit", "s800:fit", "biored:train")
#: the corpus types of species mentions (the species corpora's and BioRED's)
SPECIES_MENTION_TYPES = frozenset({"Species", "OrganismTaxon"})
MIN_DOCS = 3
MIN_SHARE = 0.8


def mine_species_forms(documents: Iterable[Document], kb: KB, min_docs: int = MIN_DOCS,
                       min_share: float = MIN_SHARE) -> list[tuple[str, str, int]]:
    """``(form, taxon ID, documents)`` for each written form the documents annotate with a
    taxon often and consistently enough that the KB lacks as a name of that taxon (the rule
    in the module docstring); the form as most often written, sorted by documents then form.

    Why documents, not mentions: a paper repeats its organism; three papers agreeing is the
    convention, one paper saying "patients" forty times is not more evidence than one."""
    docs_of: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    spelling: dict[str, Counter[str]] = defaultdict(Counter)
    for doc in documents:
        for ann in doc.annotations:
            if ann.type not in SPECIES_MENTION_TYPES or len(ann.concept_ids) != 1:
                continue
            cid = ann.concept_ids[0]
            if not cid.startswith(TAXON_PREFIX):
                cid = TAXON_PREFIX + cid
            form = " ".join(ann.text.split())
            docs_of[form.lower()][cid].add(doc.id)
            spelling[form.lower()][form] += 1
    out = []
    for key, by_taxon in docs_of.items():
        total = len(set().union(*by_taxon.values()))
        cid, docs = max(by_taxon.items(), key=lambda item: (len(item[1]), item[0]))
        concept = kb.get(cid)
        if len(docs) < min_docs or len(docs) < min_share * total or concept is None:
            continue
        if key in {n.lower() for n in concept.all_names()}:
            continue
        out.append((spelling[key].most_common(1)[0][0], concept.id, len(docs)))
    return sorted(out, key=lambda row: (-row[2], row[0].lower()))


def write_species_forms(rows: Iterable[tuple[str, str, int]], path: Path,
                        corpora: Iterable[str] = TRAINING_CORPORA) -> None:
    """The TSV :func:`data_tools.kb_loaders.read_species_forms` reads, with its provenance in
    ``#`` lines."""
    lines = [f"# written forms of species annotated in {', '.join(corpora)} (training folds "
             "only; never biored:dev, linnaeus:dev, s800:dev) that NCBI Taxonomy (taxslim) "
             "and UniProt lack for that taxon",
             f"# rule: >= {MIN_DOCS} documents annotate the form with the taxon, which takes "
             f">= {MIN_SHARE:.0%} of the form's documents; written by "
             "`python -m data_tools.mine_species_forms`",
             "# form\ttaxon\tdocuments"]
    lines += [f"{form}\t{cid}\t{docs}" for form, cid, docs in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """Mine the training corpora against the ``species`` preset (without mined forms) and
    write the forms file."""
    from data_tools.kb_loaders import load_species
    from data_tools.registry import SPECIES_OBO, SPECIES_UNIPROT, load_corpus, vocab_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=SPECIES_FORMS)
    args = parser.parse_args(argv)
    kb = load_species(vocab_path(*SPECIES_OBO), vocab_path(*SPECIES_UNIPROT), forms_path=None)
    docs = [doc for spec in TRAINING_CORPORA for doc in load_corpus(spec)]
    rows = mine_species_forms(docs, kb)
    write_species_forms(rows, args.output)
    print(f"{len(rows)} forms from {len(docs)} documents → {args.output}")


if __name__ == "__main__":
    main()
