"""The entity index of ``linker annotate`` on a hand-made index: ties toward the higher row,
the two type policies, concept scores and per-concept name caps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from data_tools.kb import KB, Concept
from e2e_linker.console import VERBOSE_ENV
from e2e_linker.kb_search.entity_index import EntityIndex, kb_names
from tests.helpers.tiny import counted_encodes


def _index() -> EntityIndex:
    # rows 0 and 2 have the same vector (a name two concepts share); row 1 is a Disease name a
    # little off the query; row 3 is a Disease name in the opposite direction
    names = ["lithium", "lithium toxicity", "lithium carbonate", "mania"]
    concept_ids = ["C1", "D1", "C2", "D2"]
    types = ["Chemical", "Disease", "Chemical", "Disease"]
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [1.0, 0.0], [-1.0, 0.0]], np.float16)
    return EntityIndex(names, concept_ids, types, vectors, kind="exact")


Q = np.array([[1.0, 0.0]], np.float32)


def test_ties_go_to_the_higher_row():
    scores, rows = _index().search(Q, k=4)
    assert rows.tolist() == [[2, 0, 1, 3]]
    assert scores[0].tolist() == pytest.approx([1.0, 1.0, 0.8, -1.0], abs=1e-3)
    assert [cid for cid, _ in _index().link(Q, k=4)[0]] == ["C2", "C1", "D1", "D2"]


def test_rank_last_puts_other_types_after_the_querys_type():
    ranked = _index().link(Q, ["Disease"], k=4)[0]
    assert [cid for cid, _ in ranked] == ["D1", "D2", "C2", "C1"]
    assert ranked[0][1] == pytest.approx(0.8, abs=1e-3)
    chemical = _index().link(Q, ["Chemical"], k=4, type_policy="rank_last")[0]
    assert [cid for cid, _ in chemical] == ["C2", "C1", "D1", "D2"]


def test_filter_drops_other_types():
    assert [cid for cid, _ in _index().link(Q, ["Disease"], k=4, type_policy="filter")[0]] == \
        ["D1", "D2"]
    # a query without a type is not filtered
    assert [cid for cid, _ in _index().link(Q, [None], k=4, type_policy="filter")[0]] == \
        ["C2", "C1", "D1", "D2"]


def test_a_joined_type_matches_each_of_its_parts():
    index = EntityIndex(["x", "y"], ["X", "Y"], ["Chemical|Disease", "Chemical"],
                        np.array([[0.6, 0.8], [1.0, 0.0]], np.float16), kind="exact")
    assert [cid for cid, _ in index.link(Q, ["Disease"], type_policy="filter")[0]] == ["X"]


def test_only_k_names_are_searched_and_a_concept_appears_once():
    index = EntityIndex(["a", "a2", "b"], ["A", "A", "B"], ["T", "T", "T"],
                        np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]], np.float16), kind="exact")
    assert [cid for cid, _ in index.link(Q, k=3)[0]] == ["A", "B"]
    assert [cid for cid, _ in index.link(Q, k=2)[0]] == ["A"]  # both top rows are A's names


def test_bad_policy_and_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="type_policy"):
        _index().link(Q, type_policy="prefer")
    with pytest.raises(ValueError, match="same length"):
        EntityIndex(["a"], ["A", "B"], ["T"], np.zeros((1, 2), np.float16), kind="exact")


def test_empty_queries_and_kb_names_cap():
    scores, rows = _index().search(np.zeros((0, 2), np.float32), k=3)
    assert scores.shape == rows.shape == (0, 3)
    kb = KB([Concept("A", "a1", ["a2", "a3"], "T"), Concept("B", "b1", [], "T")])
    assert kb_names(kb) == [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B")]
    assert kb_names(kb, 2) == [("a1", "A"), ("a2", "A"), ("b1", "B")]


def test_kb_name_columns_are_the_names_with_their_concepts_types():
    from e2e_linker.kb_search.entity_index import kb_name_columns

    kb = KB([Concept("A", "a1", ["a2", "a3"], "T"), Concept("B", "b1", [], ""),
             Concept("C", "c1", ["c2"], "T|U")])
    for cap in (None, 1, 2):
        names, cids, types = kb_name_columns(kb, cap)
        assert list(zip(names, cids, strict=True)) == kb_names(kb, cap)
        assert types == [kb.concepts[c].type or "" for c in cids]


def test_name_only_types_are_left_out_of_the_index(tiny_encoder):
    """A model's ``lexical_types`` (genes) are linked by name: their names are never
    encoded, and a concept of two types is left out only when both are name-only."""
    from e2e_linker.kb_search.entity_index import kb_name_columns, without_types

    kb = KB([Concept("A", "a1", ["a2"], "Chemical"), Concept("G", "g1", ["g2"], "Gene"),
             Concept("M", "m1", [], "Chemical|Gene")])
    columns = kb_name_columns(kb)
    assert without_types(columns, ()) is columns
    assert without_types(columns, ("Gene",)) == (["a1", "a2", "m1"], ["A", "A", "M"],
                                                 ["Chemical", "Chemical", "Chemical|Gene"])
    assert without_types(columns, ("Gene", "Chemical"))[0] == []
    index = EntityIndex.build(kb, tiny_encoder, cache_dir=False, progress=False,
                              exclude_types=("Gene",))
    assert index.names == ["a1", "a2", "m1"] and len(index.vectors) == 3


def test_a_packed_load_hashes_the_name_list_once(tiny_encoder, tmp_path, monkeypatch):
    """The list's digest keys the packed index's header check and the list's files: computed
    once per build, not once per use (744k names: a tenth of a second each)."""
    import e2e_linker.kb_search.cache as cache_module
    import e2e_linker.kb_search.entity_index as index_module
    import e2e_linker.kb_search.packed_index as packed_module

    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    calls = []
    real = packed_module.names_digest

    def counted(names):
        calls.append(len(names))
        return real(names)

    for module in (cache_module, index_module, packed_module):
        monkeypatch.setattr(module, "names_digest", counted)
    index = EntityIndex.build(kb, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                              packed=packed)
    assert index.searcher.on_demand and calls == [len(index)]


def _big_kb(n: int = 3000):
    import random

    from data_tools.kb import KB, Concept

    rng = random.Random(0)
    syllables = ["ba", "co", "di", "fu", "ga", "hex", "ol", "ine", "yl", "ate", "pro", "tri"]
    kb = KB()
    for i in range(n):
        name = " ".join("".join(rng.choice(syllables) for _ in range(3)) for _ in range(2))
        kb.add(Concept(id=f"C{i:05d}", name=f"{name} {i}", synonyms=[],
                       type="Chemical" if i % 2 else "Disease", source="test"))
    return kb


def _packed_for(kb, encoder, folder):
    from e2e_linker.kb_search.backends import SearchParams, build_faiss
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.entity_index import kb_names
    from e2e_linker.kb_search.packed_index import (
        PackedInfo,
        name_hashes,
        names_digest,
        write_packed,
    )

    names = [n for n, _ in kb_names(kb)]
    cache = VectorStore(folder / "full-cache", encoder)
    vectors = cache.matrix(names, progress=False)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16,
                                                       train_size=len(names)), progress=False)
    path = write_packed(index, folder / "kb_index.safetensors", PackedInfo(
        cache.fingerprint, names_digest(names), len(names), int(vectors.shape[1]), 16, 8, "t"),
        name_hashes(names))
    return path, vectors


def test_a_packed_index_links_as_the_full_one_and_encodes_only_shortlists(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.backends import SearchParams

    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    params = SearchParams(ivf_nprobe=16, shortlist=64)
    index = EntityIndex.build(kb, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                              packed=packed, params=params)
    assert index.searcher.on_demand and index.describe().startswith("packed ivfpq")
    exact = EntityIndex(index.names, index.concept_ids, index.types, full_vectors, kind="exact")
    queries = np.asarray(full_vectors[::300], dtype=np.float32)  # 10 names as queries
    assert [r[0][0] for r in index.link(queries)] == [r[0][0] for r in exact.link(queries)]
    assert 0 < index.searcher.vectors.present <= 10 * 64 < len(index)


def test_the_full_matrix_once_cached_wins_over_the_packed_index(tiny_encoder, tmp_path):
    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    index = EntityIndex.build(kb, tiny_encoder, cache_dir=tmp_path / "full-cache",
                              progress=False, packed=packed)
    assert index.describe() == "exact"


def test_a_packed_index_for_another_name_list_is_not_used(tiny_encoder, tmp_path):
    from e2e_linker.errors import UserError

    packed, _ = _packed_for(_big_kb(), tiny_encoder, tmp_path)
    other = KB([Concept(c.id, f"{c.name} variant", [], c.type, "test")
                for c in _big_kb(2000)])  # no name of the packed list: another KB
    index = EntityIndex.build(other, tiny_encoder, cache_dir=tmp_path / "c2", progress=False,
                              packed=packed)
    assert index.describe() == "exact"  # encoded in full instead
    with pytest.raises(UserError, match="another encoder or KB"):
        EntityIndex.build(other, tiny_encoder, cache_dir=tmp_path / "c2", progress=False,
                          packed=packed, kind="packed")
    with pytest.raises(UserError, match="no packed KB index"):
        EntityIndex.build(other, tiny_encoder, cache_dir=tmp_path / "c2", progress=False,
                          packed=tmp_path / "missing.safetensors", kind="packed")


# ---- a KB that grew beyond the names its packed index holds ----------------------------------

def _grown(kb, added: list[tuple[str, str, str]] = (), dropped: tuple[str, ...] = ()):
    """``kb`` with concepts ``(id, name, type)`` added at the front of the name list (the
    hardest place: every packed row's KB row moves) and the concepts ``dropped`` removed."""
    concepts = [Concept(cid, name, [], type_, "user") for cid, name, type_ in added]
    return KB(concepts + [c for c in kb if c.id not in dropped])


def _exact_twin(index: EntityIndex, encoder, folder) -> EntityIndex:
    """The same KB searched exactly over every name's vector (the reference)."""
    from e2e_linker.kb_search.cache import VectorStore

    vectors = VectorStore(folder, encoder, progress=False).matrix(index.names)
    return EntityIndex(index.names, index.concept_ids, index.types, vectors, kind="exact")


def test_a_kb_that_grew_uses_the_packed_index_and_searches_the_added_names_exactly(
        tiny_encoder, tmp_path, capsys, monkeypatch):
    from e2e_linker.kb_search.backends import SearchParams

    monkeypatch.setenv(VERBOSE_ENV, "1")  # the KB index lines are -v's
    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    grown = _grown(kb, [("MYDRUG001", "zorbanib", ""), ("MYDRUG002", "cotriyl hexfuate", "")])
    encoded: list[str] = []
    encode = tiny_encoder.encode

    def counting(texts, *args, **kwargs):
        encoded.extend(texts)
        return encode(texts, *args, **kwargs)

    tiny_encoder.encode = counting
    try:
        index = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh",
                                  packed=packed, params=SearchParams(ivf_nprobe=16, shortlist=64))
        assert "2 names it lacks are encoded now and searched exactly beside it; 0 names it " \
            "holds that this KB lacks are never returned" in \
            capsys.readouterr().err
        assert index.describe().startswith("packed ivfpq") and "2 names it lacks" in \
            index.describe()
        assert set(encoded) == {"zorbanib", "cotriyl hexfuate"}  # the added names, no other
        assert index.searcher.vectors.source is None  # its rows are its own, as before
        assert "in the search" not in index.describe()
        queries = np.concatenate([encode(["zorbanib", "cotriyl hexfuate"],
                                         dtype=np.float32),
                                  np.asarray(full_vectors[::300], dtype=np.float32)])
        linked = [r[0][0] for r in index.link(queries)]
    finally:
        del tiny_encoder.encode
    exact = _exact_twin(index, tiny_encoder, tmp_path / "reference")
    assert linked[0] == "MYDRUG001" and linked == [r[0][0] for r in exact.link(queries)]
    assert 2 < index.searcher.vectors.present <= 2 + 12 * 64 < len(index)


def test_with_a_whole_shortlist_the_grown_search_is_the_exact_search(tiny_encoder, tmp_path):
    """Every packed row re-ranked: rows, scores and ties as the exact search over the KB gives
    them (the names moved, the added ones and the dropped ones included)."""
    from e2e_linker.kb_search.backends import SearchParams

    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    first = next(iter(kb))
    twin = Concept("TWIN", first.name, [], "Chemical", "user")  # a name the KB already has
    grown = KB([Concept("NEW", "fubaco triyl", [], "Disease", "user"), *kb, twin])
    index = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                              packed=packed, params=SearchParams(ivf_nprobe=16, shortlist=3000))
    assert index.searcher.added_rows.tolist() == [0, len(grown.names()) - 1]
    exact = _exact_twin(index, tiny_encoder, tmp_path / "reference")
    queries = np.asarray(full_vectors[::97], dtype=np.float32)
    got_scores, got_rows = index.search(queries, k=20)
    want_scores, want_rows = exact.search(queries, k=20)
    np.testing.assert_array_equal(got_rows, want_rows)
    np.testing.assert_allclose(got_scores, want_scores, atol=1e-5)
    order = index.search(queries[:1], k=len(index))[1][0].tolist()  # the twin's name: a tie
    assert order.index(len(index) - 1) + 1 == order.index(1)  # the higher row first


def test_a_later_build_reads_the_coverage_the_first_kept(tiny_encoder, tmp_path, monkeypatch):
    """Which names the packed index holds is worked out once per KB name list and kept in the
    cache: a second build with the same list hashes no name and serves the same rows."""
    from e2e_linker.kb_search import cache
    from e2e_linker.kb_search.cache_report import verify_cache

    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    grown = KB([Concept("NEW", "fubaco triyl", [], "Disease", "user"), *kb])
    first = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                              packed=packed)
    assert list((tmp_path / "fresh").rglob("*.covered-by-*.safetensors"))

    def no_hashing(*args, **kwargs):
        raise AssertionError("the kept coverage was not read")

    monkeypatch.setattr(cache, "coverage", no_hashing)
    again = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh",
                              progress=False, packed=packed)
    assert again.searcher.added_rows.tolist() == first.searcher.added_rows.tolist() == [0]
    assert again.searcher.kb_rows.tolist() == first.searcher.kb_rows.tolist()
    monkeypatch.undo()
    # `linker kb info --verify` checks it; a damaged one is worked out again, never used
    kept = next((tmp_path / "fresh").rglob("*.covered-by-*.safetensors"))
    states = {Path(v["file"]).name: v["state"] for v in verify_cache(tmp_path / "fresh")}
    assert states[kept.name] == "ok"
    kept.write_bytes(kept.read_bytes()[:-8])
    states = {Path(v["file"]).name: v["state"] for v in verify_cache(tmp_path / "fresh")}
    assert states[kept.name] == "damaged"
    third = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh",
                              progress=False, packed=packed)
    assert third.searcher.kb_rows.tolist() == first.searcher.kb_rows.tolist()
    states = {Path(v["file"]).name: v["state"] for v in verify_cache(tmp_path / "fresh")}
    assert states[kept.name] == "ok"  # written again


def test_names_the_kb_dropped_are_never_returned(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.backends import SearchParams

    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    gone = [c.id for c in list(kb)[:30]]
    smaller = _grown(kb, dropped=tuple(gone))
    index = EntityIndex.build(smaller, tiny_encoder, cache_dir=tmp_path / "fresh",
                              progress=False, packed=packed,
                              params=SearchParams(ivf_nprobe=16, shortlist=64))
    assert (index.searcher.kb_rows < 0).sum() == 30 and not len(index.searcher.added_rows)
    queries = np.asarray(full_vectors[:30], dtype=np.float32)  # the dropped names themselves
    _, rows = index.search(queries, k=10)
    assert (rows >= 0).all() and (rows < len(index)).all()
    returned = {index.concept_ids[r] for r in rows.ravel().tolist()}
    assert not returned & set(gone)
    exact = _exact_twin(index, tiny_encoder, tmp_path / "reference")
    assert [r[0][0] for r in index.link(queries)] == [r[0][0] for r in exact.link(queries)]


def test_a_kb_that_grew_too_much_is_encoded_whole_and_says_why(tiny_encoder, tmp_path, capsys,
                                                               monkeypatch):
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.packed_index import MAX_CHANGE

    monkeypatch.setenv(VERBOSE_ENV, "1")  # stderr is no terminal here
    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    many = int(MAX_CHANGE * len(kb) * 1.2)
    grown = _grown(kb, [(f"U{i}", f"user compound {i}", "") for i in range(many)])
    index = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh", packed=packed)
    assert f"this KB adds {many:,} names to the model's packed index, more than 10% of its " \
           f"{len(kb) + many:,}, so the packed index is not used: every name is encoded " \
           "instead" in capsys.readouterr().err
    assert index.describe() == "exact"  # today's path: the full matrix
    with pytest.raises(UserError, match="another encoder or KB"):
        EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "c2", progress=False,
                          packed=packed, kind="packed")


def test_a_packed_index_without_name_hashes_serves_only_its_own_list(tiny_encoder, tmp_path,
                                                                     capsys, monkeypatch):
    from safetensors import safe_open
    from safetensors.numpy import save_file

    monkeypatch.setenv(VERBOSE_ENV, "1")  # stderr is no terminal here
    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    with safe_open(str(packed), framework="numpy") as handle:  # as packed before hashes
        meta = handle.metadata()
        arrays = {k: handle.get_tensor(k) for k in handle.keys() if k != "name_hashes"}
    save_file(arrays, str(packed), metadata=meta)
    grown = _grown(kb, [("MYDRUG001", "zorbanib", "")])
    index = EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "fresh", packed=packed)
    assert "which was packed before it recorded its names" in capsys.readouterr().err
    assert index.describe() == "exact"


# ---- a KB that is a part of the names its packed index holds -------------------------------

def _part(kb, keep_every: int = 3, added: list[tuple[str, str, str]] = ()):
    """Every ``keep_every``-th concept of ``kb`` (most of the packed names dropped), with
    concepts ``(id, name, type)`` added at the front: a MEDIC-only KB under a larger one."""
    concepts = [Concept(cid, name, [], type_, "user") for cid, name, type_ in added]
    return KB(concepts + [c for i, c in enumerate(kb) if i % keep_every == 0])


def test_a_part_of_the_packed_kb_is_searched_with_the_rest_masked_in_the_search(tiny_encoder,
                                                                                  tmp_path):
    """Two thirds of the packed names dropped: the index still serves the KB, and a shortlist
    is made of the KB's names only (dropped names taken out after it would leave a third of
    it), so every query gets its k names and the links of the exact search."""
    from e2e_linker.kb_search.backends import SearchParams

    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    part = _part(kb)
    index = EntityIndex.build(part, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                              packed=packed, params=SearchParams(ivf_nprobe=4, shortlist=32))
    assert (index.searcher.kb_rows < 0).sum() == 2000 and not len(index.searcher.added_rows)
    assert "2,000 it holds masked in the search" in index.describe()
    assert "nprobe=12," in index.describe()  # as many of the KB's rows scanned as of all
    queries = np.asarray(full_vectors[::31], dtype=np.float32)  # kept and dropped names
    _, rows = index.search(queries, k=20)
    assert (rows >= 0).all() and (rows < len(index)).all()
    wide = EntityIndex.build(part, tiny_encoder, cache_dir=tmp_path / "fresh", progress=False,
                             packed=packed, params=SearchParams(ivf_nprobe=16, shortlist=64))
    exact = _exact_twin(index, tiny_encoder, tmp_path / "reference")
    assert [r[0][0] for r in wide.link(queries)] == [r[0][0] for r in exact.link(queries)]


def test_a_part_of_the_kb_takes_the_rows_the_models_list_holds(tiny_encoder, tmp_path,
                                                               monkeypatch):
    """The model's KB (the packed names and one of its own) has encoded some rows; a KB that
    is a part of it takes those by name — the name the index lacks too — and encodes only the
    rest, to the same bytes."""
    from e2e_linker.kb_search.backends import SearchParams

    kb = _big_kb()
    packed, full_vectors = _packed_for(kb, tiny_encoder, tmp_path)
    params = SearchParams(ivf_nprobe=4, shortlist=32)
    own = [("MYDRUG001", "zorbanib", "")]
    model = EntityIndex.build(_grown(kb, own), tiny_encoder, cache_dir=tmp_path / "c",
                              progress=False, packed=packed, params=params)
    queries = np.asarray(full_vectors[::30], dtype=np.float32)
    model.search(queries, k=10)
    held = {model.names[r] for r in np.flatnonzero(model.searcher.vectors._have).tolist()}
    EntityIndex.build(_grown(kb, [("OTHER", "fubaco triyl", "")]), tiny_encoder,
                      cache_dir=tmp_path / "c", progress=False, packed=packed,
                      params=params)  # another list, holding none of the part's rows
    encoded = counted_encodes(tiny_encoder, monkeypatch)
    part = EntityIndex.build(_part(kb, added=own), tiny_encoder, cache_dir=tmp_path / "c",
                             progress=False, packed=packed, params=params)
    assert "zorbanib" not in encoded  # taken from the model's list, not encoded
    part.search(queries, k=10)
    rows = part.searcher.vectors
    present = np.flatnonzero(rows._have)
    assert rows.source.taken > 0 and not set(encoded) & held
    assert rows.encoded_here + rows.source.taken == len(present)
    mine = {part.names[r]: rows.rows(np.array([r]))[0] for r in present.tolist()}
    theirs = {model.names[r]: model.searcher.vectors.rows(np.array([r]))[0]
              for r in np.flatnonzero(model.searcher.vectors._have).tolist()}
    for name in set(mine) & set(theirs):
        np.testing.assert_array_equal(mine[name], theirs[name])


def test_a_damaged_row_of_the_models_list_is_encoded_instead(tiny_encoder, tmp_path,
                                                             monkeypatch):
    """A row of another list that does not match its sum is never taken."""
    from e2e_linker.kb_search.backends import SearchParams
    from e2e_linker.kb_search.integrity import npy_layout

    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    own = [("MYDRUG001", "zorbanib", "")]
    model = EntityIndex.build(_grown(kb, own), tiny_encoder, cache_dir=tmp_path / "c",
                              progress=False, packed=packed,
                              params=SearchParams(ivf_nprobe=4, shortlist=32))
    rows = model.searcher.vectors
    layout = npy_layout(rows.path)
    with open(rows.path, "r+b") as handle:  # row 0: "zorbanib", encoded with the model
        handle.seek(layout.offset)
        handle.write(b"\x7f" * 8)
    encode = tiny_encoder.encode  # the plain one, for the expected row
    encoded = counted_encodes(tiny_encoder, monkeypatch)
    part = EntityIndex.build(_part(kb, added=own), tiny_encoder, cache_dir=tmp_path / "c",
                             progress=False, packed=packed)
    assert encoded == ["zorbanib"]
    np.testing.assert_array_equal(part.searcher.vectors.rows(np.array([0]))[0],
                                  encode(["zorbanib"], dtype=np.float16)[0])


def test_a_coverage_kept_before_added_hashes_gets_them(tiny_encoder, tmp_path):
    """A list whose coverage was kept without its added names' hashes records them at its next
    load, so that a part of it can take those rows."""
    from dataclasses import replace

    from e2e_linker.kb_search.packed_index import load_coverage, name_hashes, save_coverage

    kb = _big_kb()
    packed, _ = _packed_for(kb, tiny_encoder, tmp_path)
    grown = _grown(kb, [("MYDRUG001", "zorbanib", "")])
    EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "c", progress=False,
                      packed=packed)
    kept = next((tmp_path / "c").rglob("*.covered-by-*.safetensors"))
    old = load_coverage(kept, None, len(grown.names()))
    save_coverage(kept, replace(old, added_hashes=None))
    assert load_coverage(kept, None, len(grown.names())).added_hashes is None
    EntityIndex.build(grown, tiny_encoder, cache_dir=tmp_path / "c", progress=False,
                      packed=packed)
    again = load_coverage(kept, None, len(grown.names()))
    np.testing.assert_array_equal(again.added_hashes, name_hashes(["zorbanib"]))
