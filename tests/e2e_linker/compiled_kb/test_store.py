"""The compiled KBs in the cache folder: built once, read after, rebuilt when a vocabulary file
changes or a compiled file is damaged, never read torn."""

from __future__ import annotations

import os

import numpy as np
import pytest

from data_tools.registry import load_kb
from e2e_linker.compiled_kb.kb_view import CompiledKB
from e2e_linker.compiled_kb.store import (
    BYPASS_ENV,
    compiled_root,
    list_compiled,
    open_compiled,
)

ROWS = ["C001\taspirin\tacetylsalicylic acid|ASA\tChemical",
        "D001\theadache\tcephalalgia\tDisease",
        "D002\tnausea\t\tDisease"]


@pytest.fixture()
def vocab(tmp_path):
    """A TSV vocabulary file and its spec (id, name, synonyms, type columns)."""
    path = tmp_path / "vocab.tsv"
    path.write_text("\n".join(ROWS) + "\n")
    return path


def spec_of(path) -> str:
    return f"tsv:{path}"


class Builds:
    """``build`` for :func:`open_compiled` that counts its calls."""

    def __init__(self, spec: str):
        self.spec, self.calls = spec, 0

    def __call__(self):
        from data_tools.kb_loaders import load_tsv

        self.calls += 1
        return load_tsv(self.spec.split(":", 1)[1], synonyms_col=2, type_col=3)


def test_the_first_open_compiles_and_later_ones_read(tmp_path, vocab, capsys, monkeypatch):
    from e2e_linker.console import VERBOSE_ENV

    monkeypatch.setenv(VERBOSE_ENV, "1")  # the compile's lines are progress: -v here
    spec, cache = spec_of(vocab), tmp_path / "cache"
    build = Builds(spec)
    first = open_compiled(spec, build, cache_dir=cache)
    assert build.calls == 1 and "compiling KB" in capsys.readouterr().err
    again = open_compiled(spec, build, cache_dir=cache)
    assert build.calls == 1 and "compiling KB" not in capsys.readouterr().err
    assert isinstance(again, CompiledKB) and list(again) == list(build())
    assert isinstance(again.arrays["names.concept"].base, np.memmap)  # mapped, not read
    [listed] = list_compiled(cache)
    assert listed["spec"] == spec and listed["concepts"] == 3 and listed["state"] == "ok"
    assert first.content_hash() == again.content_hash()


def test_a_changed_vocabulary_file_invalidates_the_compiled_kb(tmp_path, vocab):
    spec, cache = spec_of(vocab), tmp_path / "cache"
    build = Builds(spec)
    before = open_compiled(spec, build, cache_dir=cache)
    assert before.get("D002").name == "nausea"
    # same size, same modification time: only the content tells the files apart
    stat = os.stat(vocab)
    vocab.write_text(vocab.read_text().replace("nausea", "vomits"))
    os.utime(vocab, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(vocab).st_size == stat.st_size
    after = open_compiled(spec, build, cache_dir=cache)
    assert build.calls == 2
    assert after.get("D002").name == "vomits"
    assert after.content_hash() != before.content_hash()
    assert after.name_dictionary().lookup("vomits") == ["D002"]
    assert len(list_compiled(cache)) == 2  # the old one stays for whoever still has the file


def test_mined_names_are_part_of_the_key(tmp_path, vocab):
    spec, cache = spec_of(vocab), tmp_path / "cache"
    extra = tmp_path / "extra.tsv"
    extra.write_text("D001\tDisease\tcorpus\t\thead ache\t\n")
    build = Builds(spec)
    open_compiled(spec, build, cache_dir=cache)
    open_compiled(spec, build, extra, cache_dir=cache)
    assert build.calls == 2
    extra.write_text("D001\tDisease\tcorpus\t\thead-ache pain\t\n")
    open_compiled(spec, build, extra, cache_dir=cache)
    assert build.calls == 3


@pytest.mark.parametrize("damage", ["truncate", "flip", "remove", "meta"])
def test_a_damaged_compiled_file_is_detected_and_rebuilt(tmp_path, vocab, capsys, damage):
    spec, cache = spec_of(vocab), tmp_path / "cache"
    build = Builds(spec)
    good = list(open_compiled(spec, build, cache_dir=cache))
    [folder] = [f for f in compiled_root(cache).iterdir() if f.is_dir()]
    target = folder / ("meta.json" if damage == "meta" else "names.texts.blob.npy")
    data = target.read_bytes()
    if damage in ("truncate", "meta"):
        target.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        target.write_bytes(data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:])
    else:
        target.unlink()
    capsys.readouterr()
    assert list_compiled(cache)[0]["state"] != "ok"
    rebuilt = open_compiled(spec, build, cache_dir=cache)
    err = capsys.readouterr().err
    assert build.calls == 2 and "damaged" in err and "compiled again" in err
    assert list(rebuilt) == good
    assert list_compiled(cache)[0]["state"] == "ok"


def test_a_read_only_cache_compiles_in_memory(tmp_path, vocab, capsys, monkeypatch):
    import e2e_linker.compiled_kb.store as store

    cache = tmp_path / "cache"
    monkeypatch.setattr(store.os, "access", lambda path, mode: False)  # as if read-only
    kb = open_compiled(spec_of(vocab), Builds(spec_of(vocab)), cache_dir=cache)
    assert len(kb) == 3 and kb.get("C001").name == "aspirin"
    assert "cannot be written" in capsys.readouterr().err
    assert list_compiled(cache) == []


def test_open_kb_reads_the_compiled_kb_unless_bypassed(tmp_path, vocab, monkeypatch):
    from e2e_linker.collective.model_kb import open_kb

    spec = spec_of(vocab)
    cache = tmp_path / "cache"
    compiled = open_kb(spec, cache_dir=cache)
    assert isinstance(compiled, CompiledKB)
    monkeypatch.setenv(BYPASS_ENV, "off")
    built = open_kb(spec, cache_dir=cache)
    assert not isinstance(built, CompiledKB)
    assert list(built) == list(compiled) == list(load_kb(spec))
    assert built.content_hash() == compiled.content_hash()


def test_a_cache_without_room_uses_the_compiled_kb_from_memory(tmp_path, vocab, capsys,
                                                               monkeypatch):
    import e2e_linker.compiled_kb.store as store
    from e2e_linker.errors import UserError

    def no_room(folder, needed, what):
        raise UserError(f"cannot write the KB cache in {folder}: only 0.0 MB free")

    monkeypatch.setattr(store, "ensure_room", no_room)
    cache = tmp_path / "cache"
    kb = open_compiled(spec_of(vocab), Builds(spec_of(vocab)), cache_dir=cache)
    assert len(kb) == 3 and kb.name_dictionary().lookup("ASA") == ["C001"]
    assert "not kept" in capsys.readouterr().err
    assert list_compiled(cache) == []
    assert not [p for p in compiled_root(cache).rglob("*") if "tmp" in p.name]


def test_a_kb_compiled_with_other_concept_fields_is_never_read(tmp_path, vocab):
    import json

    from e2e_linker.compiled_kb.store import format_key, read_folder
    from e2e_linker.kb_search.integrity import save_lines

    assert "gene_product" in format_key()  # the fields are part of every key
    cache = tmp_path / "cache"
    open_compiled(spec_of(vocab), Builds(spec_of(vocab)), cache_dir=cache)
    [folder] = [f for f in compiled_root(cache).iterdir() if f.is_dir()]
    meta = json.loads((folder / "meta.json").read_text())
    del meta["columns"]["gene_product"]  # as code from before the field would have written it
    save_lines(folder / "meta.json", [json.dumps(meta) + "\n"])
    kb, why = read_folder(folder)
    assert kb is None and "another format" in why
    assert list_compiled(cache)[0]["state"].startswith("stale")


def test_a_kb_compiled_without_the_sieves_is_a_kb_of_its_own(tmp_path, vocab):
    spec, cache = spec_of(vocab), tmp_path / "cache"
    build = Builds(spec)
    full = open_compiled(spec, build, cache_dir=cache)
    bare = open_compiled(spec, build, cache_dir=cache, sieves=False)
    assert build.calls == 2 and len(list_compiled(cache)) == 2
    assert full.has_sieves and not bare.has_sieves
    assert list(bare) == list(full) and bare.names() == full.names()
    with pytest.raises(ValueError, match="without the sieves"):
        bare.name_dictionary()
    assert open_compiled(spec, build, cache_dir=cache, sieves=False).content_hash() == \
        full.content_hash() and build.calls == 2


def test_ten_bytes_in_the_middle_of_a_large_compiled_file_are_found(tmp_path, vocab, capsys,
                                                                    monkeypatch):
    """Issue 47: a file over 16 MiB was only sampled on load, so a 10-byte overwrite of a name
    dictionary blob changed a link with exit code 0. Blocks of 64 bytes here make the small
    test KB's files many blocks long; the later open is another process (no memory of checks)."""
    from e2e_linker.compiled_kb.store import verify_compiled
    from e2e_linker.kb_search import integrity
    from e2e_linker.kb_search.integrity import npy_layout
    from tests.helpers.damage import poke

    monkeypatch.setattr(integrity, "BLOCK_BYTES", 64)
    spec, cache = spec_of(vocab), tmp_path / "cache"
    build = Builds(spec)
    good = list(open_compiled(spec, build, cache_dir=cache))
    [folder] = [f for f in compiled_root(cache).iterdir() if f.is_dir()]
    target = max(folder.glob("name_dictionary*.npy"), key=lambda p: p.stat().st_size)
    layout = npy_layout(target)
    middle = layout.offset + (target.stat().st_size - layout.offset) // 2
    poke(target, middle, bytes(b ^ 0xFF for b in target.read_bytes()[middle:middle + 10]))
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    assert [v.path for v in verify_compiled(cache) if v.state == "damaged"] == [target]
    capsys.readouterr()
    monkeypatch.setattr(integrity, "_CHECKED_WHOLE", set())
    rebuilt = open_compiled(spec, build, cache_dir=cache)
    err = capsys.readouterr().err
    assert f"KB cache: {folder} is damaged ({target.name}: " in err and build.calls == 2
    assert list(rebuilt) == good
