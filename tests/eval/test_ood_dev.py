"""eval.ood_dev's scoring pieces on hand-made documents, and BioRED's types mapped to ours."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from eval.ood_dev import gold_of, only_types, overlapped_share, report_of


def _doc(doc_id: str, spans: list[tuple[int, int, str, str]]) -> Document:
    text = "IL-8 and aspirin raised TNF in asthma patients."
    doc = Document(doc_id, [Passage(0, text, {})])
    for n, (start, end, type_, cid) in enumerate(spans):
        doc.add_annotation(Annotation(start, end, text[start:end], type_, [cid], id=str(n)))
    return doc


def test_gene_confusion_counts_gold_genes_overlapped_by_chemicals_or_diseases():
    gold = [_doc("1", [(0, 4, "Gene", "3576"), (9, 16, "Chemical", "D001241"),
                       (24, 27, "Gene", "7124"), (31, 37, "Disease", "D001249")])]
    pred = [_doc("1", [(0, 4, "Chemical", "D016209"), (9, 16, "Chemical", "D001241"),
                       (24, 27, "Gene", "7124"), (31, 37, "Disease", "D001249")])]
    assert overlapped_share(gold, pred, "Gene", ("Chemical", "Disease")) == (1, 2)
    scores = report_of(gold, pred, ("Chemical", "Disease"), None)
    # the IL-8 "chemical" is a false positive; the predicted gene is left out, not scored
    assert scores["strict"]["by_type"]["Chemical"]["p"] == 0.5
    assert scores["strict"]["by_type"]["Disease"]["f1"] == 1.0
    assert [a.type for d in only_types(pred, ("Gene",)) for a in d.annotations] == ["Gene"]


def test_biored_dev_arrives_in_our_types():
    docs = gold_of("biored:dev")
    assert len(docs) == 64
    assert {a.type for d in docs for a in d.annotations} == {"Chemical", "Disease", "Gene",
                                                             "Species"}
    taxa = {cid for d in docs for a in d.annotations if a.type == "Species"
            for cid in a.concept_ids}
    assert "NCBITaxon:9606" in taxa and all(t.startswith("NCBITaxon:") for t in taxa)


def test_pipeline_options_read_as_annotate_reads_them():
    import argparse

    import pytest

    from e2e_linker.collective.settings import AnnotateSettings
    from e2e_linker.errors import UserError
    from eval.ood_dev import add_pipeline_options, annotate_flags, pipeline_settings

    parser = argparse.ArgumentParser()
    add_pipeline_options(parser)
    args = parser.parse_args(["--disable", "lexical_gate,short_forms", "--set",
                              "propagation.threshold=0.3", "--set", "dictionary.threshold=0.1",
                              "--threshold", "0.25"])
    settings = AnnotateSettings(**pipeline_settings(args))
    assert settings.disable == ("lexical_gate", "short_forms")
    assert settings.overrides == ("propagation.threshold=0.3", "dictionary.threshold=0.1")
    assert settings.threshold == 0.25 and settings.max_span_len is None
    assert annotate_flags(args) == ["--disable", "lexical_gate,short_forms",
                                    "--set", "propagation.threshold=0.3",
                                    "--set", "dictionary.threshold=0.1", "--threshold", "0.25"]
    none = parser.parse_args([])
    assert annotate_flags(none) == [] and AnnotateSettings(**pipeline_settings(none)) \
        == AnnotateSettings()
    with pytest.raises(UserError, match="no step named gate"):
        AnnotateSettings(**pipeline_settings(parser.parse_args(["--set", "gate.x=1"])))


def test_main_hands_the_options_to_annotate_settings(monkeypatch, tmp_path):
    import json
    from types import SimpleNamespace

    from e2e_linker.api import Linker
    from eval import ood_dev

    seen = []

    class Loaded:
        annotator = SimpleNamespace(
            model=SimpleNamespace(config=SimpleNamespace(types=["Chemical", "Disease"],
                                                         default_guideline=None)),
            pipeline=SimpleNamespace(names=["score_floor", "overlaps", "link"], guideline=None))

        def annotate(self, docs, replace):
            return docs

    def load(settings):
        seen.append(settings)
        return Loaded()

    monkeypatch.setattr(Linker, "load", staticmethod(load))
    monkeypatch.setattr(ood_dev, "load_kb", lambda name: SimpleNamespace(resolve=None))
    ood_dev.main(["--corpora", "biored:dev", "--max-docs", "1", "--disable", "short_forms",
                  "--set", "propagation.threshold=0.3", "--out", str(tmp_path)])
    (settings,) = seen
    assert settings.disable == ("short_forms",)
    assert settings.overrides == ("propagation.threshold=0.3",)
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["annotate_options"] == "--disable short_forms --set propagation.threshold=0.3"
    assert result["steps"] == ["score_floor", "overlaps", "link"]
    assert "`--disable short_forms --set propagation.threshold=0.3`" in \
        (tmp_path / "results.md").read_text()


def test_own_guidelines_read_a_corpus_under_the_guideline_named_like_it():
    from e2e_linker.collective.model import LinkerConfig
    from eval.ood_dev import markdown, own_guideline

    tagged = LinkerConfig(guidelines=["biored", "ncbi_disease"], default_guideline="biored")
    assert own_guideline("ncbi_disease:dev", tagged) == "ncbi_disease"
    assert own_guideline("gnormplus:dev", tagged) is None  # the model's default
    assert own_guideline("ncbi_disease:dev", LinkerConfig()) is None
    row = {"corpus": "ncbi_disease:dev", "annotate_s": 1.0, "guideline": "ncbi_disease",
           "scores": {m: {"p": 1.0, "r": 1.0, "f1": 1.0, "by_type": {}}
                      for m in ("strict", "partial", "mentions")}}
    text = markdown({"model": "m", "annotate_options": "--own-guidelines", "machine": "x",
                     "rows": [row]})
    assert "Guideline each corpus was read under: ncbi_disease:dev ncbi_disease" in text
    assert "Guideline each corpus" not in markdown(
        {"model": "m", "annotate_options": "", "machine": "x", "rows": [{**row, "guideline": None}]})


def test_a_gene_corpus_is_scored_on_genes_with_its_confusion():
    import copy
    from types import SimpleNamespace

    from eval.ood_dev import CORPUS_TYPES, evaluate

    assert CORPUS_TYPES["nlmgene:test"] == ("Gene",)

    class Linker:
        """Predicts every gold gene, the first document's first one as a Chemical instead."""

        annotator = SimpleNamespace(model=SimpleNamespace(config=SimpleNamespace(
            types=["Chemical", "Disease", "Gene"])))

        def annotate(self, docs, replace):
            out = copy.deepcopy(docs)
            out[0].annotations[0].type = "Chemical"
            return out

    row = evaluate(Linker(), "gnormplus:train", None, max_docs=2)
    genes = row["gene_spans_predicted_chemical_or_disease"]
    assert genes["overlapped"] == 1 and genes["gold_gene_spans"] > 1
    assert row["scores"]["strict"]["r"] < 1.0 == row["scores"]["strict"]["p"]
    assert row["gene"]["mentions"]["f1"] == row["scores"]["mentions"]["f1"] < 1.0
    # the combined score's row, document by document: what eval.paired_bootstrap compares
    counts = row["strict_by_document"]["gnormplus:train (Gene)"]
    assert len(counts) == 2 and list(row["strict_by_document"]) == ["gnormplus:train (Gene)"]
    tp, fp, fn = (sum(c[k] for c in counts.values()) for k in range(3))
    assert (fp, fn) == (0, 1) and tp == genes["gold_gene_spans"] - 1


def test_species_rows_stand_beside_the_table_and_outside_its_combined_score():
    import copy
    from types import SimpleNamespace

    from eval.ood_dev import combined_score, evaluate, species_rows, table_rows

    class Linker:
        """Predicts every gold mention."""

        annotator = SimpleNamespace(model=SimpleNamespace(config=SimpleNamespace(
            types=["Chemical", "Disease", "Gene", "Species"])))

        def annotate(self, docs, replace):
            return copy.deepcopy(docs)

    rows = [evaluate(Linker(), "biored:dev", None, max_docs=3),
            evaluate(Linker(), "s800:dev", None, max_docs=2)]
    assert rows[0]["species"]["strict"]["f1"] == 1.0
    assert rows[1]["scores"]["strict"]["f1"] == 1.0 and "species" not in rows[1]
    assert set(table_rows(rows)) == {"biored:dev (Chemical, Disease)", "biored:dev (Gene)"}
    assert species_rows(rows) == {"biored:dev (Species)": 1.0, "s800:dev (Species)": 1.0}
    assert combined_score(rows) == 1.0
    Linker.annotator.model.config.types = ["Chemical", "Disease"]  # no species predicted
    assert "species" not in evaluate(Linker(), "biored:dev", None, max_docs=3)


def test_gold_genes_are_counted_by_species_with_those_linked():
    from eval.ood_dev import genes_by_species

    gold = [_doc("1", [(0, 4, "Gene", "3576"), (24, 27, "Gene", "24835"),
                       (31, 37, "Disease", "D001249")]),
            _doc("2", [(0, 4, "Gene", "16193"), (24, 27, "Gene", "99999")])]
    pred = [_doc("1", [(0, 4, "Gene", "3576"), (24, 27, "Gene", "21926")]),  # rat Tnf: mouse
            _doc("2", [(0, 4, "Gene", "16193"), (24, 27, "Gene", "99999")])]
    taxa = {"3576": "9606", "24835": "10116", "21926": "10090", "16193": "10090"}
    expected = {
        "human": {"gold": 1, "linked": 1}, "mouse": {"gold": 1, "linked": 1},
        "not in the KB": {"gold": 1, "linked": 1}, "other": {"gold": 1, "linked": 0}}
    assert genes_by_species(gold, pred, taxa) == expected
    # the linker's output is namespaced (NCBIGene:3576): the counts are the same
    for doc in pred:
        for ann in doc.annotations:
            ann.concept_ids = [f"NCBIGene:{cid}" for cid in ann.concept_ids]
    assert genes_by_species(gold, pred, taxa) == expected


def test_predictions_are_labelled_right_only_with_span_type_and_concept():
    """What the confidence model learns from: the strict criterion, namespaced predictions
    against bare gold as the scorer compares them, other types left out."""
    from eval.ood_dev import labelled_predictions

    gold = [_doc("1", [(0, 4, "Gene", "3576"), (9, 16, "Chemical", "D001241"),
                       (31, 37, "Disease", "D001249")])]
    pred = [_doc("1", [(0, 4, "Gene", "NCBIGene:3576"), (9, 16, "Chemical", "MESH:D001241"),
                       (9, 15, "Chemical", "MESH:D001241"), (31, 37, "Chemical", "D001249"),
                       (24, 27, "Gene", "NCBIGene:1")])]
    pred[0].annotations[1].infons["link_method"] = "exact"
    rows = labelled_predictions(gold, pred, ("Chemical", "Disease"), None)
    assert [(r["type"], r["link_method"], r["correct"]) for r in rows] == [
        ("Chemical", "exact", True), ("Chemical", None, False), ("Chemical", None, False)]
    assert [r["correct"] for r in labelled_predictions(gold, pred, ("Gene",), None)] == \
        [True, False]


def test_reliability_bins_counts_ece_and_brier():
    from eval.ood_dev import reliability

    found = reliability([0.05, 0.15, 0.15, 0.95, 1.0], [False, True, False, True, True],
                        bins=10)
    assert [(b["lo"], b["count"], b["confidence"], b["accuracy"]) for b in found["bins"]] == [
        (0.0, 1, 0.05, 0.0), (0.1, 2, 0.15, 0.5), (0.9, 2, 0.975, 1.0)]
    assert found["ece"] == round((1 * 0.05 + 2 * 0.35 + 2 * 0.025) / 5, 4)
    assert found["brier"] == round((0.05 ** 2 + 0.85 ** 2 + 0.15 ** 2 + 0.05 ** 2) / 5, 4)
    assert found["n"] == 5 and found["accuracy"] == 0.6


def test_the_confidence_fit_holds_biored_out_and_beats_the_mention_score_there():
    """Exact links right, dense ones mostly wrong, in every corpus: the fit on the fitting
    corpora learns it and is better calibrated than the mention score on the held-out one."""
    import random

    from eval.ood_dev import CONFIDENCE_HELD_OUT, confidence_fit

    rng = random.Random(1)

    def rows(n: int) -> list[dict]:
        out = []
        for _ in range(n):
            exact = rng.random() < 0.5
            out.append({"mention_score": rng.uniform(0.5, 1.0), "link_method":
                        "exact" if exact else "dense", "link_score": None if exact else 20.0,
                        "type": "Chemical", "correct": rng.random() < (0.95 if exact else 0.2)})
        return out

    labelled = {"bc5cdr:dev": rows(600), "ncbi_disease:dev": rows(300),
                CONFIDENCE_HELD_OUT: rows(400)}
    model, report = confidence_fit(labelled)
    assert model.fitted["fit_on"] == ["bc5cdr:dev", "ncbi_disease:dev"]
    assert model.fitted["rows"] == 900 and model.methods == ("dense", "exact")
    held = report[CONFIDENCE_HELD_OUT]
    assert held["model"]["ece"] < held["mention_score_alone"]["ece"]
    assert held["model"]["brier"] < held["mention_score_alone"]["brier"]
    assert model.fitted["held_out_ece"] == held["model"]["ece"]
    assert set(report) == {CONFIDENCE_HELD_OUT, "bc5cdr:dev"}
    chemicals = held["by_type"]["Chemical"]  # every row a chemical: the whole set's figures
    assert chemicals["n"] == 400 and chemicals["accuracy"] == held["model"]["accuracy"]
    bins = held["model"]["bins"]
    assert abs(chemicals["confidence"]
               - sum(b["count"] * b["confidence"] for b in bins) / 400) < 1e-3


def test_the_confidence_report_gives_each_types_mean_confidence_and_accuracy():
    from data_tools.documents import Annotation
    from eval.ood_dev import by_type_means

    anns = [Annotation(start=0, end=1, text="x", type=t) for t in ("Gene", "Gene", "Disease")]
    assert by_type_means(anns, [0.5, 0.7, 0.9], [True, False, True]) == {
        "Disease": {"n": 1, "confidence": 0.9, "accuracy": 1.0},
        "Gene": {"n": 2, "confidence": 0.6, "accuracy": 0.5}}
