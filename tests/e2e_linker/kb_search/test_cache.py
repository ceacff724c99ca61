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
