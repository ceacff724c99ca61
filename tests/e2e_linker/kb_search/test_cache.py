"""The vector cache: on-disk parts, reuse of annotate's name vectors, seeding from earlier lists."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.cache import VectorCache
from e2e_linker.kb_search.concept_search import ConceptSearcher
from e2e_linker.kb_search.label_index import LabeledTexts


def test_tiny_bert_cache_and_self_retrieval(tiny_encoder, tmp_path):
    names = ["aspirin", "acetylsalicylic acid", "ibuprofen", "cisplatin", "haloperidol",
             "headache", "renal failure", "kidney failure"]
    labels = ["C1", "C1", "C2", "C3", "C4", "D1", "D2", "D2"]
    pool = LabeledTexts.from_pairs([(n, c, "") for n, c in zip(names, labels, strict=True)])
    cache = VectorCache(tiny_encoder, tmp_path, part_size=3, progress=False)
    searcher = ConceptSearcher(tiny_encoder, pool, cache=cache)
    from e2e_linker.kb_search.cache import encode_unit

    queries = encode_unit(tiny_encoder, names)
    ranked = searcher.search(queries, "O-T", k=2)
    assert [r[0][0] for r in ranked] == labels
    assert all(r[0][1] == pytest.approx(1.0, abs=2e-3) for r in ranked)
    files = list((tmp_path / "normalizer_vectors").rglob("*.npy"))
    assert len(files) == 1 and not list((tmp_path / "normalizer_vectors").rglob("*.parts"))
    again = VectorCache(tiny_encoder, tmp_path, progress=False).vectors(pool.texts)
    assert isinstance(again, np.memmap) and again.dtype == np.float16
    assert np.allclose(np.asarray(again, np.float32), np.asarray(cache.vectors(pool.texts),
                                                                 np.float32))


def test_cache_reuses_annotate_name_vectors(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.cache import NameVectorCache

    NameVectorCache(tmp_path, tiny_encoder).vectors_for(["Aspirin", "Renal Failure"],
                                                        progress=False)
    cache = VectorCache(tiny_encoder, tmp_path, progress=False, seed_min=1)
    seeded, found = cache._seed(["aspirin", "renal failure", "headache"])
    assert found.tolist() == [True, True, False]
    from e2e_linker.kb_search.cache import encode_unit

    direct = encode_unit(tiny_encoder, ["aspirin", "renal failure"])
    assert np.allclose(seeded[:2].astype(np.float32), direct, atol=2e-3)
    got = cache.vectors(["aspirin", "renal failure", "headache"])
    assert np.allclose(np.asarray(got[2], np.float32), encode_unit(tiny_encoder, ["headache"])[0],
                       atol=2e-3)


def test_encoded_lists_seed_later_lists(tiny_encoder, tmp_path, monkeypatch):
    """A second list sharing texts with a first one encodes only its new texts."""
    from e2e_linker.kb_search import cache as search

    cache = VectorCache(tiny_encoder, tmp_path, progress=False, seed_min=2)
    first = cache.vectors(["aspirin", "renal failure", "headache"])
    encoded: list[str] = []
    real = search.encode_unit

    def counting(encoder, texts, batch_size=256):
        encoded.extend(texts)
        return real(encoder, texts, batch_size)

    monkeypatch.setattr(search, "encode_unit", counting)
    second = cache.vectors(["headache", "nausea", "aspirin"])
    assert encoded == ["nausea"]
    assert np.allclose(np.asarray(second[0], np.float32), np.asarray(first[2], np.float32),
                       atol=2e-3)


# ---- the one store and its modes -------------------------------------------------------------

TEXTS = ["aspirin", "renal failure", "headache", "nausea", "cisplatin"]


def _no_encoding(encoder, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("nothing may be encoded here")

    monkeypatch.setattr(encoder, "encode", refuse)


def test_raw_and_unit_modes_share_one_name_table(tiny_encoder, tmp_path, monkeypatch):
    """Raw full lists are gathered from the table; a unit list is seeded from the same table,
    each row scaled to length 1 from its fp16 vector (nothing re-encoded)."""
    from e2e_linker.kb_search.cache import VectorStore, unit_rows
    from e2e_linker.kb_search.packed_index import names_digest

    raw = VectorStore(tmp_path, tiny_encoder, progress=False)
    matrix = raw.matrix(TEXTS)
    assert raw.list_path(TEXTS) == raw.names_folder / "kb" / f"{names_digest(TEXTS)}.npy"
    assert raw.list_path(TEXTS).is_file() and isinstance(matrix, np.memmap)
    assert raw.load()[0] == sorted(TEXTS, key=len)  # the table, in encoding order
    unit = VectorStore(tmp_path, tiny_encoder, unit=True, progress=False, seed_min=1)
    assert unit.names_folder == raw.names_folder and unit.folder != raw.folder
    _no_encoding(tiny_encoder, monkeypatch)
    got = unit.matrix(TEXTS)
    assert unit.list_path(TEXTS).parent == tmp_path / "normalizer_vectors" / unit.fingerprint
    np.testing.assert_array_equal(got, unit_rows(matrix).astype(np.float16))


def test_partial_mode_fills_the_full_lists_file(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.cache import VectorStore

    for unit in (False, True):
        store = VectorStore(tmp_path, tiny_encoder, unit=unit, progress=False)
        rows = store.partial(TEXTS)
        assert rows.full_path == store.list_path(TEXTS) and rows.unit == unit
        rows.rows(np.array([1, 3]))
        assert rows.present == 2 and not store.list_path(TEXTS).is_file()
        everything = rows.rows(np.arange(len(TEXTS)))
        assert store.list_path(TEXTS).is_file()  # complete: promoted to the full list
        np.testing.assert_array_equal(store.matrix(TEXTS), everything)  # read, not re-encoded
        norms = np.linalg.norm(everything.astype(np.float32), axis=1)
        assert np.allclose(norms, 1, atol=2e-3) == unit


def test_existing_cache_files_are_read_under_their_old_names(tiny_encoder, tmp_path,
                                                             monkeypatch):
    """The layout is the one users' caches have: a list file already there is used as is."""
    from e2e_linker.kb_search.cache import NameVectorCache, VectorCache, encoder_fingerprint
    from e2e_linker.kb_search.packed_index import names_digest

    fingerprint = encoder_fingerprint(tiny_encoder)
    dim = tiny_encoder.hidden_size
    raw_file = tmp_path / "entity_vectors" / fingerprint / "kb" / f"{names_digest(TEXTS)}.npy"
    raw_file.parent.mkdir(parents=True)
    np.save(raw_file, np.full((len(TEXTS), dim), 0.5, np.float16))
    unit_file = VectorCache(tiny_encoder, tmp_path).path_for(TEXTS)
    assert unit_file.parent == tmp_path / "normalizer_vectors" / fingerprint
    assert unit_file.name.endswith(f"-{len(TEXTS)}.npy")
    unit_file.parent.mkdir(parents=True)
    np.save(unit_file, np.full((len(TEXTS), dim), 0.25, np.float16))
    _no_encoding(tiny_encoder, monkeypatch)
    matrix, path = NameVectorCache(tmp_path, tiny_encoder).kb_matrix(TEXTS, progress=False)
    assert path == raw_file and (np.asarray(matrix) == 0.5).all()
    assert (np.asarray(VectorCache(tiny_encoder, tmp_path).vectors(TEXTS)) == 0.25).all()


def test_packed_rows_apply_only_where_a_packed_index_fits(tiny_encoder, tmp_path):
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.cache import VectorStore

    store = VectorStore(tmp_path, tiny_encoder, progress=False)
    assert store.packed_rows(None, TEXTS) is None
    assert store.packed_rows(tmp_path / "missing.safetensors", TEXTS) is None
    with pytest.raises(UserError, match="no packed KB index"):
        store.packed_rows(tmp_path / "missing.safetensors", TEXTS, required=True)
