"""A compiled KB answers every lookup as the KB it was compiled from."""

from __future__ import annotations

import pytest

from data_tools.kb import KB, Concept
from e2e_linker.compiled_kb.kb_view import CompiledKB, kb_arrays
from e2e_linker.compiled_kb.store import map_array
from e2e_linker.lexical.sieve_stack import ontology_key_index
from e2e_linker.lexical.sieves import NameDictionary
from tests.helpers.small_kb import small_kb


def tricky_kb() -> KB:
    """Alternative IDs claimed twice (the first claim wins), a merge that appends synonyms and
    alternative IDs, a taxon, a gene product, an empty type and name, salts and acids, names
    differing in case and punctuation only, non-ASCII names."""
    kb = small_kb()
    kb.add(Concept("MESH:D000001", "Tiapride Hydrochloride", ["tiapride HCl", "TIAPRIDE"],
                   "Chemical", "mesh", ["C555"]))
    kb.add(Concept("D000002", "Metrizoic Acid", ["Metrizoic acid"], "Chemical", "mesh", ["X1"]))
    kb.add(Concept("D000003", "Café-au-lait spots", ["cafe au lait spots", "β-thalassemia"],
                   "Disease", "medic", ["C555", "X2"]))
    kb.add(Concept("D000001", "Tiapride", ["tiapride base"], "Chemical", "other", ["X2"]))
    kb.add(Concept("7157", "TP53", ["p53", "P-53"], "Gene", "ncbi", [], "9606"))
    kb.add(Concept("22059", "Trp53", ["p53"], "Gene", "ncbi", [], "10090"))
    kb.add(Concept("E1", "", ["nameless but named"], "", ""))
    kb.add(Concept("C001", "ASA", ["aspirin"], "Drug", "extra"))
    kb.add(Concept("D000004", "Caspase 3", ["CASP3"], "Chemical", "mesh", gene_product=True))
    return kb


def compiled_pair(tmp_path, kb: KB) -> list[CompiledKB]:
    """The compiled KB in memory and read back from ``.npy`` files (memory-mapped)."""
    from e2e_linker.kb_search.integrity import save_array

    arrays, meta = kb_arrays(kb)
    for name, array in arrays.items():
        save_array(tmp_path / f"{name}.npy", array)
    mapped = {name: map_array(tmp_path / f"{name}.npy") for name in arrays}
    return [CompiledKB(arrays, meta), CompiledKB(mapped, meta)]


@pytest.mark.parametrize("make", [small_kb, tricky_kb])
def test_the_compiled_kb_is_the_kb(tmp_path, make):
    kb = make()
    for compiled in compiled_pair(tmp_path, kb):
        assert len(compiled) == len(kb)
        assert list(compiled) == list(kb)
        assert compiled.names() == kb.names() and compiled.num_names == kb.num_names
        assert compiled.name_columns() == kb.name_columns()
        assert compiled.types() == kb.types()
        assert compiled.content_hash() == kb.content_hash()
        assert compiled.alternate_ids() == kb.alternate_ids()
        assert compiled.taxa() == kb.taxa()
        assert repr(compiled) == repr(kb)
        assert compiled.filter(["Gene"]).content_hash() == kb.filter(["Gene"]).content_hash()
        asked = [c.id for c in kb] + list(kb.alternate_ids()) + \
            ["MESH:D000002", " C555 ", "unknown", "", "MESH:nothing"]
        for cid in asked:
            assert compiled.resolve(cid) == kb.resolve(cid)
            assert compiled.get(cid) == kb.get(cid)
            assert (cid in compiled) == (cid in kb)
        for cid, concept in kb.concepts.items():
            row = compiled.concepts[cid]
            assert row.type == concept.type and row.name == concept.name
            assert row.all_names() == concept.all_names()
        assert list(compiled.concepts) == list(kb.concepts)
        with pytest.raises(KeyError):
            compiled.concepts["unknown"]


@pytest.mark.parametrize("make", [small_kb, tricky_kb])
def test_the_views_answer_every_id_as_the_kbs_dicts(tmp_path, make):
    # taxa() and concepts look IDs up in the arrays when asked (no dict of every ID is made
    # at load): primary IDs only, a concept without a taxon is no key of taxa()
    kb = make()
    built_taxa = kb.taxa()
    asked = [c.id for c in kb] + list(kb.alternate_ids()) + \
        ["unknown", "", " 7157", "7157 ", 7157, None]
    for compiled in compiled_pair(tmp_path, kb):
        taxa = compiled.taxa()
        assert len(taxa) == len(built_taxa) and bool(taxa) == bool(built_taxa)
        assert list(taxa) == list(built_taxa) and dict(taxa.items()) == built_taxa
        for cid in asked:
            assert (cid in taxa) == (cid in built_taxa)
            assert taxa.get(cid) == built_taxa.get(cid)
            assert (cid in compiled.concepts) == (cid in kb.concepts)
            row = compiled.concepts.get(cid)
            assert (row is None) == (kb.concepts.get(cid) is None)
            if row is not None:
                concept = kb.concepts[cid]
                assert row.type == concept.type and row.id == cid
                assert (row.source, row.taxon, row.gene_product, row.synonyms) == \
                    (concept.source, concept.taxon, concept.gene_product, concept.synonyms)
        # a walk over every concept, as NameDictionary.from_kb makes, reads the columns
        walked = [(cid, row.type, row.name) for cid, row in compiled.concepts.items()]
        assert walked == [(cid, c.type, c.name) for cid, c in kb.concepts.items()]
        assert len(compiled.concepts.items()) == len(kb.concepts)


@pytest.mark.parametrize("make", [small_kb, tricky_kb])
def test_the_compiled_dictionaries_answer_as_the_built_ones(tmp_path, make):
    kb = make()
    built_names, built_keys = NameDictionary.from_kb(kb), ontology_key_index(kb)
    queries = [name for c in kb for name in c.all_names()] + \
        ["tiapride", "metrizoate", "P 53", "CAFE AU LAIT SPOTS", "nothing at all", "", "-"]
    for compiled in compiled_pair(tmp_path, kb):
        names, keys = compiled.name_dictionary(), compiled.ontology_keys()
        for text in queries:
            for type_ in (None, "Chemical", "Disease", "Gene", "Drug", "Species"):
                assert names.lookup(text, type_) == built_names.lookup(text, type_)
                assert keys.unique(text, type_) == built_keys.unique(text, type_)
            assert (text in keys) == (text in built_keys)
