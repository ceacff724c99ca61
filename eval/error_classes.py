"""Where the dev table's errors are: every gold mention of a corpus's scored types put in one
class, every prediction that meets no gold mention counted, with examples of each.

    python -m eval.error_classes [--corpora bc5cdr:dev ncbi_disease:dev biored:dev
                                 gnormplus:dev nlmgene:dev] [--gate-off-too] [--examples N]
                                 [model and pipeline options as eval.ood_dev]
                                 [--out eval/results/dev_table/error_classes]

Why: the choices of issue 43 start from which errors are common — a short form whose long form
was missed, a disease span never proposed, the right gene symbol in the wrong species — and
each session listed them with a scratch script of its own, so the counts in its notes could
not be rerun. This module links exactly as the dev table does (:func:`eval.ood_dev.dev_linker`)
and classes each gold mention (:func:`gold_classes`):

* ``right``: a prediction with its span, type and IDs (as the strict scorer compares them);
* ``wrong_id``: its span and type, other IDs — for genes split by what the predicted gene is
  (:func:`gene_id_class`): ``one_of_several`` (the gold lists several genes, the prediction
  one of them), ``same_species`` (another gene of the gold gene's species), ``other_species``
  — itself split by where the species went wrong (:func:`main_taxon`): ``:document`` when
  most of the document's predicted genes are of another species than most of its gold genes
  (the document's species was chosen wrong), ``:mention`` when the document's was right and
  this mention's was not; for any type, ``other_vocabulary`` when the gold and the predicted
  IDs, both given, come from different vocabularies of one KB (:func:`vocabularies`: MEDIC's
  OMIM and MeSH concepts) — often a guideline's choice between two concepts for one mention
  rather than a linking error;
* ``other_type``: its span with another type;
* ``boundary``: no prediction of its span, one of its type overlapping it;
* ``overlapped_other_type``: only predictions of other types overlap it;
* ``missed``: no prediction overlaps it. With ``--gate-off-too`` the corpus is annotated a
  second time with ``lexical_gate`` off, and a miss is split into ``missed_gated`` (that run
  has a prediction of its span: a candidate the gate dropped) and ``missed_never_kept``.

Predictions of the scored types that overlap no gold mention of any type are ``disjoint``;
those overlapping only gold mentions of unscored types are ``on_unscored_gold``. With
``--gate-off-too``, the gate-off run's links that dense search alone made are counted, right
and all, by mention-score band and by how much of the mention's spelling a name of the linked
concept holds (:func:`dense_only_links`).
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import Annotation, Document
from data_tools.formats.namespaces import kb_key
from data_tools.registry import load_kb
from e2e_linker.normalizer.spelling import spelling_share
from e2e_linker.scoring import kbid, normalized_ids
from eval.ood_dev import (
    CORPUS_TYPES,
    DEV_TABLE,
    add_model_options,
    dev_linker,
    gold_of,
    labelled_predictions,
    labelled_types,
)
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "dev_table" / "error_classes"
#: the gold classes in the order the table shows them
GOLD_CLASSES = ("right", "wrong_id", "wrong_id:one_of_several", "wrong_id:same_species",
                "wrong_id:other_species", "wrong_id:other_species:document",
                "wrong_id:other_species:mention", "wrong_id:other_vocabulary", "other_type",
                "boundary", "overlapped_other_type", "missed", "missed_gated", "missed_never_kept")
PREDICTION_CLASSES = ("disjoint", "on_unscored_gold")
CONTEXT = 40
#: the mention-score bands :func:`dense_only_links` counts the gate-off run's dense links in
SCORE_BANDS = (0.0, 0.9, 0.98, 0.995)
#: the spelling-share bands it counts them in too (how much of the mention one name of the
#: linked concept spells)
SPELLING_BANDS = (0.0, 0.25, 0.5, 0.75, 0.9)


def vocabularies(ann: Annotation, resolve: Callable[[str], str] | None = None) -> set[str]:
    """The vocabularies of ``ann``'s IDs as the strict scorer compares them: the prefix an ID
    keeps there (``OMIM`` of ``OMIM:255800``), ``""`` for the KB's own unprefixed IDs (MeSH)."""
    return {i.split(":", 1)[0] if ":" in i else "" for i in normalized_ids(ann, resolve)}


def gene_id_class(gold: Annotation, predicted: Annotation, taxa: dict[str, str],
                  resolve: Callable[[str], str] | None = None) -> str:
    """Which kind of wrong gene ID ``predicted`` gives the gold mention of its span:
    ``one_of_several`` (the gold lists several IDs, the prediction's are among them),
    ``same_species`` (a gene of a taxon the gold's genes have, ``taxa``: gene ID → taxon),
    else ``other_species`` (a gene whose taxon is unknown counts as another species)."""
    gold_ids = set(normalized_ids(gold, resolve))
    pred_ids = set(normalized_ids(predicted, resolve))
    if len(gold_ids) > 1 and pred_ids and pred_ids <= gold_ids:
        return "one_of_several"
    gold_taxa = {taxa.get(kb_key(i)) for i in gold.concept_ids} - {None}
    pred_taxa = {taxa.get(kb_key(i)) for i in predicted.concept_ids} - {None}
    return "same_species" if gold_taxa & pred_taxa else "other_species"


def main_taxon(annotations: Sequence[Annotation], taxa: dict[str, str]) -> str | None:
    """The taxon most of the gene annotations among ``annotations`` belong to (each by its
    first ID; the first seen of a tie), None when none has a known taxon.

    Why: the other-species errors gather in few documents (issue 43); whether a document's
    genes went to another species as a whole (the document's species chosen wrong) or one
    mention's did is what decides which evidence a fix needs — the document's words or the
    mention's context (docs/decisions/0040-learned-species.md, 0042)."""
    found = Counter(taxa[key] for a in annotations if a.type == "Gene" and a.concept_ids
                    if (key := kb_key(a.concept_ids[0])) in taxa)
    return found.most_common(1)[0][0] if found else None


def _overlaps(a: Annotation, b: Annotation) -> bool:
    return a.start < b.end and b.start < a.end


def _example(doc: Document, ann: Annotation, found: Sequence[Annotation]) -> dict:
    text = doc.text
    return {"document": doc.id, "text": ann.text, "type": ann.type,
            "ids": list(ann.concept_ids),
            "predicted": [{"text": p.text, "type": p.type, "ids": list(p.concept_ids)}
                          for p in found],
            "context": text[max(0, ann.start - CONTEXT):ann.end + CONTEXT].replace("\n", " ")}


@dataclass
class ErrorClasses:
    """One corpus's classes: ``counts`` by class, up to N ``examples`` a class, and
    ``documents``: by class, how many of its mentions each document holds (whether a class is
    spread over the corpus or sits in a few abstracts)."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[dict]] = field(default_factory=dict)
    documents: dict[str, Counter] = field(default_factory=dict)

    def concentration(self, name: str, top: int = 3) -> dict[str, int]:
        """How many documents hold class ``name``'s mentions, and how many of them the
        ``top`` documents with the most hold."""
        found = self.documents.get(name, Counter())
        return {"documents": len(found),
                f"in_top_{top}": sum(n for _, n in found.most_common(top))}


def gold_classes(gold: Sequence[Document], pred: Sequence[Document], types: Sequence[str],
                 resolve: Callable[[str], str] | None = None,
                 taxa: dict[str, str] | None = None,
                 gate_off: Sequence[Document] | None = None,
                 examples: int = 0) -> ErrorClasses:
    """The gold mentions of ``types`` by class and the predictions that meet no gold mention
    (the module docstring), with up to ``examples`` examples a class and the documents each
    class's mentions sit in. ``taxa`` (gene ID → taxon) splits the wrong gene IDs;
    ``gate_off`` (the same documents annotated with ``lexical_gate`` off) splits the misses.
    Documents pair by ID; a gold document without a prediction has none."""
    by_id = {d.id: d for d in pred}
    off_by_id = {d.id: d for d in gate_off} if gate_off is not None else None
    found = ErrorClasses()

    def add(name: str, doc: Document, ann: Annotation, near: Sequence[Annotation]) -> None:
        found.counts[name] += 1
        found.documents.setdefault(name, Counter())[doc.id] += 1
        if len(found.examples.get(name, ())) < examples:
            found.examples.setdefault(name, []).append(_example(doc, ann, near))

    for doc in gold:
        predicted = by_id[doc.id].annotations if doc.id in by_id else []
        species_right = taxa is not None and main_taxon(doc.annotations, taxa) \
            == main_taxon(predicted, taxa)
        for ann in doc.annotations:
            if ann.type not in types:
                continue
            same = [p for p in predicted if (p.start, p.end) == (ann.start, ann.end)]
            over = [p for p in predicted if _overlaps(p, ann)]
            typed = [p for p in same if p.type == ann.type]
            if any(kbid(p, resolve) == kbid(ann, resolve) for p in typed):
                add("right", doc, ann, typed)
            elif typed:
                add("wrong_id", doc, ann, typed)
                if taxa is not None and ann.type == "Gene":
                    kind = gene_id_class(ann, typed[0], taxa, resolve)
                    add(f"wrong_id:{kind}", doc, ann, typed)
                    if kind == "other_species":
                        add(f"wrong_id:other_species:"
                            f"{'mention' if species_right else 'document'}", doc, ann, typed)
                gold_vocabularies = vocabularies(ann, resolve)
                found_vocabularies = vocabularies(typed[0], resolve)
                if gold_vocabularies and found_vocabularies \
                        and gold_vocabularies != found_vocabularies:
                    add("wrong_id:other_vocabulary", doc, ann, typed)
            elif same:
                add("other_type", doc, ann, same)
            elif any(p.type == ann.type for p in over):
                add("boundary", doc, ann, over)
            elif over:
                add("overlapped_other_type", doc, ann, over)
            else:
                add("missed", doc, ann, ())
                if off_by_id is not None:
                    kept = [p for p in (off_by_id[doc.id].annotations
                                        if doc.id in off_by_id else ())
                            if (p.start, p.end) == (ann.start, ann.end)]
                    add("missed_gated" if kept else "missed_never_kept", doc, ann, kept)
        for p in predicted:
            if p.type not in types:
                continue
            met = [a for a in doc.annotations if _overlaps(a, p)]
            if not met:
                add("disjoint", doc, p, ())
            elif not any(a.type in types for a in met):
                add("on_unscored_gold", doc, p, met)
    return found


def dense_only_links(gold: Sequence[Document], gate_off: Sequence[Document],
                     types: Sequence[str], resolve: Callable[[str], str] | None = None,
                     names: Callable[[str], Sequence[str]] | None = None
                     ) -> dict[str, dict[str, dict[str, int]]]:
    """Of the gate-off run's predictions of ``types`` that dense search alone linked (the ones
    ``lexical_gate`` drops), how many have a gold mention's span, type and IDs: ``by_score``,
    by mention-score band (:data:`SCORE_BANDS`: each band from its bound up to the next), and
    with ``names`` (a concept ID → its names) ``by_spelling``, by how much of the mention's
    spelling one name of the linked concept holds (:data:`SPELLING_BANDS`;
    :func:`~e2e_linker.normalizer.spelling.spelling_share`, case folded).

    Why: a gated miss looks like easy recall; whether opening the gate (or a band of it, by
    the mention head's score or by the lexical support the link has) pays depends on how
    often those links are right (docs/decisions/0003-lexical-gate.md)."""
    by_score = {f"{low:g}": {"links": 0, "right": 0} for low in SCORE_BANDS}
    by_spelling = {f"{low:g}": {"links": 0, "right": 0} for low in SPELLING_BANDS}
    predicted = [a for doc in gate_off for a in doc.annotations if a.type in types]
    # labelled_predictions labels the same annotations in the same order
    for ann, row in zip(predicted, labelled_predictions(gold, gate_off, tuple(types), resolve),
                        strict=True):
        if row["link_method"] != "dense":
            continue
        _count(by_score, SCORE_BANDS, row["mention_score"] or 0.0, row["correct"])
        if names is not None:
            share = spelling_share(ann.text.casefold(),
                                   [n.casefold() for cid in ann.concept_ids for n in names(cid)])
            _count(by_spelling, SPELLING_BANDS, share, row["correct"])
    return {"by_score": by_score, **({"by_spelling": by_spelling} if names is not None else {})}


def _count(bands: dict[str, dict[str, int]], bounds: Sequence[float], value: float,
           correct: bool) -> None:
    """Count one link, right or not, in the band of ``bounds`` that ``value`` falls in."""
    band = bands[f"{max(b for b in bounds if value >= b):g}"]
    band["links"] += 1
    band["right"] += correct


def markdown(result: dict) -> str:
    """The table: a row a corpus, a column a class."""
    classes = [c for c in (*GOLD_CLASSES, *PREDICTION_CLASSES)
               if any(c in row["counts"] for row in result["rows"])]
    lines = [f"Error classes, model {result['model']}, options `{result['annotate_options']}` "
             f"({result['machine']}); classes: eval/error_classes.py", "",
             "| corpus (types) | gold | " + " | ".join(classes) + " |",
             "|---|---|" + "---|" * len(classes)]
    for row in result["rows"]:
        lines.append(f"| {row['corpus']} ({', '.join(row['types'])}) | {row['gold']} | "
                     + " | ".join(str(row["counts"].get(c, 0)) for c in classes) + " |")
    spread = [row for row in result["rows"] if row.get("concentration")]
    if spread:
        lines += ["", "How many documents each class's mentions sit in, and how many of them the "
                  "three documents with the most hold", "",
                  "| corpus | class | mentions | documents | in the 3 largest |",
                  "|---|---|---|---|---|"]
        for row in spread:
            for name in classes:
                if name != "right" and name in row["concentration"]:
                    found = row["concentration"][name]
                    lines.append(f"| {row['corpus']} | {name} | {row['counts'][name]} | "
                                 f"{found['documents']} | {found['in_top_3']} |")
    dense = [row for row in result["rows"] if row.get("dense_only_links")]
    for key, heading, label in (
            ("by_score", "mention-score band", "score"),
            ("by_spelling", "how much of the mention one name of the linked concept spells "
             "(spelling share)", "share")):
        found_rows = [(row["corpus"], row["dense_only_links"][key]) for row in dense
                      if key in row["dense_only_links"]]
        if not found_rows:
            continue
        bands = list(found_rows[0][1])
        lines += ["", f"Gate-off run: predictions dense search alone links, right / all, by "
                  f"{heading}", "",
                  "| corpus | all | " + " | ".join(f"{label} ≥ {b}" for b in bands) + " |",
                  "|---|---|" + "---|" * len(bands)]
        for corpus, found in found_rows:
            total = (sum(v["right"] for v in found.values()),
                     sum(v["links"] for v in found.values()))
            lines.append(f"| {corpus} | {total[0]} / {total[1]} | " + " | ".join(
                f"{found[b]['right']} / {found[b]['links']}" for b in bands) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from eval.ood_dev import annotate_flags

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=list(DEV_TABLE),
                        choices=sorted(CORPUS_TYPES))
    add_model_options(parser)
    parser.add_argument("--gate-off-too", action="store_true",
                        help="annotate each corpus again with lexical_gate off, to split the "
                             "misses into gated candidates and spans never kept")
    parser.add_argument("--examples", type=int, default=25,
                        help="examples kept a class and corpus (results.json)")
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        linker = dev_linker(args, Path(tmp))
        kb = load_kb("bc5cdr")
        resolve = kb.resolve

        def concept_names(concept_id: str) -> list[str]:
            concept = kb.get(concept_id)
            return concept.all_names() if concept is not None else []

        taxa = load_kb("genes_homologene").taxa() \
            if "Gene" in linker.annotator.model.config.types else None
        annotator = linker.annotator
        rows = []
        for spec in args.corpora:
            types = labelled_types(spec)
            gold = gold_of(spec, args.max_docs)
            pred = linker.annotate(gold, replace=True)
            off = None
            if args.gate_off_too:
                linker.annotator = annotator.with_pipeline(
                    annotator.pipeline.changed(disable=("lexical_gate",)))
                off = linker.annotate(gold, replace=True)
                linker.annotator = annotator
            found = gold_classes(gold, pred, types, resolve, taxa, off, args.examples)
            rows.append({"corpus": spec, "types": list(types),
                         "gold": sum(a.type in types for d in gold for a in d.annotations),
                         "counts": dict(found.counts),
                         "concentration": {name: found.concentration(name)
                                           for name in found.counts},
                         "examples": found.examples})
            if off is not None:
                rows[-1]["dense_only_links"] = dense_only_links(gold, off, types, resolve,
                                                                concept_names)
    result = {"command": command_line("error_classes", argv), "machine": machine(),
              "model": args.model or "shipped",
              "annotate_options": shlex.join(annotate_flags(args)) or "default",
              "steps": annotator.pipeline.names, "rows": rows}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
