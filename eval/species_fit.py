"""Fit the species choice (:mod:`e2e_linker.collective.species_choice`) on gold gene IDs and
check it against the rule on the gene dev sets.

    python -m eval.species_fit [--model DIR] [--fit-on gnormplus:fit nlmgene:fit biored:train]
                               [--check gnormplus:dev nlmgene:dev biored:dev] [--write]
                               [--out eval/results/dev_table/species_choice]

Why: which species a gene mention means decides its NCBI Gene ID, and the rule's document
order got it right for 65–85 % of the gold gene mentions of the gene dev sets
(docs/decisions/0040-learned-species.md). Each corpus is annotated from its stripped text by
the model (names mined from :data:`FIT_NAMES` only), which gives
each document's Species spans and gene spans — the evidence the linker reads at that point;
then every gold gene mention whose name has genes of some species in the KB gives one row per
candidate taxon (:func:`~e2e_linker.collective.species_choice.candidate_taxa`), labelled by
whether it is the gold gene's. The logistic model is fitted on the ``--fit-on`` corpora
(training splits only); ``--check`` reports, per dev corpus, how often the first taxon is the
gold gene's — the rule's order
(:meth:`~e2e_linker.collective.gene_ranking.GeneRanking.mention_species`) beside the fitted
model's — and how many gold mentions had the gold taxon among no candidate; and again with
each checked corpus's own training split left out of the fit (a group's text the fit never
saw: how far the choice carries to other corpora). Its ``results.json`` keeps each check's
choices per document, so ``python -m eval.paired_bootstrap BEFORE/results.json
AFTER/results.json`` says whether a feature's gain is more than the draw of documents.

The text model (:mod:`~e2e_linker.collective.text_species`: which species a document's genes
belong to, from its words; the choice's ``text_prior`` feature) is fitted first, on the same
corpora's documents; the fitted documents' priors come from models that did not read them
(:func:`out_of_fold_priors`), the checked documents' from the model fitted on all of them,
and the held-out check leaves the checked corpus out of both fits
(docs/decisions/0042-text-species.md; ``--no-text-model``: without it). ``--write`` puts
the fitted ``species_choice.json`` and ``text_species.json`` into the model directory
(default: the shipped model; then refresh its ``SHA256SUMS``: ``e2e_linker.kb_search.shipped.write_manifest``). The choice is
made on the dev table (``python -m eval.ood_dev --set learned_species``), not here.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from data_tools.documents import Document
from data_tools.kb_loaders import GENE_TYPE, SPECIES_TYPE, TAXON_PREFIX
from data_tools.species import mentioned_taxa_first, species_before
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.collective.span_linking import document_taxa
from e2e_linker.collective.species_choice import (
    SPECIES_CHOICE_FILE,
    SpeciesChoice,
    candidate_taxa,
    document_species,
    fit_species_choice,
    sentence_bounds,
    taxon_features,
)
from e2e_linker.collective.text_species import (
    TEXT_SPECIES_FILE,
    TextSpecies,
    fit_text_species,
    taxon_group,
)
from eval.ood_dev import gold_of
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "dev_table" / "species_choice"
FIT_ON = ("gnormplus:fit", "nlmgene:fit", "biored:train")
CHECK = ("gnormplus:dev", "nlmgene:dev", "biored:dev")
#: the corpora whose mentions the KB's mined names come from while fitting: not the fitted
#: ones — a training document's own gold genes mined as names would make its genes look
#: unambiguous, which no new document's are
FIT_NAMES = ("bc5cdr:train", "ncbi_disease:train")
#: the L2 penalty of the fit (as the annotation confidence's)
L2 = 1.0
#: the text model's L2 penalty on its word weights, and how many documents a word must be in
#: to be read (docs/decisions/0042-text-species.md)
TEXT_L2 = 1.0
TEXT_MIN_DOCUMENTS = 3
#: folds of the text model's cross-fitting (:func:`out_of_fold_priors`)
FOLDS = 5



def fit_parser(module: str, doc: str, fit_on: tuple[str, ...], checked: tuple[str, ...],
               written: str, out: Path) -> argparse.ArgumentParser:
    """The options a fit of a gene step's model takes (this module's, :mod:`eval.family_fit`'s):
    the model, the corpora fitted on and checked, the corpora of the mined names while
    fitting, whether to write ``written`` into the model directory, the results folder."""
    found = argparse.ArgumentParser(prog=f"python -m eval.{module}", description=doc,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--model", default=None, help="model directory (default: shipped)")
    found.add_argument("--fit-on", nargs="+", default=list(fit_on))
    found.add_argument("--check", nargs="*", default=list(checked))
    found.add_argument("--kb-names-from", nargs="*", default=list(FIT_NAMES),
                       help="corpora whose mentions are the KB's mined names while fitting")
    found.add_argument("--write", action="store_true",
                       help=f"write {written} into the model directory")
    found.add_argument("--out", default=str(out))
    return found


parser = fit_parser("species_fit", __doc__, FIT_ON, CHECK, SPECIES_CHOICE_FILE, RESULTS)
parser.add_argument("--no-text-model", dest="text_model", action="store_false",
                    help=f"fit the choice without the text model ({TEXT_SPECIES_FILE})")


def gene_key(cid: str) -> str:
    """A gene concept ID as the gene KB keys it (``NCBIGene:7067`` → ``7067``)."""
    return cid.split(":")[-1]


def linked_taxon(order: list[str], ranked: list[tuple[str, float]], genes: GeneRanking
                 ) -> str | None:
    """The taxon of the gene the linker takes for a mention with species ``order`` and
    concepts ``ranked``: the first concept of a species after the order's reordering
    (:meth:`~e2e_linker.collective.gene_ranking.GeneRanking.species_first`), moved to the
    order's first taxon when the ortholog step finds that taxon's gene of the same symbol
    (the within-species choice aside)."""
    taxa = genes.taxa or {}
    first = next((cid for cid, _ in genes.species_first(ranked, order) if cid in taxa), None)
    if first is None:
        return None
    if order and genes.ortholog(first, order[0]) is not None:
        return order[0]
    return taxa[first]


def mention_rows(gold: Document, pred: Document, genes: GeneRanking,
                 text_prior: dict[str, float] | None = None) -> list[dict]:
    """One entry per gold gene mention of ``gold`` whose name has genes in the KB: its gold
    taxa (empty: its gene is not in the KB), the taxon the hand order links
    (:func:`linked_taxon`), the candidate taxa and their features (``pred``: the model's
    annotations of the same document, for its Species and gene spans; ``text_prior``: the
    text model's group probabilities for the document, from a model that did not read it)."""
    taxa = genes.taxa or {}
    text = gold.text
    species = [(a.start, a.concept_ids[0].removeprefix(TAXON_PREFIX)) for a in pred.annotations
               if a.type == SPECIES_TYPE and a.concept_ids
               and a.concept_ids[0].startswith(TAXON_PREFIX)]
    order = mentioned_taxa_first([t for _, t in species], document_taxa(text))
    doc = document_species(text, species, [a.text for a in pred.annotations
                                           if a.type == GENE_TYPE], order, genes, text_prior)
    rows = []
    for ann in gold.annotations:
        if ann.type != GENE_TYPE or not ann.concept_ids:
            continue
        mention = text[ann.start:ann.end]
        ranked = genes.name_only_ranking(mention, GENE_TYPE)
        if not any(cid in taxa for cid, _ in ranked):
            continue
        gold_taxa = {taxa[k] for k in map(gene_key, ann.concept_ids) if k in taxa}
        before = species_before(text, ann.start)
        sentence = sentence_bounds(text, ann.start, ann.end, doc.ends)
        found = candidate_taxa(ranked, genes, doc, before)
        rule = genes.mention_species(ranked, mention, text, ann.start, ann.end, order)
        rows.append({"document": gold.id, "gold": sorted(gold_taxa),
                     "rule": linked_taxon(rule, ranked, genes),
                     "candidates": found,
                     "features": [taxon_features(t, mention, text, ann.start, ann.end, ranked,
                                                 doc, genes, before, sentence)
                                  for t in found]})
    return rows


def corpus_rows(spec: str, gold: list[Document], pred: list[Document], genes: GeneRanking,
                priors: dict[str, dict[str, float]]) -> list[dict]:
    """:func:`mention_rows` of every document of corpus ``spec`` (``gold``, annotated as
    ``pred``), each with its text prior from ``priors`` (:func:`document_key` → group
    probabilities)."""
    return [row for g, p in zip(gold, pred, strict=True)
            for row in mention_rows(g, p, genes, priors.get(document_key(spec, g)))]


def document_key(spec: str, doc: Document) -> str:
    """A document's key in the text priors: its corpus and ID (one PMID may be in two
    corpora, read under each)."""
    return f"{spec}/{doc.id}"


def gene_groups(doc: Document, genes: GeneRanking) -> dict[str, float]:
    """How many of ``doc``'s gold gene mentions belong to each species group
    (:func:`~e2e_linker.collective.text_species.taxon_group`), by the KB's taxa: the text
    model's target for the document (empty: none of its genes is in the KB)."""
    taxa = genes.taxa or {}
    out: dict[str, float] = {}
    for ann in doc.annotations:
        if ann.type != GENE_TYPE:
            continue
        found = {taxa[k] for k in map(gene_key, ann.concept_ids) if k in taxa}
        if found:
            group = taxon_group(sorted(found)[0])
            out[group] = out.get(group, 0.0) + 1.0
    return out


def text_training(golds: dict[str, list[Document]], specs: list[str], genes: GeneRanking
                  ) -> list[tuple[str, str, dict[str, float]]]:
    """(:func:`document_key`, text, target) of every document of ``specs`` with a gold gene
    in the KB: what the text model is fitted on."""
    return [(document_key(spec, doc), doc.text, target) for spec in specs for doc in golds[spec]
            if (target := gene_groups(doc, genes))]


def fit_text(training: list[tuple[str, str, dict[str, float]]], fitted: dict | None = None
             ) -> TextSpecies:
    """The text model fitted on ``training`` (:func:`text_training`)."""
    return fit_text_species([t for _, t, _ in training], [y for _, _, y in training],
                            l2=TEXT_L2, min_documents=TEXT_MIN_DOCUMENTS, fitted=fitted)


def out_of_fold_priors(training: list[tuple[str, str, dict[str, float]]]
                       ) -> dict[str, dict[str, float]]:
    """Each training document's text prior from a text model fitted on the other
    :data:`FOLDS` − 1 folds (document n in fold n mod :data:`FOLDS`).

    Why: the species choice is fitted on these documents' mentions; a text model that read a
    document is surer of its species than it will be of a new document's, and the choice
    would learn to trust it too much (stacking's cross-fitting)."""
    priors: dict[str, dict[str, float]] = {}
    for fold in range(FOLDS):
        model = fit_text([row for n, row in enumerate(training) if n % FOLDS != fold])
        priors.update({doc_id: model.probabilities(text)
                       for n, (doc_id, text, _) in enumerate(training) if n % FOLDS == fold})
    return priors


def fit(rows: list[dict], fitted: dict) -> SpeciesChoice:
    """The species choice fitted on ``rows`` (those whose gold taxon is a candidate)."""
    mentions = [(row["features"], next(n for n, t in enumerate(row["candidates"])
                                       if t in row["gold"]))
                for row in rows if set(row["gold"]) & set(row["candidates"])
                and len(row["candidates"]) > 1]
    return fit_species_choice(mentions, l2=L2, fitted=fitted)


def check(rows: list[dict], choice: SpeciesChoice) -> dict:
    """How often the linked gene's taxon is the gold gene's (:func:`linked_taxon`): the
    rule's and the fitted model's (its best candidate: :func:`candidate_taxa` holds only taxa
    the linker reaches), over the gold mentions with a gene in the KB (``mentions``);
    ``unreachable``: those whose gold taxon is no candidate; ``by_document``: the fitted
    model's choices per document (:func:`choice_counts`)."""
    rule = learned = unreachable = 0
    by_document: dict[str, list[int]] = {}
    known = [row for row in rows if row["gold"]]
    for row in known:
        rule += row["rule"] in row["gold"]
        scores = [choice.model.score(f) for f in row["features"]]
        best = min(range(len(scores)), key=lambda n: (-scores[n], n)) if scores else None
        right = best is not None and row["candidates"][best] in row["gold"]
        learned += right
        unreachable += not set(row["gold"]) & set(row["candidates"])
        counts = by_document.setdefault(row.get("document", ""), [0, 0, 0])
        choice_counts(counts, right)
    n = len(known)
    return {"mentions": n, "rule": round(rule / n, 4) if n else 0.0,
            "learned": round(learned / n, 4) if n else 0.0, "unreachable": unreachable,
            "by_document": by_document}


def choice_counts(counts: list[int], right: bool) -> None:
    """Add one mention's choice to a document's ``[tp, fp, fn]``: a right taxon one true
    positive; a wrong one a false positive (the taxon chosen) and a false negative (the gold
    taxon missed), as strict scoring counts a link to the wrong concept. Their micro F1 is
    the accuracy, so :mod:`eval.paired_bootstrap` compares two fits over resampled documents.

    Why: a few documents hold most of the species errors (docs/results.md, "Where the errors
    are"), so an accuracy gain over mentions may be one document's; the bootstrap says whether
    it is more than the draw of documents before a dev-table run is spent on it."""
    if right:
        counts[0] += 1
    else:
        counts[1] += 1
        counts[2] += 1


def bootstrap_rows(checked: dict[str, dict], held_out: dict[str, dict]) -> list[dict]:
    """The checks' per-document counts, taken out of them, as :mod:`eval.paired_bootstrap`
    reads a result's rows: one row per checked corpus fitted with all corpora ("SPEC
    (fitted)") and with its own left out ("SPEC (held out)"); a corpus's two rows share its
    draw of documents."""
    rows = []
    for suffix, checks in (("fitted", checked), ("held out", held_out)):
        for spec, found in checks.items():
            label = f"{spec} ({suffix})"
            rows.append({"label": label,
                         "strict_by_document": {label: found.pop("by_document")}})
    return rows


def same_corpus(spec: str, other: str) -> bool:
    """Whether two corpus specs name splits of one corpus (``nlmgene:fit``, ``nlmgene:dev``)."""
    return spec.split(":")[0] == other.split(":")[0]


def markdown(result: dict) -> str:
    """The check table of :func:`main`."""
    lines = [f"Species choice fitted on {', '.join(result['fit_on'])} "
             f"({result['fit_rows']} gold gene mentions); how often the linked gene's taxon "
             "is the gold one, over the gold gene mentions whose name has genes in the KB:",
             "",
             "| corpus | mentions | rule | fitted | gold taxon no candidate |",
             "|---|---|---|---|---|"]
    lines += [f"| {spec} | {c['mentions']} | {c['rule']:.4f} | **{c['learned']:.4f}** | "
              f"{c['unreachable']} |" for spec, c in result["check"].items()]
    if result.get("held_out"):
        lines += ["", "Each corpus held out: fitted on the other corpora only (text of a group "
                  "the fit never saw):", "", "| corpus | mentions | rule | fitted without it |",
                  "|---|---|---|---|"]
        lines += [f"| {spec} | {c['mentions']} | {c['rule']:.4f} | **{c['learned']:.4f}** |"
                  for spec, c in result["held_out"].items()]
    lines += ["", "Weights (features: e2e_linker.collective.species_choice.taxon_features):", "",
              "| feature | weight |", "|---|---|"]
    lines += [f"| {name} | {w:+.3f} |" for name, w in sorted(result["model"]["weights"].items())]
    lines += [f"| (bias) | {result['model']['bias']:+.3f} |", "",
              f"Command: `{result['command']}`; {result['machine']}."]
    return "\n".join(lines) + "\n"


def annotated_fit_corpora(args: argparse.Namespace, disable: Sequence[str] = ()
                          ) -> tuple[Path, GeneRanking, dict[str, list[Document]],
                                     dict[str, list[Document]]]:
    """For a gene step's fit (:func:`fit_parser`'s options ``args``): the model directory,
    its gene ranking with names mined from ``--kb-names-from`` only, and each ``--fit-on`` and
    ``--check`` corpus's gold documents and the model's annotations of their stripped text,
    its declared pipeline less the ``disable`` steps.

    Why one function: the fits read their rows as the linker would on a new document, so
    every fit annotates its corpora the same way (this module's, :mod:`eval.false_alarm_fit`'s)."""
    from e2e_linker.collective.model_dir import default_linker_dir
    from eval.models import gene_ranking_with_names_from

    model_dir = Path(args.model) if args.model else default_linker_dir()
    with tempfile.TemporaryDirectory() as tmp:
        genes, linker = gene_ranking_with_names_from(list(args.kb_names_from), Path(tmp),
                                                     model_dir)
        if disable:
            linker.annotator = linker.annotator.with_pipeline(
                linker.annotator.pipeline.changed(disable=disable))
        specs = list(dict.fromkeys([*args.fit_on, *args.check]))
        golds = {spec: gold_of(spec) for spec in specs}
        preds = {spec: linker.annotate(golds[spec], replace=True) for spec in specs}
    return model_dir, genes, golds, preds


def main(argv: list[str] | None = None) -> int:
    args = parser.parse_args(argv)
    model_dir, genes, golds, preds = annotated_fit_corpora(args)
    training = text_training(golds, list(args.fit_on), genes)
    text = fit_text(training, {"label": "share of the document's gold genes of each species "
                                        "group", "fit_on": list(args.fit_on)}) \
        if args.text_model else None
    priors = out_of_fold_priors(training) if args.text_model else {}
    if text is not None:
        priors.update({document_key(spec, doc): text.probabilities(doc.text)
                       for spec in args.check for doc in golds[spec]})
    rows = {spec: corpus_rows(spec, golds[spec], preds[spec], genes, priors) for spec in golds}
    fit_rows = [row for spec in args.fit_on for row in rows[spec]]
    fitted = {"label": "the gold gene's taxon", "fit_on": list(args.fit_on),
              "rows": len(fit_rows), "l2": L2,
              "method": "conditional logit over each mention's candidate taxa, Newton's method",
              "names": "mined from " + ", ".join(args.kb_names_from),
              "text_prior": f"{TEXT_SPECIES_FILE}, out-of-fold ({FOLDS} folds) on the fitted "
                            "documents" if text is not None else "none"}
    choice = fit(fit_rows, fitted)
    checked = {spec: check(rows[spec], choice) for spec in args.check}
    held_out = {}
    for spec in args.check:  # its own corpus out of the text model and the choice
        others = [other for other in args.fit_on if not same_corpus(other, spec)]
        kept = text_training(golds, others, genes)
        own = {}
        if args.text_model:
            own = out_of_fold_priors(kept)
            alone = fit_text(kept)
            own.update({document_key(spec, doc): alone.probabilities(doc.text)
                        for doc in golds[spec]})
        held_out[spec] = check(corpus_rows(spec, golds[spec], preds[spec], genes, own), fit(
            [row for other in others
             for row in corpus_rows(other, golds[other], preds[other], genes, own)], {}))
    if args.write:
        (model_dir / SPECIES_CHOICE_FILE).write_text(json.dumps(choice.to_json(), indent=2)
                                                     + "\n")
        if text is not None:
            (model_dir / TEXT_SPECIES_FILE).write_text(json.dumps(text.to_json()) + "\n")
        else:  # a choice fitted without it: an older text model would only cost time
            (model_dir / TEXT_SPECIES_FILE).unlink(missing_ok=True)
    result = {"command": command_line("species_fit", argv), "machine": machine(),
              "fit_on": list(args.fit_on), "fit_rows": len(fit_rows),
              "rows": bootstrap_rows(checked, held_out),
              "model": choice.to_json(), "check": checked, "held_out": held_out}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
