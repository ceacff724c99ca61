"""The packed IVF-PQ index: plain arrays in, the same searches out."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.backends import SearchParams, build_faiss
from e2e_linker.kb_search.packed_index import (
    PackedInfo,
    add_name_hashes,
    coverage,
    load_coverage,
    name_hashes,
    names_digest,
    read_info,
    read_name_hashes,
    read_packed,
    save_coverage,
    write_packed,
)


def _vectors(n: int = 4000, dim: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _info(n: int, dim: int = 32) -> PackedInfo:
    return PackedInfo(fingerprint="f" * 16, names_digest="d" * 16, names=n, dim=dim, nlist=16,
                      pq_bytes=8, kb="test")


def test_a_packed_index_searches_exactly_as_the_index_it_was_packed_from(tmp_path):
    vectors = _vectors()
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16, train_size=4000),
                        progress=False)
    path = write_packed(index, tmp_path / "kb_index.safetensors", _info(len(vectors)))
    again = read_packed(path)
    assert again.ntotal == index.ntotal and again.nlist == index.nlist
    index.nprobe = again.nprobe = 16  # every list: the coarse quantizers' kinds do not matter
    queries = _vectors(50, seed=1)
    d1, i1 = index.search(queries, 20)
    d2, i2 = again.search(queries, 20)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, rtol=1e-5, atol=1e-5)


def test_the_header_says_what_the_index_was_built_for(tmp_path):
    vectors = _vectors(3000)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16, train_size=3000),
                        progress=False)
    path = write_packed(index, tmp_path / "x.safetensors", _info(3000))
    assert read_info(path) == _info(3000)


def test_only_numbers_are_stored(tmp_path):
    from safetensors.numpy import load_file

    vectors = _vectors(3000)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16, train_size=3000),
                        progress=False)
    path = write_packed(index, tmp_path / "x.safetensors", _info(3000))
    arrays = load_file(str(path))
    assert set(arrays) == {"coarse_centroids", "pq_codebooks", "codes", "row_ids", "list_sizes"}
    assert arrays["codes"].shape == (3000, 8) and arrays["codes"].dtype == np.uint8
    assert sorted(arrays["row_ids"].tolist()) == list(range(3000))


def test_a_wrong_count_or_another_file_is_refused(tmp_path):
    from safetensors.numpy import save_file

    vectors = _vectors(3000)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16, train_size=3000),
                        progress=False)
    with pytest.raises(ValueError, match="info says"):
        write_packed(index, tmp_path / "x.safetensors", _info(2999))
    other = tmp_path / "other.safetensors"
    save_file({"w": np.zeros(3, np.float32)}, str(other))
    with pytest.raises(ValueError, match="not a packed KB index"):
        read_info(other)


def test_the_names_digest_is_the_key_of_the_name_list():
    assert names_digest(["a", "b"]) == names_digest(["a", "b"])
    assert names_digest(["a", "b"]) != names_digest(["b", "a"])
    assert names_digest(["a\nb"]) == names_digest(["a", "b"])  # names never hold a newline


def test_coverage_pairs_each_occurrence_of_a_name_in_order():
    packed = ["a", "b", "c", "b", "d"]
    kb = ["x", "a", "b", "b", "d", "b"]  # x added, c dropped, a third "b" added
    held = coverage(name_hashes(packed), kb)
    assert held.kb_rows.tolist() == [1, 2, -1, 3, 4]
    assert held.added.tolist() == [0, 5] and held.removed == 1
    assert held.added_hashes.tolist() == name_hashes(["x", "b"]).tolist()  # rows 0 and 5
    same = coverage(name_hashes(packed), packed)
    assert same.kb_rows.tolist() == [0, 1, 2, 3, 4] and not len(same.added)


def test_a_kept_coverage_is_read_back_and_a_damaged_one_refused(tmp_path):
    from safetensors.numpy import save_file

    held = coverage(name_hashes(["a", "b", "c", "b", "d"]), ["x", "a", "b", "b", "d", "b"])
    path = tmp_path / "kb.covered-by-d.safetensors"
    save_coverage(path, held)
    back = load_coverage(path, 5, 6)
    assert back.kb_rows.tolist() == held.kb_rows.tolist()
    assert back.added.tolist() == held.added.tolist()
    assert back.added_hashes.tolist() == held.added_hashes.tolist()
    save_file({"kb_rows": held.kb_rows, "added": held.added}, str(path))  # kept before them
    assert load_coverage(path, 5, 6).added_hashes is None
    save_file({"kb_rows": held.kb_rows, "added": held.added,
               "added_hashes": held.added_hashes[:1]}, str(path))  # not one per added row
    assert load_coverage(path, 5, 6) is None
    save_coverage(path, held)
    assert load_coverage(path, 5, 7) is None and load_coverage(path, 4, 6) is None  # other sizes
    assert load_coverage(tmp_path / "absent.safetensors", 5, 6) is None
    path.write_bytes(path.read_bytes()[:40])  # cut short
    assert load_coverage(path, 5, 6) is None
    twice = {"kb_rows": np.array([1, 1, -1, 3, 4]), "added": np.array([0, 5])}  # row 2 never
    save_file(twice, str(path))
    assert load_coverage(path, 5, 6) is None
    save_file({"kb_rows": held.kb_rows.astype(np.int32), "added": held.added}, str(path))
    assert load_coverage(path, 5, 6) is None  # not the dtype written


def test_how_much_change_a_packed_index_may_serve():
    packed = [f"name {i}" for i in range(100)]
    assert coverage(name_hashes(packed), packed + ["new"] * 10).within(0.10)  # 10 of 110
    assert not coverage(name_hashes(packed), packed + ["new"] * 12).within(0.10)
    assert coverage(name_hashes(packed), packed[10:]).within(0.10)  # 10 of 100 dropped
    assert not coverage(name_hashes(packed), packed[11:]).within(0.10)


def test_a_part_of_the_packed_list_is_narrowed_not_within():
    """More than the share dropped, at most the share added: a part of the packed KB; more
    added: another KB, neither."""
    packed = [f"name {i}" for i in range(100)]
    for part, within, narrowed in ((packed[10:], True, False), (packed[11:], False, True),
                                   (packed[::4], False, True),
                                   (packed[::4] + ["new"] * 2, False, True),  # 2 of 27
                                   (packed[::4] + ["new"] * 3, False, False)):  # 3 of 28
        held = coverage(name_hashes(packed), part)
        assert (held.within(0.10), held.narrowed(0.10)) == (within, narrowed), len(part)
        assert held.kb_size == len(part)


def test_name_hashes_are_written_with_the_index_or_added_to_an_old_file(tmp_path):
    from safetensors import safe_open

    vectors = _vectors(3000)
    index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=8, ivf_nlist=16, train_size=3000),
                        progress=False)
    names = [f"name {i}" for i in range(3000)]
    info = PackedInfo(fingerprint="f" * 16, names_digest=names_digest(names), names=3000,
                      dim=32, nlist=16, pq_bytes=8, kb="test")
    old = write_packed(index, tmp_path / "old.safetensors", info)
    assert read_name_hashes(old) is None and not read_info(old).hashed
    new = write_packed(index, tmp_path / "new.safetensors", info, name_hashes(names))
    assert read_info(new).hashed
    np.testing.assert_array_equal(read_name_hashes(new), name_hashes(names))
    with pytest.raises(ValueError, match="another name list"):
        add_name_hashes(old, names[::-1])
    add_name_hashes(old, names)
    with safe_open(str(old), framework="numpy") as a, \
            safe_open(str(new), framework="numpy") as b:  # as if packed with them
        assert a.metadata() == b.metadata() and sorted(a.keys()) == sorted(b.keys())
        for key in a.keys():
            np.testing.assert_array_equal(a.get_tensor(key), b.get_tensor(key))
    with pytest.raises(ValueError, match="name hashes for an index"):
        write_packed(index, tmp_path / "bad.safetensors", info, name_hashes(names[:10]))
