"""Search backends: exact agrees with brute force; approximate ones re-rank exactly; the tie rule."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.backends import (
    EXACT_MAX_NAMES,
    ExactSearch,
    FaissShortlistSearch,
    MaskedIVF,
    SearchParams,
    build_faiss,
    choose_kind,
    estimated_mb,
    make_search,
    masked_nprobe,
)
from e2e_linker.kb_search.top_k import order_ties


def clustered(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    """Vectors around a few hundred centres, like names around concepts (fp16, as cached)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(1, n // 20), dim))
    return (centres[rng.integers(0, len(centres), n)] + 0.3 * rng.normal(size=(n, dim))) \
        .astype(np.float16)


def brute(vectors: np.ndarray, queries: np.ndarray, k: int):
    scores = queries.astype(np.float32) @ vectors.astype(np.float32).T
    rows = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, rows, 1), rows


def test_exact_search_matches_brute_force_across_blocks():
    vectors = clustered(3000)
    queries = np.random.default_rng(1).normal(size=(70, 32)).astype(np.float32)
    search = ExactSearch(vectors, block_rows=700)  # several KB blocks are merged
    scores, rows = search.search(queries, 10)
    want_scores, want_rows = brute(vectors, queries, 10)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-4)
    assert (rows[:, 0] == want_rows[:, 0]).all()


def test_exact_search_handles_empty_inputs():
    search = ExactSearch(clustered(50))
    scores, rows = search.search(np.zeros((0, 32), np.float32), 5)
    assert scores.shape == rows.shape == (0, 5)
    empty = ExactSearch(np.zeros((0, 32), np.float16))
    assert empty.search(np.ones((2, 32), np.float32), 5)[1].shape == (2, 0)


@pytest.mark.parametrize("kind", ["hnsw", "ivfpq"])
def test_approximate_kinds_rerank_exactly_and_are_cached(kind, tmp_path):
    vectors = clustered(4000)
    queries = clustered(50, seed=2).astype(np.float32)
    params = SearchParams(ivf_nlist=32, ivf_nprobe=32, pq_bytes=8, train_size=4000,
                          shortlist=64)
    path = tmp_path / f"{kind}.faiss"
    search = FaissShortlistSearch(kind, vectors, params, path)
    assert path.is_file()
    scores, rows = search.search(queries, 5)
    # every returned score is the true inner product of its row (exact re-rank)
    true = np.einsum("qd,qkd->qk", queries, vectors[rows].astype(np.float32))
    np.testing.assert_allclose(scores, true, rtol=1e-5, atol=1e-4)
    assert (np.diff(scores, axis=1) <= 1e-6).all()
    _, want = brute(vectors, queries, 1)
    assert (rows[:, 0] == want[:, 0]).mean() >= 0.9
    again = FaissShortlistSearch(kind, vectors, params, path)  # read back, not rebuilt
    assert (again.search(queries, 5)[1] == rows).all()
    assert kind in again.describe()


def test_a_masked_search_probes_lists_in_proportion_to_the_rows_it_keeps():
    assert masked_nprobe(64, 2048, 744_000, 744_000) == 64  # nothing masked
    assert masked_nprobe(64, 2048, 744_000, 78_000) == 611  # a tenth kept: ten times the lists
    assert masked_nprobe(64, 2048, 744_000, 100) == 2048  # at most every list
    assert masked_nprobe(64, 2048, 744_000, 0) == 64


def test_a_masked_ivf_search_returns_kept_rows_only_and_fills_its_shortlist():
    """A third of the rows kept: each query's shortlist holds kept rows only, as many as asked,
    and over every list their order is the unmasked search's order of the kept rows."""
    vectors = clustered(3000).astype(np.float32)
    queries = clustered(40, seed=3).astype(np.float32)
    index = build_faiss("ivfpq", vectors, SearchParams(ivf_nlist=16, pq_bytes=8,
                                                       train_size=3000), progress=False)
    index.nprobe = 4
    keep = np.zeros(len(vectors), bool)
    keep[::3] = True
    masked = MaskedIVF(index, keep)
    assert masked.nprobe == 12 and masked.ntotal == len(vectors)
    _, ids = masked.search(queries, 50)
    assert (ids >= 0).all() and keep[ids].all()
    index.nprobe = 16
    whole = MaskedIVF(index, keep)  # every list probed
    all_scores, everything = index.search(queries, len(vectors))
    scores, kept = whole.search(queries, 50)
    for got, row, want, want_rows in zip(scores, kept, all_scores, everything, strict=True):
        assert got.tolist() == want[keep[want_rows]][:50].tolist()  # ties may swap rows
        assert set(row.tolist()) <= set(np.flatnonzero(keep).tolist())


def test_choose_kind_follows_size_and_budget():
    assert choose_kind(EXACT_MAX_NAMES, 384) == "exact"
    assert choose_kind(EXACT_MAX_NAMES + 1, 384) == "hnsw"
    assert choose_kind(700_000, 384) == "hnsw"  # the bc5cdr KB (744k names)
    exact_mb = estimated_mb("exact", 150_000, 384)
    hnsw_mb = estimated_mb("hnsw", 150_000, 384)
    assert choose_kind(150_000, 384, memory_budget_mb=exact_mb + 1) == "exact"
    assert choose_kind(150_000, 384, memory_budget_mb=(exact_mb + hnsw_mb) / 2) == "hnsw"
    assert choose_kind(150_000, 384, memory_budget_mb=1) == "ivfpq"
    assert choose_kind(700_000, 384, memory_budget_mb=1e9) == "hnsw"  # size alone decides


def test_make_search_uses_exact_search_for_tiny_kbs():
    assert isinstance(make_search("hnsw", clustered(100)), ExactSearch)
    with pytest.raises(ValueError):
        make_search("lsh", clustered(100))


def _rss_file_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    return -1


def test_disk_resident_rerank_reads_rows_without_mapping_the_file(tmp_path):
    """Under a memory budget the re-rank store is read with pread: a search leaves none of the
    file mapped in this process, and gives the same results as the mapped store."""
    from e2e_linker.kb_search.backends import RowReader

    vectors = clustered(40_000, dim=64)  # 5 MB of fp16 rows
    np.save(tmp_path / "v.npy", vectors)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    rows = np.array([39_999, 5, 0, 17_000])
    assert (RowReader(mapped).read(rows) == vectors[rows]).all()
    params = SearchParams(ivf_nlist=64, ivf_nprobe=64, pq_bytes=8, train_size=10_000,
                          shortlist=256)
    FaissShortlistSearch("ivfpq", vectors, params, tmp_path / "i.faiss")  # built unmapped
    disk = FaissShortlistSearch("ivfpq", mapped, params, tmp_path / "i.faiss",
                                disk_resident=True)
    assert disk.disk_resident
    kept = FaissShortlistSearch("ivfpq", mapped, params, tmp_path / "i.faiss")
    queries = clustered(300, dim=64, seed=3).astype(np.float32)
    before = _rss_file_kb()
    scores, got = disk.search(queries, 5)  # reads rows from most of the file's pages ...
    assert _rss_file_kb() - before < 1_000  # ... and maps none of them
    want_scores, want = kept.search(queries, 5)
    assert (got == want).all() and np.allclose(scores, want_scores)
    assert _rss_file_kb() - before > 4_000  # the mapped store did map the file


def test_a_memory_budget_makes_the_rerank_store_disk_resident(tmp_path):
    vectors = clustered(20_000, dim=32)
    np.save(tmp_path / "v.npy", vectors)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    params = SearchParams(ivf_nlist=32, pq_bytes=8, train_size=10_000)
    assert not make_search("ivfpq", mapped, None, params, tmp_path / "a.faiss").disk_resident
    assert make_search("ivfpq", mapped, 500.0, params, tmp_path / "b.faiss").disk_resident


def test_exact_search_under_a_budget_streams_the_file_and_finds_the_same_rows(tmp_path):
    vectors = clustered(50_000, dim=32)
    np.save(tmp_path / "v.npy", vectors)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    queries = clustered(70, dim=32, seed=5).astype(np.float32)
    in_memory = ExactSearch(vectors)
    streamed = make_search("exact", mapped, memory_budget_mb=1.0)  # fp32 would take 6 MB
    assert isinstance(streamed, ExactSearch) and streamed.matrix is None
    assert not make_search("exact", mapped, memory_budget_mb=100.0).reader  # it fits
    streamed.block_rows = 4_096  # several blocks, the last one short
    before = _rss_file_kb()
    scores, rows = streamed.search(queries, 5)
    assert _rss_file_kb() - before < 500  # the file was read, not mapped
    want_scores, want_rows = in_memory.search(queries, 5)
    assert (rows == want_rows).all()
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-5)


def test_order_ties_sends_equal_scores_to_the_higher_or_lower_row():
    scores = np.array([[0.5, 0.9, 0.5, 0.9], [0.1, 0.3, 0.2, 0.0]], np.float32)
    rows = np.array([[1, 2, 3, 4], [7, 5, 6, 8]], np.int64)
    s, r = order_ties(scores, rows, "higher")
    np.testing.assert_array_equal(s, np.array([[0.9, 0.9, 0.5, 0.5], [0.3, 0.2, 0.1, 0.0]],
                                              np.float32))
    assert r.tolist() == [[4, 2, 3, 1], [5, 6, 7, 8]]
    s, r = order_ties(scores, rows, "lower")
    assert r.tolist() == [[2, 4, 1, 3], [5, 6, 7, 8]]
    assert order_ties(scores, rows)[1].tolist() == [[4, 2, 3, 1], [5, 6, 7, 8]]  # default
    with pytest.raises(ValueError, match="tie rule"):
        order_ties(scores, rows, "first")


def test_a_damaged_faiss_index_file_is_named_discarded_and_rebuilt(tmp_path, capsys):
    """The approximate index beside a KB matrix carries an integrity record like the matrix:
    a file cut short is reported, removed and built again, and searches do not change."""
    import numpy as np

    from e2e_linker.kb_search.backends import FaissShortlistSearch
    from e2e_linker.kb_search.integrity import record_path

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3000, 32)).astype(np.float16)
    path = tmp_path / "kb.hnsw.faiss"
    first = FaissShortlistSearch("hnsw", vectors, index_path=path)
    assert path.is_file() and record_path(path).is_file()
    queries = rng.standard_normal((5, 32)).astype(np.float32)
    expected = first.search(queries, 10)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    again = FaissShortlistSearch("hnsw", vectors, index_path=path)
    err = capsys.readouterr().err
    assert "kb.hnsw.faiss is damaged" in err and "built again" in err
    np.testing.assert_array_equal(again.search(queries, 10)[1], expected[1])
    assert path.is_file() and record_path(path).is_file()


def test_a_damaged_fp32_twin_is_copied_again(tmp_path, capsys):
    """The shared fp32 copy of a KB matrix is checked like the matrix it copies."""
    import numpy as np

    from e2e_linker.kb_search.backends import fp32_twin

    source = tmp_path / "kb.npy"
    np.save(source, np.arange(64 * 8, dtype=np.float16).reshape(64, 8))
    vectors = np.load(source, mmap_mode="r")
    np.testing.assert_array_equal(fp32_twin(vectors), vectors.astype(np.float32))
    twin = tmp_path / "kb.f32.npy"
    with twin.open("r+b") as handle:
        handle.truncate(twin.stat().st_size - 4)
    np.testing.assert_array_equal(fp32_twin(vectors), vectors.astype(np.float32))
    assert "kb.f32.npy is damaged" in capsys.readouterr().err
