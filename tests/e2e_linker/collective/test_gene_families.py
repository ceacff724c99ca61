"""The gene mention models (family, false alarm): a mention's features, the fit, their files,
the rule that drops."""

from __future__ import annotations

import json

import numpy as np
import pytest

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from e2e_linker.collective.confidence import ConfidenceModel
from e2e_linker.collective.gene_families import (
    GENE_FALSE_ALARMS_FILE,
    GENE_FAMILIES_FILE,
    GeneMentionModel,
    compact,
    drop_gene_mentions,
    family_features,
    fit_gene_mention_model,
    load_gene_mention_model,
)
from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.errors import UserError
from e2e_linker.lexical.sieves import NameDictionary

TEXT = "The Notch family and NOTCH2 signaling; PKC isoforms; Notchs and echinus."


def _genes() -> GeneRanking:
    """Two human Notch genes, one holding the family's name as an alias, and a mouse one."""
    kb = KB([Concept("4851", "NOTCH1", ["Notch", "hN1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("4853", "NOTCH2", ["hN2", "Notch"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("18128", "Notch1", ["Notch"], "Gene", "NCBI Gene", taxon="10090")])
    return GeneRanking(NameDictionary.from_kb(kb), taxa=kb.taxa(), concepts=kb.concepts)


def test_compact_folds_case_punctuation_and_spaces():
    assert compact("TGF-beta 1") == "tgfbeta1"


def test_features_read_the_names_genes_its_form_and_its_neighbours():
    genes = _genes()
    start = TEXT.index("Notch")
    notch = family_features("Notch", TEXT, start, start + 5, genes)
    assert notch["log_genes"] == pytest.approx(np.log1p(3))
    assert notch["log_same_taxon"] == pytest.approx(np.log1p(2))  # two human genes
    assert notch["prefix_of_linked"] == 1.0 and "is_linked_symbol" not in notch
    assert notch["last=notch"] == notch["next=family"] == notch["prev=the"] == 1.0
    assert "no_gene" not in notch and "has_digit" not in notch
    start = TEXT.index("NOTCH2")
    symbol = family_features("NOTCH2", TEXT, start, start + 6, genes)
    assert symbol["is_linked_symbol"] == symbol["has_digit"] == symbol["ends_digit"] == 1.0
    assert symbol["next=signaling"] == 1.0 and "prefix_of_linked" not in symbol
    start = TEXT.index("PKC")
    unknown = family_features("PKC", TEXT, start, start + 3, genes)
    assert unknown["no_gene"] == unknown["short"] == unknown["caps"] == 1.0
    assert "log_genes" not in unknown and unknown["next=isoforms"] == 1.0
    # a plural: a lower-case "s" after a name the KB holds; a name that merely ends in "s"
    # (the fly gene "echinus") is not one
    start = TEXT.index("Notchs")
    assert family_features("Notchs", TEXT, start, start + 6, genes)["plural"] == 1.0
    start = TEXT.index("echinus")
    assert "plural" not in family_features("echinus", TEXT, start, start + 7, genes)


def _rows():
    family = {"next=family": 1.0, "log_same_taxon": 1.0}
    gene = {"is_linked_symbol": 1.0, "has_digit": 1.0}
    return [family] * 8 + [gene] * 8, [1.0] * 8 + [0.0] * 8


def test_fit_learns_which_features_say_family():
    rows, labels = _rows()
    model = fit_gene_mention_model(rows, labels, l2=0.1, fitted={"data": "test"})
    assert model.model.probability(rows[0]) > 0.9 > 0.1 > model.model.probability(rows[-1])
    assert model.model.weights["next=family"] > 0 > model.model.weights["is_linked_symbol"]
    assert model.model.fitted["positives"] == 8 and model.model.fitted["data"] == "test"


@pytest.mark.parametrize(("file_name", "what"), [(GENE_FAMILIES_FILE, "gene family model"),
                                               (GENE_FALSE_ALARMS_FILE,
                                                "gene false-alarm model")])
def test_each_file_round_trips_and_a_damaged_one_is_named(tmp_path, file_name, what):
    rows, labels = _rows()
    model = fit_gene_mention_model(rows, labels, l2=0.1)
    assert load_gene_mention_model(tmp_path, file_name) is None
    assert load_gene_mention_model(None, file_name) is None
    (tmp_path / file_name).write_text(json.dumps(model.to_json()))
    loaded = load_gene_mention_model(tmp_path, file_name)
    assert loaded.model.probability(rows[0]) == pytest.approx(model.model.probability(rows[0]))
    other = GENE_FALSE_ALARMS_FILE if file_name == GENE_FAMILIES_FILE else GENE_FAMILIES_FILE
    assert load_gene_mention_model(tmp_path, other) is None  # the two files are apart
    (tmp_path / file_name).write_text('{"weights": [1, 2]}')
    with pytest.raises(UserError, match=f"not a fitted {what}"):
        load_gene_mention_model(tmp_path, file_name)


def test_drop_gene_mentions_drops_gene_annotations_the_model_calls_no_gene():
    docs = [Document(id="d", passages=[Passage(offset=0, text=TEXT)])]
    found = [("Notch", "Gene"), ("NOTCH2", "Gene"), ("PKC", "Chemical")]
    anns, spans = [], []
    for text, type_ in found:
        start = TEXT.index(text)
        anns.append(Annotation(start, start + len(text), text, type_, ["x"]))
        spans.append(SpanPrediction(0, start, start + len(text), 0.9, type_, np.zeros(2)))
    families = GeneMentionModel(ConfidenceModel({"next=family": 3.0, "next=isoforms": 3.0},
                                                bias=-1.0))
    drop_gene_mentions(anns, spans, docs, _genes(), families, 0.5)
    assert anns[0] is None                      # "Notch family"
    assert anns[1] is not None                  # a gene's official symbol
    assert anns[2] is not None                  # not a Gene annotation


def test_the_shipped_family_model_weighs_only_features_the_rule_computes():
    from e2e_linker.collective.model_dir import default_linker_dir

    model = load_gene_mention_model(default_linker_dir(), GENE_FAMILIES_FILE)
    assert model is not None
    shaped = {"log_genes", "no_gene", "log_same_taxon", "plural", "ends_digit", "has_digit",
              "short", "caps", "n_words", "is_linked_symbol", "prefix_of_linked"}
    names = set(model.model.weights)
    assert {n for n in names if "=" not in n} <= shaped
    assert {n.split("=")[0] for n in names if "=" in n} <= {"last", "next", "prev"}
    assert model.model.weights["next=family"] > 0  # "the Notch family"
