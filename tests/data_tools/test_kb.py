"""KB object semantics: merging, names, alt IDs, hashing and TSV persistence."""

from __future__ import annotations

import pytest

from data_tools.documents import FormatError
from data_tools.kb import KB, Concept


def _kb() -> KB:
    return KB([Concept("MESH:D1", "Headache", ["cephalalgia", "headache"], "Disease", "x", ["99"]),
               Concept("D2", "Aspirin", [], "Chemical", "y")])


def test_names_dedupe_and_prefix_stripping():
    kb = _kb()
    assert "D1" in kb and "MESH:D1" in kb
    assert kb.names() == [("Headache", "D1"), ("cephalalgia", "D1"), ("Aspirin", "D2")]
    assert kb.resolve("99") == "D1" and kb.get("99").name == "Headache"


def test_merge_unions_names_and_keeps_first_type():
    other = KB([Concept("D1", "head pain", [], "Chemical", "z")])
    merged = _kb().merge(other)
    assert merged.get("D1").synonyms == ["cephalalgia", "headache", "head pain"]
    assert merged.get("D1").type == "Disease"
    assert len(merged) == 2 and merged.num_names == 4


def test_hash_is_content_only_and_save_load_round_trips(tmp_path):
    a = _kb()
    b = KB(reversed(list(_kb())))
    assert a.content_hash() == b.content_hash()
    a.save(tmp_path / "kb.tsv")
    loaded = KB.load(tmp_path / "kb.tsv")
    assert loaded.content_hash() == a.content_hash()
    assert loaded.resolve("99") == "D1"
    a.add_names("D2", ["ASA"])
    assert a.content_hash() != b.content_hash()


def test_filter_by_type_handles_joined_types():
    kb = KB([Concept("D3", "Lithium", [], "Chemical|Disease"), *_kb()])
    assert sorted(c.id for c in kb.filter(["Disease"])) == ["D1", "D3"]


def test_hash_of_a_kb_without_taxa_is_unchanged():
    """The value computed before ``Concept.taxon`` existed: model manifests record such hashes."""
    assert _kb().content_hash() == \
        "c822669b778559865ab24d557172826d4d6d9ffb9a473ef380fd7c456031a0d2"


def test_taxon_enters_the_hash_and_survives_merge_save_and_load(tmp_path):
    plain = KB([Concept("7157", "TP53", ["p53"], "Gene", "NCBI Gene")])
    human = KB([Concept("7157", "TP53", ["p53"], "Gene", "NCBI Gene", taxon="9606")])
    assert plain.content_hash() != human.content_hash()
    merged = plain.merge(KB([Concept("7157", "LFS1", [], "Gene", "HGNC", taxon="9606")]))
    assert merged.get("7157").taxon == "9606"  # an empty taxon is filled by a merge
    kept = human.merge(KB([Concept("7157", "TP53", [], "Gene", "x", taxon="10090")]))
    assert kept.get("7157").taxon == "9606"  # a set one is not overwritten
    both = KB([*_kb(), Concept("22059", "Trp53", [], "Gene", "NCBI Gene", taxon="10090")])
    both.save(tmp_path / "kb.tsv")
    lines = (tmp_path / "kb.tsv").read_text().splitlines()
    assert [len(line.split("\t")) for line in lines] == [6, 6, 7]  # the 7th only where set
    loaded = KB.load(tmp_path / "kb.tsv")
    assert loaded.get("22059").taxon == "10090" and loaded.get("D1").taxon == ""
    assert loaded.content_hash() == both.content_hash()
    assert KB(c for c in both).filter(["Gene"]).get("22059").taxon == "10090"


def test_files_saved_before_taxa_still_load(tmp_path):
    path = tmp_path / "old.tsv"
    path.write_text("D1\tDisease\tx\t99\tHeadache\tcephalalgia|headache\n"
                    "D2\tChemical\ty\t\tAspirin\t\n", encoding="utf-8")
    assert KB.load(path).content_hash() == _kb().content_hash()
    path.write_text("D1\tDisease\n", encoding="utf-8")
    with pytest.raises(FormatError, match="6 or 7 columns"):
        KB.load(path)


def test_concept_types_split_and_skip_empty():
    assert Concept("C1", "x", type="Chemical|Gene").types() == ["Chemical", "Gene"]
    assert Concept("C2", "y").types() == []
