"""eval.error_classes on hand-made documents: one gold mention of each class."""

from __future__ import annotations

from data_tools.documents import Annotation, Document, Passage
from eval.error_classes import (
    dense_only_links,
    gene_id_class,
    gold_classes,
    markdown,
    vocabularies,
)

TEXT = "IL-8 and aspirin raised TNF in chronic asthma patients with Stat3 and p53 loss."


def _doc(spans: list[tuple[str, str, list[str]]]) -> Document:
    """A document of :data:`TEXT` with an annotation for each (text, type, IDs), at the text's
    first occurrence."""
    doc = Document("1", [Passage(0, TEXT, {})])
    for n, (span, type_, ids) in enumerate(spans):
        start = TEXT.index(span)
        doc.add_annotation(Annotation(start, start + len(span), span, type_, ids, id=str(n)))
    return doc


GOLD = _doc([("aspirin", "Chemical", ["D001241"]),            # right
             ("TNF", "Gene", ["7124"]),                         # wrong ID, other species
             ("Stat3", "Gene", ["6774", "20848"]),              # wrong ID, one of several
             ("p53", "Gene", ["7157"]),                         # wrong ID, same species
             ("IL-8", "Gene", ["3576"]),                        # typed Chemical
             ("chronic asthma", "Disease", ["D001249"]),        # a shorter span predicted
             ("patients", "Species", ["9606"]),                 # not a scored type
             ("loss", "Disease", ["D000001"])])                 # missed
PRED = _doc([("aspirin", "Chemical", ["D001241"]),
             ("TNF", "Gene", ["21926"]),
             ("Stat3", "Gene", ["20848"]),
             ("p53", "Gene", ["7161"]),
             ("IL-8", "Chemical", ["D016209"]),
             ("asthma", "Disease", ["D001249"]),
             ("patients", "Disease", ["D000002"]),                # on unscored gold only
             ("raised", "Chemical", ["D000003"])])                # meets no gold
TAXA = {"7124": "9606", "21926": "10090", "6774": "9606", "20848": "10090", "7157": "9606",
        "7161": "9606"}
TYPES = ("Chemical", "Disease", "Gene")


def test_every_gold_mention_falls_in_one_class_and_stray_predictions_are_counted():
    found = gold_classes([GOLD], [PRED], TYPES, taxa=TAXA, examples=1)
    counts, shown = found.counts, found.examples
    assert counts == {"right": 1, "wrong_id": 3, "wrong_id:other_species": 1,
                      # two of the three predicted genes are mouse ones, the gold's human
                      "wrong_id:other_species:document": 1,
                      "wrong_id:one_of_several": 1, "wrong_id:same_species": 1,
                      "other_type": 1, "boundary": 1, "missed": 1, "disjoint": 1,
                      "on_unscored_gold": 1}
    assert shown["boundary"][0]["text"] == "chronic asthma"
    assert shown["boundary"][0]["predicted"][0]["text"] == "asthma"
    assert "chronic asthma" in shown["boundary"][0]["context"]
    assert shown["disjoint"][0]["text"] == "raised"
    assert found.concentration("wrong_id") == {"documents": 1, "in_top_3": 3}
    assert found.concentration("no such class") == {"documents": 0, "in_top_3": 0}


def test_a_wrong_id_from_another_vocabulary_of_the_kb_is_counted_apart():
    """Gold OMIM against a predicted MeSH concept (MEDIC holds both): the guideline's choice; a
    gold mention without an ID (or a prediction without one) is no other vocabulary."""
    gold = _doc([("chronic asthma", "Disease", ["OMIM:600807"]), ("loss", "Disease", ["D000001"]),
                 ("aspirin", "Chemical", [])])
    pred = _doc([("chronic asthma", "Disease", ["MESH:D001249"]),
                 ("loss", "Disease", ["MESH:D000002"]), ("aspirin", "Chemical", ["MESH:D001241"])])
    found = gold_classes([gold], [pred], ("Disease", "Chemical"))
    assert found.counts["wrong_id"] == 3
    assert found.counts["wrong_id:other_vocabulary"] == 1
    assert vocabularies(gold.annotations[0]) == {"OMIM"}
    assert vocabularies(pred.annotations[0]) == {""}


def test_an_other_species_error_is_the_documents_or_the_mentions():
    """Where most predicted genes are of the gold genes' main species, a mention linked to
    another species is the mention's error; where most are not, the document's."""
    from eval.error_classes import main_taxon

    assert main_taxon(GOLD.annotations, TAXA) == "9606"
    assert main_taxon(PRED.annotations, TAXA) == "10090"
    assert main_taxon([], TAXA) is None
    human_p53 = _doc([("TNF", "Gene", ["21926"]), ("Stat3", "Gene", ["6774"]),
                      ("p53", "Gene", ["7157"])])
    counts = gold_classes([GOLD], [human_p53], TYPES, taxa=TAXA).counts
    assert counts["wrong_id:other_species:mention"] == 1
    assert "wrong_id:other_species:document" not in counts


def test_a_run_with_the_gate_off_splits_the_misses():
    gate_off = _doc([("loss", "Disease", ["D000001"])])
    counts = gold_classes([GOLD], [PRED], TYPES, taxa=TAXA, gate_off=[gate_off]).counts
    assert counts["missed"] == 1 and counts["missed_gated"] == 1
    counts = gold_classes([GOLD], [PRED], TYPES, taxa=TAXA, gate_off=[_doc([])]).counts
    assert counts["missed_never_kept"] == 1 and "missed_gated" not in counts


def test_without_taxa_wrong_gene_ids_are_not_split_and_no_examples_are_kept():
    found = gold_classes([GOLD], [PRED], TYPES)
    assert found.counts["wrong_id"] == 3
    assert not any(k.startswith("wrong_id:") for k in found.counts)
    assert found.examples == {}


def test_gene_id_class_reads_the_taxa_of_both_sides():
    gold = Annotation(0, 3, "TNF", "Gene", ["NCBIGene:7124"])
    assert gene_id_class(gold, Annotation(0, 3, "TNF", "Gene", ["NCBIGene:21926"]),
                         TAXA) == "other_species"
    assert gene_id_class(gold, Annotation(0, 3, "TNF", "Gene", ["7157"]), TAXA) \
        == "same_species"
    # an unknown gene is another species: nothing says it shares the gold's
    assert gene_id_class(gold, Annotation(0, 3, "TNF", "Gene", ["999"]), TAXA) \
        == "other_species"


def test_the_table_has_a_column_for_each_class_seen_and_a_row_for_its_spread():
    found = gold_classes([GOLD], [PRED], TYPES)
    table = markdown({"model": "shipped", "annotate_options": "default", "machine": "a CPU",
                      "rows": [{"corpus": "biored:dev", "types": list(TYPES), "gold": 7,
                                "counts": dict(found.counts),
                                "concentration": {n: found.concentration(n)
                                                  for n in found.counts}}]})
    header, rule, row = table.splitlines()[2:5]
    assert header.split(" | ")[2:5] == ["right", "wrong_id", "other_type"]
    assert "missed_gated" not in header
    assert row.startswith("| biored:dev (Chemical, Disease, Gene) | 7 | 1 | 3 | 1 |")
    assert "| biored:dev | wrong_id | 3 | 1 | 3 |" in table
    assert "| biored:dev | right |" not in table


def test_dense_only_links_are_counted_right_and_all_by_mention_score_band():
    off = _doc([("aspirin", "Chemical", ["D001241"]), ("raised", "Chemical", ["D000003"]),
                ("TNF", "Gene", ["21926"])])
    scores = {"aspirin": 0.999, "raised": 0.95, "TNF": 0.999}
    for ann in off.annotations:
        ann.mention_score = scores[ann.text]
        ann.infons["link_method"] = "dense" if ann.type != "Gene" else "exact"
    found = dense_only_links([GOLD], [off], TYPES)
    assert found == {"by_score": {"0": {"links": 0, "right": 0},
                                  "0.9": {"links": 1, "right": 0},
                                  "0.98": {"links": 0, "right": 0},
                                  "0.995": {"links": 1, "right": 1}}}
    table = markdown({"model": "shipped", "annotate_options": "default", "machine": "a CPU",
                      "rows": [{"corpus": "biored:dev", "types": list(TYPES), "gold": 7,
                                "counts": {"right": 1}, "dense_only_links": found}]})
    assert "| biored:dev | 1 / 2 | 0 / 0 | 0 / 1 | 0 / 0 | 1 / 1 |" in table
    assert "spelling share" not in table


def test_dense_only_links_by_spelling_read_every_name_of_the_linked_concept_case_folded():
    off = _doc([("aspirin", "Chemical", ["D001241"]), ("raised", "Chemical", ["D000003"]),
                ("chronic asthma", "Disease", ["D001249"])])
    for ann in off.annotations:
        ann.mention_score = 0.5
        ann.infons["link_method"] = "dense"
    names = {"D001241": ["Acetylsalicylic Acid", "ASPIRIN"], "D000003": ["Abattoirs"],
             "D001249": ["Asthma"]}
    found = dense_only_links([GOLD], [off], TYPES, names=lambda cid: names.get(cid, []))
    # "aspirin" is spelt whole by its second name (share 1.0, right); "chronic asthma" (right)
    # shares only "asthma"'s 6 of its 13 trigrams (0.46); "raised" none of "abattoirs"'s
    assert found["by_spelling"] == {"0": {"links": 1, "right": 0},
                                    "0.25": {"links": 1, "right": 1},
                                    "0.5": {"links": 0, "right": 0},
                                    "0.75": {"links": 0, "right": 0},
                                    "0.9": {"links": 1, "right": 1}}
    table = markdown({"model": "shipped", "annotate_options": "default", "machine": "a CPU",
                      "rows": [{"corpus": "biored:dev", "types": list(TYPES), "gold": 7,
                                "counts": {"right": 1}, "dense_only_links": found}]})
    assert "| biored:dev | 2 / 3 | 0 / 1 | 1 / 1 | 0 / 0 | 0 / 0 | 1 / 1 |" in table
