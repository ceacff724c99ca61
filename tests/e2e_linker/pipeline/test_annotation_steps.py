"""The annotate steps on hand-made annotations, run as a pipeline runs them: each calls its
rule on the batch's annotations (one per kept span) and leaves the others alone."""

from __future__ import annotations

import numpy as np

from data_tools.documents import Annotation, Document, Passage
from data_tools.kb import KB, Concept
from e2e_linker.collective.span_selection import SpanPrediction
from e2e_linker.lexical.abbreviations import scan_documents
from e2e_linker.pipeline.annotation_steps import AnnotationStep
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.step import STEPS

KB_ = KB([Concept("D010001", "Osteitis Deformans", ["PDB"], "Disease"),
          Concept("C051615", "transgelin", [], "Chemical", gene_product=True),
          Concept("D015738", "Famotidine", [], "Chemical"),
          Concept("D009765", "Obesity", ["OB"], "Disease"),
          Concept("1234", "TP53", [], "Gene", taxon="9606"),
          Concept("6876", "TAGLN", ["transgelin"], "Gene", taxon="9606")])


class FakeLinker:
    """The species check: drops the annotations linked to ``FLY`` (and records the call)."""

    def __init__(self):
        self.calls = 0
        #: the taxa above a species the ``higher_taxa`` step reads
        self.higher_taxa = frozenset({"NCBITaxon:4751"})

    def drop_unnamed_species(self, annotations, spans, docs):
        self.calls += 1
        assert len(annotations) == len(spans) and len(docs) == 1
        return [None if a is not None and a.concept_ids == ["FLY"] else a
                for a in annotations]


def batch(text: str, *mentions: tuple, model_types=("Chemical", "Disease")) -> Batch:
    """A batch of one document whose kept spans are ``mentions``: (text, type, concept ID,
    link method), each the first occurrence of its text not yet taken."""
    docs = [Document(id="d", passages=[Passage(offset=0, text=text)])]
    anns, kept, taken = [], [], set()
    for mention, type_, cid, method in mentions:
        start = text.index(mention)
        while start in taken:
            start = text.index(mention, start + 1)
        taken.add(start)
        anns.append(Annotation(start, start + len(mention), mention, type_, [cid],
                               infons={"link_method": method}))
        kept.append(SpanPrediction(0, start, start + len(mention), 0.9, type_, np.zeros(2)))
    return Batch(docs, scan_documents(docs), FakeLinker(), 0.5, 0.5, kb=KB_,
                 model_types=model_types, kept=kept, annotations=anns)


def run(name: str, b: Batch, **params) -> list[Annotation | None]:
    STEPS[name](**params).run(b)
    return b.annotations


def test_every_annotate_step_is_tested_here():
    annotate = {n for n, c in STEPS.items() if issubclass(c, AnnotationStep)}
    assert all(STEPS[n].stage == "annotate" for n in annotate)
    assert annotate == {"gene_apposition_links", "type_from_concept", "gene_products",
                        "gene_product_genes",
                        "no_single_gene", "gene_families", "gene_false_alarms",
                        "gene_short_forms", "undefined_short_forms", "disease_symbols",
                        "redefined_short_forms", "sequence_chemicals", "gene_modifiers",
                        "unnamed_species", "higher_taxa"}


def test_gene_apposition_links():
    """A name the model kept right before a bracketed Gene, linked to a gene product, becomes
    that gene, with its repeat; the annotations at the other places stay."""
    out = run("gene_apposition_links", batch(
        "transgelin (TAGLN) and transgelin and Famotidine (TAGLN) rose.",
        ("transgelin", "Chemical", "C051615", "dense"), ("TAGLN", "Gene", "6876", "exact"),
        ("transgelin", "Chemical", "C051615", "dense"),
        ("Famotidine", "Chemical", "D015738", "exact"), ("TAGLN", "Gene", "6876", "exact"),
        model_types=("Chemical", "Disease", "Gene")))
    assert [(a.type, a.concept_ids) for a in out] == [
        ("Gene", ["6876"]), ("Gene", ["6876"]), ("Gene", ["6876"]), ("Chemical", ["D015738"]),
        ("Gene", ["6876"])]
    assert out[0].infons["link_method"] == "apposition"


def test_type_from_concept():
    out = run("type_from_concept", batch("PDB was seen.", ("PDB", "Chemical", "D010001", "exact")))
    assert out[0].type == "Disease"


def test_gene_products():
    out = run("gene_products", batch("transgelin and famotidine",
                                     ("transgelin", "Chemical", "C051615", "exact"),
                                     ("famotidine", "Chemical", "D015738", "exact")))
    assert out[0] is None and out[1] is not None


def test_gene_product_genes():
    out = run("gene_product_genes", batch("transgelin, TP53 and famotidine",
                                          ("transgelin", "Gene", "C051615", "dense"),
                                          ("TP53", "Gene", "1234", "exact"),
                                          ("famotidine", "Chemical", "D015738", "exact"),
                                          model_types=("Chemical", "Disease", "Gene")))
    assert out[0] is None and out[1] is not None and out[2] is not None


def test_no_single_gene():
    out = run("no_single_gene", batch("c.686C>G and p53", ("G", "Gene", "1234", "exact"),
                                      ("p53", "Gene", "1234", "exact"),
                                      model_types=("Chemical", "Disease", "Gene")))
    assert out[0] is None and out[1] is not None


def test_gene_families_asks_the_linkers_family_model():
    from e2e_linker.collective.confidence import ConfidenceModel
    from e2e_linker.collective.gene_families import GeneMentionModel
    from e2e_linker.collective.gene_ranking import GeneRanking

    b = batch("Notch signaling and TP53 and Notch alone",
              ("Notch", "Gene", "1234", "exact"), ("TP53", "Gene", "1234", "exact"),
              ("Notch", "Gene", "1234", "exact"), model_types=("Gene",))
    b.linker.genes = GeneRanking()
    b.linker.gene_families = None  # a model without the file: nothing dropped
    assert all(a is not None for a in run("gene_families", b))
    b.linker.gene_families = GeneMentionModel(ConfidenceModel({"next=signaling": 4.0},
                                                              bias=-2.0))
    out = run("gene_families", b)
    assert out[0] is None and out[1] is not None and out[2] is not None
    b.annotations[0] = Annotation(0, 5, "Notch", "Gene", ["1234"])
    assert run("gene_families", b, threshold=0.99)[0] is not None  # p = 0.88 < 0.99


def test_gene_false_alarms_asks_the_linkers_false_alarm_model_only():
    from e2e_linker.collective.confidence import ConfidenceModel
    from e2e_linker.collective.gene_families import GeneMentionModel
    from e2e_linker.collective.gene_ranking import GeneRanking

    b = batch("LSK cells and TP53 in LSK", ("LSK", "Gene", "16818", "exact"),
              ("TP53", "Gene", "7157", "exact"), ("LSK", "Gene", "16818", "exact"),
              model_types=("Gene",))
    b.linker.genes = GeneRanking()
    b.linker.gene_false_alarms = None  # a model without the file: nothing dropped
    b.linker.gene_families = GeneMentionModel(ConfidenceModel({"next=cells": 4.0}, bias=-2.0))
    assert all(a is not None for a in run("gene_false_alarms", b))  # not the family model's
    b.linker.gene_false_alarms = b.linker.gene_families
    out = run("gene_false_alarms", b)
    assert out[0] is None and out[1] is not None and out[2] is not None


def test_gene_short_forms():
    text = "The von Hippel-Lindau tumor suppressor gene (VHL) is lost in VHL."
    out = run("gene_short_forms", batch(text, ("VHL", "Disease", "D006623", "exact"),
                                        ("VHL", "Disease", "D006623", "exact")))
    assert out == [None, None]


def test_undefined_short_forms_reads_its_max_length():
    def one():
        return batch("DM patients.", ("DM", "Disease", "D003920", "exact"))

    assert run("undefined_short_forms", one()) == [None]
    assert run("undefined_short_forms", one(), max_length=1)[0] is not None


def test_disease_symbols():
    out = run("disease_symbols", batch("Loss of RB1 in retinoblastoma.",
                                       ("RB1", "Disease", "D012175", "exact"),
                                       ("retinoblastoma", "Disease", "D012175", "exact")))
    assert out[0] is None and out[1] is not None


def test_redefined_short_forms():
    text = "Otilonium bromide (OB) was compared with placebo. OB was well tolerated."
    out = run("redefined_short_forms", batch(text, ("OB", "Disease", "D009765", "exact"),
                                             ("OB", "Disease", "D009765", "exact")))
    assert out == [None, None]


def test_sequence_chemicals():
    out = run("sequence_chemicals", batch("The arginine residue; glycine 5 mg daily.",
                                          ("arginine", "Chemical", "D001120", "exact"),
                                          ("glycine", "Chemical", "D005998", "exact")))
    assert out[0] is None and out[1] is not None


def test_gene_modifiers_reads_its_types():
    def one():
        return batch("Serum creatine kinase and the retinoblastoma gene.",
                     ("creatine", "Chemical", "D003401", "exact"),
                     ("retinoblastoma", "Disease", "D012175", "exact"))

    assert run("gene_modifiers", one()) == [None, None]
    out = run("gene_modifiers", one(), types="chemicals")
    assert out[0] is None and out[1] is not None


def test_unnamed_species_asks_the_linker():
    b = batch("rosy and white", ("rosy", "Gene", "FLY", "exact"),
              ("white", "Gene", "1234", "exact"))
    out = run("unnamed_species", b)
    assert b.linker.calls == 1
    assert out[0] is None and out[1] is not None


def test_higher_taxa_reads_the_linkers_taxa():
    b = batch("fungi and mice", ("fungi", "Species", "NCBITaxon:4751", "exact"),
              ("mice", "Species", "NCBITaxon:10090", "exact"), model_types=("Species",))
    out = run("higher_taxa", b)
    assert out[0] is None and out[1] is not None


def test_higher_taxa_leaves_the_taxonomy_unread_without_a_species():
    """Text that names no organism does not pay for the taxonomy's parse."""
    b = batch("aspirin", ("aspirin", "Chemical", "D001241", "exact"))

    class Unread(FakeLinker):
        @property
        def higher_taxa(self):
            raise AssertionError("the taxonomy was read")

        @higher_taxa.setter
        def higher_taxa(self, value):
            pass

    b.linker = Unread()
    out = run("higher_taxa", b)
    assert out[0] is not None

