"""``linker kb build|info|prune`` and the cache guarantees behind them: progress, one valid cache
when two builds race, a clear line for a cache folder that cannot be written."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.helpers.tiny_linker import tiny_linker_dir


def _linker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "e2e_linker", *args], capture_output=True,
                          text=True)


def test_build_then_info_lists_the_kb(tmp_path):
    model, _ = tiny_linker_dir(tmp_path / "m")
    cache = tmp_path / "cache"
    done = _linker("kb", "build", "--model", str(model), "--cache-dir", str(cache))
    assert done.returncode == 0, done.stderr
    assert "KB ready:" in done.stdout
    listing = json.loads(_linker("kb", "info", "--cache-dir", str(cache), "--json").stdout)
    (entry,) = [e for e in listing["entries"] if e["store"] == "entity_vectors"]
    (kb,) = entry["kbs"]
    assert kb["kb"].startswith("tsv:") and kb["model"] == str(model)
    assert kb["rows"] == entry["names"] > 0 and kb["indexes"] == ["exact"]
    assert entry["encoder"]["pooling"] == "mean"
    text = _linker("kb", "info", "--cache-dir", str(cache)).stdout
    assert "KB tsv:" in text and f"{kb['rows']:,} names" in text
    # the compiled KB the build wrote is listed too
    (compiled,) = listing["compiled_kbs"]
    assert compiled["spec"] == kb["kb"] and compiled["state"] == "ok"
    assert compiled["names"] == kb["rows"]
    assert f"compiled KB {kb['kb']}: {compiled['concepts']:,} concepts" in text
    # a second build finds everything cached: no encoding line, same listing
    again = _linker("kb", "build", "--model", str(model), "--cache-dir", str(cache))
    assert again.returncode == 0 and "encoding" not in again.stderr
    assert json.loads(_linker("kb", "info", "--cache-dir", str(cache), "--json").stdout) == \
        listing
    # a store of padded batches (an earlier version's folder, named by the fingerprint alone)
    # is listed as unused, the store in use is not
    assert entry["in_use"] and entry["folder"] == f"{entry['fingerprint']}-unpadded"
    (cache / "entity_vectors" / entry["fingerprint"]).mkdir()
    text = _linker("kb", "info", "--cache-dir", str(cache)).stdout
    assert f"entity_vectors/{entry['fingerprint']}: 0.0 MiB (vectors of padded batches, no " \
        "longer read: `linker kb prune` deletes it)" in text
    assert f"entity_vectors/{entry['folder']}: " in text
    assert text.count("`linker kb prune` deletes it") == 1


def test_prune_deletes_only_what_this_version_never_reads(tmp_path):
    """An earlier version's store (padded batches) and a compiled KB of an earlier format go;
    the store in use, the current compiled KB and what a later version may have written (a
    store of another scheme, a compiled KB of a later format) stay; --dry-run deletes
    nothing."""
    import shutil

    from e2e_linker.compiled_kb.store import FORMAT_VERSION, META_FILE

    model, _ = tiny_linker_dir(tmp_path / "m")
    cache = tmp_path / "cache"
    assert _linker("kb", "build", "--model", str(model), "--cache-dir", str(cache)).returncode == 0
    listing = json.loads(_linker("kb", "info", "--cache-dir", str(cache), "--json").stdout)
    (entry,) = [e for e in listing["entries"] if e["store"] == "entity_vectors"]
    (compiled,) = listing["compiled_kbs"]
    old_store = cache / "entity_vectors" / entry["fingerprint"]
    old_store.mkdir()
    (old_store / "names.jsonl").write_text('"aspirin"\n' * 1000)
    stale = cache / "compiled_kb" / "0000stale0000"
    shutil.copytree(compiled["path"], stale)
    meta = json.loads((stale / META_FILE).read_text())
    (stale / META_FILE).write_text(json.dumps({**meta, "format": FORMAT_VERSION - 1}))
    later = cache / "compiled_kb" / "0000later0000"
    shutil.copytree(compiled["path"], later)
    (later / META_FILE).write_text(json.dumps({**meta, "format": FORMAT_VERSION + 1}))
    later_store = cache / "entity_vectors" / f"{entry['fingerprint']}-a_later_scheme"
    later_store.mkdir()
    text = _linker("kb", "info", "--cache-dir", str(cache)).stdout
    assert text.count("`linker kb prune` deletes it") == 2
    assert "(another version's encode scheme: not read by this one)" in text
    assert "stale (another format, never read by this code)" in text

    dry = _linker("kb", "prune", "--cache-dir", str(cache), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would delete {old_store}: vectors of padded batches" in dry.stdout
    assert f"would delete {stale}: compiled KB {compiled['spec']} of an earlier format" in \
        dry.stdout
    assert "2 folders" in dry.stdout and "would be freed" in dry.stdout
    assert old_store.is_dir() and stale.is_dir()

    done = _linker("kb", "prune", "--cache-dir", str(cache))
    assert done.returncode == 0, done.stderr
    assert f"deleted {old_store}" in done.stdout and f"deleted {stale}" in done.stdout
    assert not old_store.exists() and not stale.exists()
    assert later.is_dir() and later_store.is_dir()  # a later version's, kept
    shutil.rmtree(later)
    shutil.rmtree(later_store)
    assert json.loads(_linker("kb", "info", "--cache-dir", str(cache), "--json").stdout) == \
        listing  # what is in use is untouched
    again = _linker("kb", "prune", "--cache-dir", str(cache))
    assert again.returncode == 0 and "nothing an earlier version left" in again.stdout
    blocker = tmp_path / "a_file"
    blocker.write_text("not a cache")
    refused = _linker("kb", "prune", "--cache-dir", str(blocker))
    assert refused.returncode == 2 and "is a file, not a folder" in refused.stderr
    assert blocker.read_text() == "not a cache"


def test_unwritable_cache_is_one_line_naming_it(tmp_path):
    model, _ = tiny_linker_dir(tmp_path / "m")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    done = _linker("kb", "build", "--model", str(model), "--cache-dir", str(blocker / "cache"))
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: cannot write the KB cache in")
    assert done.stderr.strip().splitlines()[-1] == errors[0]  # the last word, no traceback
    assert str(blocker) in errors[0] and "Traceback" not in done.stderr


def test_info_on_an_empty_cache(tmp_path):
    done = _linker("kb", "info", "--cache-dir", str(tmp_path / "none"))
    assert done.returncode == 0 and "empty" in done.stdout


RACER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from e2e_linker.encoder.text_encoder import TextEncoder
    from e2e_linker.kb_search.cache import VectorStore
    encoder = TextEncoder.from_pretrained(sys.argv[1], pooling="mean", max_length=16).eval()
    names = [f"{sys.argv[3]} name {i}" for i in range(int(sys.argv[4]))] + [
        f"shared name {i}" for i in range(300)]
    VectorStore(Path(sys.argv[2]), encoder, checkpoint=64).vectors_for(names, progress=False)
""")


def test_two_builds_at_once_leave_one_valid_cache(tmp_path, tiny_dir):
    """Each process encodes its own names plus shared ones, checkpointing often; without the
    lock the last writer's store would drop the other's names."""
    cache = tmp_path / "cache"
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(tiny_dir), str(cache), tag,
                                "700"], stderr=subprocess.PIPE, text=True)
              for tag in ("alpha", "beta")]
    for racer in racers:
        assert racer.wait(timeout=600) == 0, racer.stderr.read()
    from e2e_linker.encoder.text_encoder import TextEncoder
    from e2e_linker.kb_search.cache import VectorStore

    encoder = TextEncoder.from_pretrained(str(tiny_dir), pooling="mean", max_length=16).eval()
    names, vectors = VectorStore(cache, encoder).load()
    expected = {f"{tag} name {i}" for tag in ("alpha", "beta") for i in range(700)} | {
        f"shared name {i}" for i in range(300)}
    assert sorted(names) == sorted(expected) and len(names) == len(set(names))
    sample = [names[0], names[len(names) // 2], names[-1]]
    rows = [names.index(n) for n in sample]
    fresh = encoder.encode(sample, dtype=np.float16)
    assert np.allclose(np.asarray(vectors[rows], np.float32), fresh.astype(np.float32),
                       atol=1e-3)


def _mentions(path) -> list[tuple]:
    from e2e_linker import read_documents

    return [(d.id, m.start, m.end, m.concept_ids) for d in read_documents(path)
            for m in d.annotations]


def test_pack_ships_an_index_that_a_first_annotate_uses(tmp_path):
    model, _ = tiny_linker_dir(tmp_path / "m", filler_concepts=3000)
    packed = _linker("kb", "pack", "--model", str(model), "--cache-dir", str(tmp_path / "c1"),
                     "--pq-bytes", "8", "--nlist", "16")
    assert packed.returncode == 0, packed.stderr
    assert (model / "kb_index.safetensors").is_file() and "packed KB index" in packed.stdout
    sample = "examples/bc5cdr_sample.bioc.xml"
    # -v: the KB index lines that say which index served are off on a pipe by default
    first = _linker("-v", "annotate", sample, "-o", str(tmp_path / "a.bioc.xml"), "--replace",
                    "--model", str(model), "--cache-dir", str(tmp_path / "empty"))
    assert first.returncode == 0, first.stderr
    assert "packed index shipped with the model" in first.stderr
    assert "encoding KB names" not in first.stderr  # no full encode
    full = _linker("-v", "annotate", sample, "-o", str(tmp_path / "b.bioc.xml"), "--replace",
                   "--model", str(model), "--cache-dir", str(tmp_path / "c1"))
    assert full.returncode == 0 and "packed index" not in full.stderr  # the full matrix wins
    # detection does not depend on the KB; links may differ where the shortlist missed the
    # best name (the random tiny encoder's vectors are nearly parallel, a hard case for PQ)
    a, b = (_mentions(tmp_path / name) for name in ("a.bioc.xml", "b.bioc.xml"))
    assert [m[:3] for m in a] == [m[:3] for m in b] and len(a) > 20
    assert sum(x[3] == y[3] for x, y in zip(a, b, strict=True)) >= 0.9 * len(a)
    forced = _linker("-v", "annotate", sample, "-o", str(tmp_path / "c.bioc.xml"), "--index",
                     "packed", "--model", str(model), "--cache-dir", str(tmp_path / "c1"))
    assert forced.returncode == 0 and "packed index shipped" in forced.stderr


def test_pack_stores_an_index_of_every_kb_name_under_the_models_encoder(tmp_path):
    from e2e_linker.kb_search.packed_index import read_info

    model, _ = tiny_linker_dir(tmp_path / "m", filler_concepts=400)
    cache, target = tmp_path / "cache", tmp_path / "packed.safetensors"
    done = _linker("kb", "pack", "--model", str(model), "--cache-dir", str(cache),
                   "--pq-bytes", "8", "--nlist", "4", "-o", str(target))
    assert done.returncode == 0, done.stderr
    info = read_info(target)
    listing = json.loads(_linker("kb", "info", "--cache-dir", str(cache), "--json").stdout)
    (entry,) = [e for e in listing["entries"] if e["store"] == "entity_vectors"]
    (kb,) = entry["kbs"]
    assert (info.names, info.dim, info.nlist, info.pq_bytes) == (kb["rows"], 32, 4, 8)
    assert info.fingerprint == entry["fingerprint"]


# ---- info: a partial list once, with its fill; --verify checks every file ----------------------

def _partial_cache(root, encoder, rows=(0, 2, 3)):
    from e2e_linker.kb_search.cache import VectorStore

    store = VectorStore(root, encoder, progress=False)
    texts = [f"compound {i}" for i in range(8)]
    store.partial(texts).rows(np.array(rows))
    return store.list_path(texts)


def _info(cache, *extra):
    from click.testing import CliRunner

    from e2e_linker.cli import main

    return CliRunner().invoke(main, ["kb", "info", "--cache-dir", str(cache), *extra])


def test_info_lists_a_partial_cache_once_with_its_fill(tiny_encoder, tmp_path):
    full = _partial_cache(tmp_path, tiny_encoder)
    done = _info(tmp_path)
    assert done.exit_code == 0, done.output
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("    ")]
    assert line == ("    KB (not recorded): 3 of 8 names encoded (37.5 %; the others when a "
                    "search shortlists them), index packed")
    listing = json.loads(_info(tmp_path, "--json").stdout)
    (kb,) = listing["entries"][0]["kbs"]
    assert (kb["file"], kb["state"], kb["encoded"], kb["filled"]) == (full.name, "partial", 3,
                                                                       0.375)


def test_info_and_verify_on_a_damaged_cache(tiny_encoder, tmp_path):
    full = _partial_cache(tmp_path, tiny_encoder)
    checked = _info(tmp_path, "--verify")
    # the cache's three files, then every shipped model file (outside the cache folder)
    in_cache = [line for line in checked.stdout.splitlines()
                if line.startswith("  ok ") and str(tmp_path) not in line
                and "default_model" not in line]
    assert checked.exit_code == 0 and len(in_cache) == 3, checked.output
    have = full.with_name(full.stem + ".partial-have.npy")
    have.write_bytes(b"")  # was "Aborted!" (exit 1) from np.load's EOFError
    listed = _info(tmp_path)
    assert listed.exit_code == 0 and "damaged (`linker kb info --verify` says how" in \
        listed.stdout
    verified = _info(tmp_path, "--verify")
    rel = have.relative_to(tmp_path)
    assert f"  damaged     {rel}: empty" in verified.stdout
    assert verified.exit_code == 2
    assert verified.stderr.strip().splitlines() == [
        f"error: 1 damaged KB cache file in {tmp_path} ({rel}): the next run that needs it "
        "discards and re-encodes what is damaged, or delete it now"]
    as_json = json.loads(_info(tmp_path, "--verify", "--json").stdout)
    assert {"file": str(rel), "state": "damaged", "why": "empty"} in as_json["verify"]


# ---- check: a user's tsv KB read as --kb tsv:FILE reads it -----------------------------------

def _check(path, *extra):
    from click.testing import CliRunner

    from e2e_linker.cli import main

    return CliRunner().invoke(main, ["kb", "check", str(path), *extra])


MY_KB = ("# my KB\n"
         "id\tname\tsynonyms\ttype\n"
         "D000001\taspirin|ASA\tacetylsalicylic acid\tChemical\n"
         "MESH:D000002\tcold\tcommon cold\tDisease\n"
         "OMIM:123\tcold\n"
         "\n"
         "D000001\tAspirin\tBayer aspirin\tChemical\n"
         "P1\tfoo\tChemical\tProtein\n")


def test_check_says_what_the_file_holds(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text(MY_KB)
    done = _check(path)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == f"{path}: 5 rows, 4 concepts, 9 names (4 preferred + 5 synonyms)"
    assert lines[1] == "types: Chemical 1, Disease 1, (none) 1, Protein 1"
    assert lines[2].startswith("IDs: bare 3 (e.g. D000001), OMIM: 1 (e.g. OMIM:123)")
    assert lines[3] == ("repeated IDs: 1, each merged into one concept with the names of all "
                        "its rows: D000001 (lines 3, 7)")
    # the packaged model tags Chemical, Disease, Gene and Species
    assert lines[4].startswith("warning: types the model does not tag (Chemical, Disease, "
                               "Gene, Species): Protein (first on line 8);")
    assert lines[5].startswith("note: 1 concept without a type:")
    assert lines[6:] == ["rows with problems: 2",
                         "  line 5: name 'cold' also names D000002 (line 4)",
                         "  line 8: synonym 'Chemical' is a type: the type is the fourth cell "
                         "(ID<TAB>name<TAB><TAB>type)"]


def test_check_compares_types_with_the_models_config_only(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "linker_config.json").write_text(json.dumps({"types": ["Chemical", "Protein"]}))
    path = tmp_path / "mine.tsv"
    path.write_text("D1\taspirin\t\tChemical\nD2\tcold\t\tDisease|Chemical\nD3\tflu\t\tDisease\n")
    done = _check(path, "--model", str(model))
    assert done.exit_code == 0, done.output
    (warning,) = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: types the model does not tag (Chemical, Protein): "
                              "Disease (first on line 2);")
    assert "without a type" not in done.stdout and "rows with problems: none" in done.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = _check(path, "--model", str(empty))
    assert refused.exit_code == 2 and "not a linker model directory" in refused.stderr


@pytest.mark.parametrize(("row", "message"), [
    ("D2\tcold\t\tDisease\textra", "line 2: 5 tab-separated cells; a tsv KB row has at most 4"),
    ("D2\t\tcommon cold", "line 2: row without a name"),
    ("D1\tASA\t\tDisease", "line 2: ID D1 has type Disease here but Chemical on line 1")])
def test_check_stops_at_a_format_error_with_one_line(tmp_path, row, message):
    path = tmp_path / "mine.tsv"
    path.write_text(f"D1\taspirin\t\tChemical\n{row}\n")
    done = _check(path)
    assert done.exit_code == 2 and done.stdout == ""
    (error,) = done.stderr.splitlines()
    assert error.startswith(f"error: {path}: {message}")
