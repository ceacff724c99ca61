"""The vector cache: on-disk parts, reuse of annotate's name vectors, seeding from earlier lists."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.kb_search.cache import VectorStore
from e2e_linker.kb_search.cache_folder import store_key
from e2e_linker.kb_search.concept_search import ConceptSearcher
from e2e_linker.kb_search.label_index import LabeledTexts
from tests.helpers.damage import poke
from tests.helpers.tiny import counted_encodes


def test_tiny_bert_cache_and_self_retrieval(tiny_encoder, tmp_path):
    names = ["aspirin", "acetylsalicylic acid", "ibuprofen", "cisplatin", "haloperidol",
             "headache", "renal failure", "kidney failure"]
    labels = ["C1", "C1", "C2", "C3", "C4", "D1", "D2", "D2"]
    pool = LabeledTexts.from_pairs([(n, c, "") for n, c in zip(names, labels, strict=True)])
    cache = VectorStore(tmp_path, tiny_encoder, unit=True, part_size=3, progress=False)
    searcher = ConceptSearcher(tiny_encoder, pool, cache=cache)
    from e2e_linker.kb_search.unit_vectors import encode_unit

    queries = encode_unit(tiny_encoder, names)
    ranked = searcher.search(queries, "O-T", k=2)
    assert [r[0][0] for r in ranked] == labels
    assert all(r[0][1] == pytest.approx(1.0, abs=2e-3) for r in ranked)
    files = list((tmp_path / "normalizer_vectors").rglob("*.npy"))
    assert len(files) == 1 and not list((tmp_path / "normalizer_vectors").rglob("*.parts"))
    again = VectorStore(tmp_path, tiny_encoder, unit=True, progress=False).matrix(pool.texts)
    assert isinstance(again, np.memmap) and again.dtype == np.float16
    assert np.allclose(np.asarray(again, np.float32), np.asarray(cache.matrix(pool.texts),
                                                                 np.float32))


def test_cache_reuses_annotate_name_vectors(tiny_encoder, tmp_path):

    VectorStore(tmp_path, tiny_encoder).vectors_for(["Aspirin", "Renal Failure"],
                                                        progress=False)
    cache = VectorStore(tmp_path, tiny_encoder, unit=True, progress=False, seed_min=1)
    seeded, found = cache._seed(["aspirin", "renal failure", "headache"])
    assert found.tolist() == [True, True, False]
    from e2e_linker.kb_search.unit_vectors import encode_unit

    direct = encode_unit(tiny_encoder, ["aspirin", "renal failure"])
    assert np.allclose(seeded[:2].astype(np.float32), direct, atol=2e-3)
    got = cache.matrix(["aspirin", "renal failure", "headache"])
    assert np.allclose(np.asarray(got[2], np.float32), encode_unit(tiny_encoder, ["headache"])[0],
                       atol=2e-3)


def test_encoded_lists_seed_later_lists(tiny_encoder, tmp_path, monkeypatch):
    """A second list sharing texts with a first one encodes only its new texts."""
    from e2e_linker.kb_search import store_encoding as search

    cache = VectorStore(tmp_path, tiny_encoder, unit=True, progress=False, seed_min=2)
    first = cache.matrix(["aspirin", "renal failure", "headache"])
    encoded: list[str] = []
    real = search.encode_unit

    def counting(encoder, texts, batch_size=256):
        encoded.extend(texts)
        return real(encoder, texts, batch_size)

    monkeypatch.setattr(search, "encode_unit", counting)
    second = cache.matrix(["headache", "nausea", "aspirin"])
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
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.packed_index import names_digest
    from e2e_linker.kb_search.unit_vectors import unit_rows

    raw = VectorStore(tmp_path, tiny_encoder, progress=False)
    matrix = raw.matrix(TEXTS)
    assert raw.list_path(TEXTS) == raw.names_folder / "kb" / f"{names_digest(TEXTS)}.npy"
    assert raw.list_path(TEXTS).is_file() and isinstance(matrix, np.memmap)
    assert raw.load()[0] == sorted(TEXTS, key=len)  # the table, in encoding order
    unit = VectorStore(tmp_path, tiny_encoder, unit=True, progress=False, seed_min=1)
    assert unit.names_folder == raw.names_folder and unit.folder != raw.folder
    _no_encoding(tiny_encoder, monkeypatch)
    got = unit.matrix(TEXTS)
    assert unit.list_path(TEXTS).parent == tmp_path / "normalizer_vectors" / store_key(
        unit.fingerprint)
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


def test_the_encoder_fingerprint_is_the_torch_cast_hash(tiny_encoder):
    """Cache folders and shipped packed indexes are named by the fingerprint: its faster
    rounding must hash the bytes torch's fp16 cast gives, for every value and layout."""
    import copy
    import hashlib

    import torch

    from e2e_linker.kb_search.cache_folder import encoder_fingerprint, fp16_bytes

    digest = hashlib.sha256(f"{tiny_encoder.pooling}|{tiny_encoder.max_length}".encode())
    for key, value in sorted(tiny_encoder.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().to(torch.float16).cpu().numpy().tobytes())
    assert encoder_fingerprint(tiny_encoder) == digest.hexdigest()[:16]
    special = torch.tensor([0.0, -0.0, 1e-8, 2.98e-8, 3e-8, 6.1e-5, 65504.0, 65519.0, 65520.0,
                            1e6, float("inf"), -float("inf"), float("nan"), 1.00048828125])
    bits = torch.randint(-2**31, 2**31 - 1, (20000,), dtype=torch.int32,
                         generator=torch.Generator().manual_seed(0)).view(torch.float32)
    grid = torch.randn(50, 40, generator=torch.Generator().manual_seed(1))
    for tensor in (special, bits, bits[~bits.isnan()], grid.t(), grid[:, ::3],
                   torch.tensor(3.14159), grid.to(torch.bfloat16), torch.arange(7)):
        assert fp16_bytes(tensor).tobytes() == tensor.to(torch.float16).numpy().tobytes()
    changed = copy.deepcopy(tiny_encoder)
    with torch.no_grad():
        next(iter(changed.model.parameters()))[0, 0] += 0.5
    assert encoder_fingerprint(changed) != encoder_fingerprint(tiny_encoder)  # memory, not file


def test_cache_files_are_read_under_the_stores_key(tiny_encoder, tmp_path, monkeypatch):
    """A list file already in the store's folder is used as is; one in the folder of vectors
    encoded in padded batches (named by the fingerprint alone) is not read: its rows' last bits
    depend on the batches that made them (docs/decisions/0056-names-encoded-alone.md)."""
    from e2e_linker.kb_search.cache import VectorStore, encoder_fingerprint
    from e2e_linker.kb_search.packed_index import names_digest

    fingerprint = encoder_fingerprint(tiny_encoder)
    dim = tiny_encoder.hidden_size
    for key, value in ((fingerprint, 0.75), (store_key(fingerprint), 0.5)):
        raw_file = tmp_path / "entity_vectors" / key / "kb" / f"{names_digest(TEXTS)}.npy"
        raw_file.parent.mkdir(parents=True)
        np.save(raw_file, np.full((len(TEXTS), dim), value, np.float16))
    unit_file = VectorStore(tmp_path, tiny_encoder, unit=True).list_path(TEXTS)
    assert unit_file.parent == tmp_path / "normalizer_vectors" / store_key(fingerprint)
    assert unit_file.name.endswith(f"-{len(TEXTS)}.npy")
    unit_file.parent.mkdir(parents=True)
    np.save(unit_file, np.full((len(TEXTS), dim), 0.25, np.float16))
    _no_encoding(tiny_encoder, monkeypatch)
    raw = VectorStore(tmp_path, tiny_encoder)
    assert raw.list_path(TEXTS) == raw_file
    assert (np.asarray(raw.matrix(TEXTS, progress=False)) == 0.5).all()
    assert (np.asarray(VectorStore(tmp_path, tiny_encoder, unit=True).matrix(TEXTS)) == 0.25).all()


def test_packed_rows_apply_only_where_a_packed_index_fits(tiny_encoder, tmp_path):
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.cache import VectorStore

    store = VectorStore(tmp_path, tiny_encoder, progress=False)
    assert store.packed_rows(None, TEXTS) is None
    assert store.packed_rows(tmp_path / "missing.safetensors", TEXTS) is None
    with pytest.raises(UserError, match="no packed KB index"):
        store.packed_rows(tmp_path / "missing.safetensors", TEXTS, required=True)


# ---- integrity: every file is checked, a damaged one is named and made again --------------------

def test_every_file_of_a_new_cache_carries_its_record(tiny_encoder, tmp_path):
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.cache_report import verify_cache

    VectorStore(tmp_path, tiny_encoder, progress=False).matrix(TEXTS)
    VectorStore(tmp_path, tiny_encoder, unit=True, progress=False).matrix(TEXTS)
    checked = verify_cache(tmp_path)
    assert [(c["file"].split("/", 2)[-1], c["state"]) for c in checked] == [
        ("names.jsonl", "ok"), ("vectors.npy", "ok"),
        (f"kb/{VectorStore(tmp_path, tiny_encoder).list_path(TEXTS).name}", "ok"),
        (VectorStore(tmp_path, tiny_encoder, unit=True).list_path(TEXTS).name, "ok")]


@pytest.mark.parametrize("unit", [False, True])
def test_a_damaged_list_is_discarded_and_made_again_to_the_same_bytes(tiny_encoder, tmp_path,
                                                                      capsys, unit):
    from e2e_linker.kb_search.cache import VectorStore

    store = VectorStore(tmp_path, tiny_encoder, unit=unit, progress=False)
    store.matrix(TEXTS)
    path = store.list_path(TEXTS)
    reference = path.read_bytes()
    poke(path, len(reference) - 64, bytes(64))  # the last row zeroed, same size
    got = VectorStore(tmp_path, tiny_encoder, unit=unit, progress=False).matrix(TEXTS)
    assert f"KB cache: {path} is damaged (1 of 1 blocks do not match their checksums); " \
           "discarded; its vectors are made again" in capsys.readouterr().err
    assert path.read_bytes() == reference and np.asarray(got).any(axis=1).all()


def test_a_damaged_block_of_the_name_table_drops_its_names_only(tiny_encoder, tmp_path, capsys,
                                                                monkeypatch):
    from e2e_linker.kb_search import integrity

    monkeypatch.setattr(integrity, "BLOCK_BYTES", 128)  # 2 rows of 32 fp16 values a block
    names = [f"name {i}" for i in range(10)]
    cache = VectorStore(tmp_path, tiny_encoder)
    cache.vectors_for(names, progress=False)
    known, stored = cache.load()
    stored = np.array(stored)  # a copy: the map would show the damage
    poke(cache.vectors_path, 128 + 2 * 64, b"\x01\x02")  # block 1: rows 2 and 3
    encoded = counted_encodes(tiny_encoder, monkeypatch)
    again = cache.vectors_for(names, progress=False)
    assert sorted(encoded) == sorted(known[2:4])
    assert "vectors.npy is damaged (1 of 5 blocks do not match their checksums); the vectors " \
           "of 2 names were dropped; they are encoded again when needed" in capsys.readouterr().err
    np.testing.assert_allclose(again.astype(np.float32),
                               stored[[known.index(n) for n in names]]
                               .astype(np.float32), atol=2e-3)


def test_a_damaged_names_file_drops_the_table(tiny_encoder, tmp_path, capsys):

    cache = VectorStore(tmp_path, tiny_encoder)
    cache.vectors_for(TEXTS, progress=False)
    poke(cache.names_path, 2, b"\xff")
    assert cache.load() == ([], None)
    assert f"KB cache: {cache.names_path} is damaged (1 of 1 blocks do not match their " \
           "checksums); the name table is discarded" in capsys.readouterr().err
    assert not cache.names_path.exists() and not cache.vectors_path.exists()


def test_a_cache_written_before_records_is_adopted_on_load(tiny_encoder, tmp_path, monkeypatch):
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.cache_report import verify_cache
    from e2e_linker.kb_search.integrity import RECORD_SUFFIX

    VectorStore(tmp_path, tiny_encoder).matrix(TEXTS, progress=False)
    for record in tmp_path.rglob(f"*{RECORD_SUFFIX}"):
        record.unlink()
    assert {c["state"] for c in verify_cache(tmp_path)} == {"unverified"}
    _no_encoding(tiny_encoder, monkeypatch)
    cache = VectorStore(tmp_path, tiny_encoder)
    cache.matrix(TEXTS, progress=False)  # the list: checked whole, recorded
    cache.load()  # the table too
    assert {c["state"] for c in verify_cache(tmp_path)} == {"ok"}


def test_a_damaged_unit_part_is_encoded_again(tiny_encoder, tmp_path, capsys):

    cache = VectorStore(tmp_path, tiny_encoder, unit=True, part_size=2, progress=False)
    reference = np.asarray(cache.matrix(TEXTS)).copy()
    path = cache.list_path(TEXTS)
    parts = path.with_suffix(".parts")
    path.unlink()  # as if the run was killed before the list was assembled
    parts.mkdir()
    np.save(parts / "00000.npy", np.zeros((2, tiny_encoder.hidden_size), np.float16))
    again = VectorStore(tmp_path, tiny_encoder, unit=True, part_size=2,
                        progress=False).matrix(TEXTS)
    assert "00000.npy is damaged (row 0 is all zeros" in capsys.readouterr().err
    np.testing.assert_array_equal(np.asarray(again), reference)
    assert not parts.exists()


def test_a_damaged_full_list_lets_the_packed_index_stand_in(tiny_encoder, tmp_path):
    """A list promoted from partial rows has no table behind it: when it is damaged, the
    packed index's on-demand rows are the cheap way back, not a full encode."""
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.packed_index import pack_vectors

    names = [f"compound {i}" for i in range(300)]
    store = VectorStore(tmp_path / "cache", tiny_encoder, progress=False)
    vectors = store.matrix(names)
    packed = pack_vectors(np.asarray(vectors), names, store.fingerprint, "test",
                          tmp_path / "packed.safetensors", pq_bytes=8, nlist=4, progress=False)
    assert store.packed_rows(packed, names) is None  # the full list is there
    reference = store.list_path(names).read_bytes()
    with open(store.list_path(names), "r+b") as handle:
        handle.truncate(1000)
    assert store.packed_rows(packed, names) is None  # the table can gather it again ...
    store.matrix(names)
    assert store.list_path(names).read_bytes() == reference  # ... to the same bytes
    store.names_path.unlink()  # a list with no table behind it (promoted from partial rows)
    with open(store.list_path(names), "r+b") as handle:
        handle.truncate(1000)
    opened = store.packed_rows(packed, names)
    assert opened is not None and opened.rows.present == 0 and opened.coverage is None
