"""KB object semantics: merging, names, alt IDs, hashing and TSV persistence."""

from __future__ import annotations

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
