"""Given mentions linked against the annotate model's KB (genes and species by name, the species
order from the caller or the document), the rest by the text normalizer, with a NIL answer and
the record; each linker loaded only when a mention needs it."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.api import Linker
from e2e_linker.errors import UserError
from e2e_linker.normalizer.given_mentions import (
    GivenMentionLinker,
    checked_threshold,
)
from tests.helpers.gene_kb import HUMAN, MOUSE, gene_linker


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    return gene_linker(tmp_path_factory.mktemp("given"))


def given(linker: Linker, threshold: float = 0.0, calls: list | None = None
          ) -> GivenMentionLinker:
    """The engine over ``linker``'s models; ``calls`` records which were loaded."""
    calls = [] if calls is None else calls

    def normalizer():
        calls.append("normalizer")
        return linker.normalizer

    def annotator():
        calls.append("annotator")
        return linker.annotator

    return GivenMentionLinker(normalizer, annotator, threshold)


def document(text: str, *mentions: tuple[str, str]) -> Document:
    doc = Document("d", [Passage(0, text)])
    for surface, type_ in mentions:
        start = text.index(surface)
        doc.add_annotation(Annotation(start, start + len(surface), surface, type_, []))
    return doc


def test_a_gene_is_linked_by_name_against_the_models_kb_with_its_record(linker):
    doc = document("BRCA1 and tamoxifen.", ("BRCA1", "Gene"), ("tamoxifen", "Chemical"))
    given(linker).normalize([doc])
    gene, chemical = doc.annotations
    assert gene.concept_ids == ["NCBIGene:672"] and gene.link_score is None
    assert (gene.infons["concept_name"], gene.infons["species"],
            gene.infons["species_name"]) == ("BRCA1", HUMAN, "Homo sapiens")
    assert gene.infons["candidates"].split(";")[0] == "NCBIGene:672"
    assert "NCBIGene:12189" in gene.infons["candidates"]  # the mouse gene, ranked after
    # the chemical goes to the normalizer: an exact name, namespaced, with its score
    assert chemical.concept_ids == ["MESH:D013629"]
    assert chemical.infons["concept_name"] == "Tamoxifen" and "species" not in chemical.infons
    assert chemical.link_score == pytest.approx(1.0, abs=2e-3)
    assert chemical.infons["candidates"].startswith("MESH:D013629|")


@pytest.mark.parametrize("species", ["mouse", "10090", "NCBITaxon:10090", "Mus musculus"])
def test_the_callers_species_goes_first(linker, species):
    doc = document("BRCA1", ("BRCA1", "Gene"))
    given(linker).normalize([doc], [species])
    assert doc.annotations[0].concept_ids == ["NCBIGene:12189"]
    assert doc.annotations[0].infons["species"] == MOUSE


def test_the_documents_species_decides_without_one_given(linker):
    doc = document("In mice, loss of Brca1 and IL-6 raised tumours in mice.",
                   ("Brca1", "Gene"), ("IL-6", "Gene"), ("mice", "Species"))
    given(linker).normalize([doc])
    assert [a.concept_ids for a in doc.annotations] == [
        ["NCBIGene:12189"], ["NCBIGene:16193"], [MOUSE]]


def test_each_linker_loads_only_when_a_mention_needs_it(linker):
    calls: list[str] = []
    engine = given(linker, calls=calls)
    engine.normalize([document("inflammation", ("inflammation", "Disease"))])
    assert calls == ["normalizer"]
    calls.clear()
    engine = given(linker, calls=calls)
    engine.normalize([document("BRCA1", ("BRCA1", "Gene"))])
    assert calls == ["annotator"]
    assert (engine.linked, engine.nil) == (1, 0)


def test_no_match_is_no_concept_with_the_score_kept(linker):
    doc = document("qzxv blorft", ("qzxv blorft", "Disease"))
    given(linker).normalize([doc])
    linked_score = doc.annotations[0].link_score
    assert doc.annotations[0].concept_ids and linked_score < 0.999
    engine = given(linker, threshold=0.999)
    engine.normalize([doc])
    ann = doc.annotations[0]
    assert ann.concept_ids == [] and ann.link_score == pytest.approx(linked_score)
    assert "concept_name" not in ann.infons  # the earlier link's record is gone
    assert (engine.linked, engine.nil) == (1, 1)
    # a gene no name links is no match at any threshold; an exact name passes 0.999
    gene = document("ZZZ9 and tamoxifen", ("ZZZ9", "Gene"), ("tamoxifen", "Chemical"))
    engine.normalize([gene])
    assert [a.concept_ids for a in gene.annotations] == [[], ["MESH:D013629"]]
    # a call's own threshold wins over the engine's
    engine.normalize([doc], nil_threshold=0)
    assert doc.annotations[0].concept_ids


def test_species_are_read_as_ids_words_or_kb_names(linker):
    engine = given(linker)
    assert engine.taxa_of("NCBITaxon:10116") == ("10116",)
    assert engine.taxa_of(" 9606 ") == ("9606",)
    assert engine.taxa_of("mice") == ("10090",)
    assert engine.taxa_of("Rattus norvegicus") == ("10116",)
    with pytest.raises(UserError, match="unknown species 'martian'"):
        engine.taxa_of("martian")


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.5"])
def test_a_threshold_outside_0_1_is_refused(value):
    with pytest.raises(UserError, match="between 0 and 1"):
        checked_threshold(value)


def test_every_answer_carries_a_confidence_but_a_gene_no_name_links(linker):
    """Text answers: the normalizer's confidence, the complement for no match; a gene linked
    by name: the annotator's confidence for that link; a gene no name links: none."""
    from data_tools.formats.mentions_jsonl import confidence_of

    doc = document("BRCA1 and tamoxifen, qzxv blorft, ZZZ9", ("BRCA1", "Gene"),
                   ("tamoxifen", "Chemical"), ("qzxv blorft", "Disease"), ("ZZZ9", "Gene"))
    given(linker, threshold=0.999).normalize([doc])
    gene, chemical, nonsense, unknown = doc.annotations
    assert 0.0 <= confidence_of(gene) <= 1.0
    assert confidence_of(chemical) > 0.9  # an exact name
    assert nonsense.concept_ids == [] and 0.0 <= confidence_of(nonsense) <= 1.0
    assert unknown.concept_ids == [] and confidence_of(unknown) is None
    # the gene's is what annotate's confidence model gives the same link, span taken as sure
    assert confidence_of(gene) == pytest.approx(
        linker.annotator.confidence(Annotation(0, 5, "BRCA1", "Gene", mention_score=1.0,
                                               infons={"link_method": "exact"})), abs=1e-4)
    # linked again at threshold 0 the nonsense gets its concept, and the confidence turns
    # from "the best link is wrong" to "it is right": the two add up to 1
    before = confidence_of(nonsense)
    given(linker, threshold=0.0).normalize([doc])
    assert nonsense.concept_ids and confidence_of(nonsense) == pytest.approx(1 - before,
                                                                             abs=2e-4)
