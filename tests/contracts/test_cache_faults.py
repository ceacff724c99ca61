"""Fault injection on the KB vector cache (issue 28, deliverable 2): a damaged or full cache
ends in the reference output bytes — the damaged file named on stderr, discarded and encoded
again — or in exit code 2 with one line naming what to fix, and no litter.

The cases the issue found, on the tiny model with a packed index (so a first run fills a
*partial* matrix, as the default model does on a new machine) and on a fully built cache:

* ``partial-have.npy`` cut in half or empty, ``partial.npy`` one byte short (were "cannot load
  the model (ValueError …)" on every rerun, or ``Aborted!``, also from ``linker kb info``);
* the stored vectors overwritten with zeros at the same size (was exit 0, different links);
* the disk filling up while rows are encoded (was SIGBUS, exit 135, a sparse ``partial.npy``
  left), a cache already full (left a ``.partial.<pid>.tmp.npy``);
* ``linker kb info`` listing a partial cache twice, as "KB (not recorded)";
* and a damaged file on a read-only cache: one line saying which file to delete.

A full or read-only disk is a small tmpfs where the tests run as root (CI's container), and is
skipped with the reason elsewhere; the same code paths are covered everywhere by
``tests/e2e_linker/kb_search/test_partial_matrix.py`` (ENOSPC injected into ``os.pwrite``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from e2e_linker.cli import main
from tests.helpers.tiny_linker import tiny_linker_dir
from tests.helpers.tmpfs import mounted_tmpfs

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "bc5cdr_sample.bioc.xml"
DAMAGE_LINE = re.compile(r"KB cache: (\S+) is damaged \(([^\n]*?)\); ([^\n]*)")


def _annotate(model: Path, cache: Path, out: Path, *first: str):
    return CliRunner().invoke(main, [*first, "annotate", str(SAMPLE), "-o", str(out),
                                     "--replace", "--model", str(model), "--cache-dir",
                                     str(cache)])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The tiny model with a packed KB index; a cache a first run filled partly (and its
    output), and a fully built cache (and its output)."""
    root = tmp_path_factory.mktemp("cache_faults")
    model, _ = tiny_linker_dir(root / "tiny", filler_concepts=3000)
    full = root / "full-cache"
    packed = CliRunner().invoke(main, ["kb", "pack", "--model", str(model), "--cache-dir",
                                       str(full), "--pq-bytes", "8", "--nlist", "16"])
    assert packed.exit_code == 0, packed.output
    partial = root / "partial-cache"
    first = _annotate(model, partial, root / "partial.xml", "-v")  # -v: the KB index lines
    assert first.exit_code == 0, first.output
    assert "packed index shipped with the model" in first.stderr
    full_run = _annotate(model, full, root / "full.xml", "-v")
    assert full_run.exit_code == 0 and "packed index" not in full_run.stderr
    return {"model": model, "partial": partial, "full": full,
            "partial.xml": (root / "partial.xml").read_bytes(),
            "full.xml": (root / "full.xml").read_bytes()}


def _copy(setup, kind: str, where: Path) -> Path:
    shutil.copytree(setup[kind], where)
    return where


def _kb_file(cache: Path, suffix: str) -> Path:
    (found,) = [p for p in cache.glob("entity_vectors/*/kb/*") if p.name.endswith(suffix)]
    return found


def _damage_lines(stderr: str) -> list[tuple[str, str, str]]:
    return DAMAGE_LINE.findall(stderr)


def _litter(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if "tmp" in p.name)


def _cut(path: Path, size: int) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(size)


def _zero_values(path: Path) -> None:
    """Overwrite an .npy file's values with zeros, same size (its header kept)."""
    from e2e_linker.kb_search.integrity import npy_layout

    offset = npy_layout(path).offset
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(bytes(path.stat().st_size - offset))


def _rerun_is_clean(setup, cache: Path, tmp_path: Path, reference: str) -> None:
    again = _annotate(setup["model"], cache, tmp_path / "again.xml")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again.xml").read_bytes() == setup[reference]
    assert _damage_lines(again.stderr) == []  # repaired once, not reported on every run


# ---- damaged files: named, discarded, encoded again, the reference bytes ---------------------

@pytest.mark.parametrize("suffix,damage,why", [
    (".partial-have.npy", "half", r"1,569 bytes where its header needs 3,139 \(cut short\)"),
    (".partial.npy", "one byte short", r"192,831 bytes where its header needs 192,832 "
                                       r"\(cut short\)"),
    (".partial-have.npy", "empty", r"empty"),
])
def test_a_cut_partial_file_is_named_and_the_output_is_the_reference(setup, tmp_path, suffix,
                                                                     damage, why):
    cache = _copy(setup, "partial", tmp_path / "cache")
    target = _kb_file(cache, suffix)
    _cut(target, {"half": target.stat().st_size // 2, "empty": 0,
                  "one byte short": target.stat().st_size - 1}[damage])
    result = _annotate(setup["model"], cache, tmp_path / "out.xml")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.xml").read_bytes() == setup["partial.xml"]
    ((named, said, action),) = _damage_lines(result.stderr)
    assert named == str(target) and re.fullmatch(why, said), said
    assert action == "discarded; the rows it held are encoded again when a search needs them"
    _rerun_is_clean(setup, cache, tmp_path, "partial.xml")


def test_kb_info_lists_an_empty_have_file_as_damaged_instead_of_aborting(setup, tmp_path):
    cache = _copy(setup, "partial", tmp_path / "cache")
    _kb_file(cache, ".partial-have.npy").write_bytes(b"")
    done = CliRunner().invoke(main, ["kb", "info", "--cache-dir", str(cache)])
    assert done.exit_code == 0 and "Aborted" not in done.output, done.output
    assert "damaged (`linker kb info --verify` says how" in done.stdout


def test_zeroed_partial_rows_fail_their_checksums_and_are_encoded_again(setup, tmp_path):
    cache = _copy(setup, "partial", tmp_path / "cache")
    rows = _kb_file(cache, ".partial.npy")
    _zero_values(rows)
    result = _annotate(setup["model"], cache, tmp_path / "out.xml")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.xml").read_bytes() == setup["partial.xml"]
    ((named, said, _),) = _damage_lines(result.stderr)
    assert named == str(rows) and re.fullmatch(r"([\d,]+) of \1 stored rows do not match their "
                                               r"checksums in \w+\.partial-sums\.npy", said)
    _rerun_is_clean(setup, cache, tmp_path, "partial.xml")


@pytest.mark.parametrize("damage", ["zeros", "one byte short"])
def test_a_damaged_full_matrix_is_made_again_to_the_reference(setup, tmp_path, damage):
    cache = _copy(setup, "full", tmp_path / "cache")
    (matrix,) = [p for p in cache.glob("entity_vectors/*/kb/*.npy")]
    reference = matrix.read_bytes()
    _zero_values(matrix) if damage == "zeros" else _cut(matrix, matrix.stat().st_size - 1)
    result = _annotate(setup["model"], cache, tmp_path / "out.xml")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.xml").read_bytes() == setup["full.xml"]
    ((named, _, action),) = _damage_lines(result.stderr)
    assert named == str(matrix) and action == "discarded; its vectors are made again"
    assert matrix.read_bytes() == reference  # gathered again from the intact name table
    _rerun_is_clean(setup, cache, tmp_path, "full.xml")


def test_verify_reports_each_file_and_exits_2_on_damage(setup, tmp_path):
    cache = _copy(setup, "full", tmp_path / "cache")
    ok = CliRunner().invoke(main, ["kb", "info", "--cache-dir", str(cache), "--verify"])
    assert ok.exit_code == 0 and ok.stdout.count("\n  ok          entity_vectors/") == 3, \
        ok.output
    # issue 47: it verifies everything it lists, the compiled KB and the shipped files too
    assert "\n  ok          compiled_kb/" in ok.stdout and "verify shipped: " in ok.stdout
    assert "damaged" not in ok.stdout and "unverified" not in ok.stdout
    names = next(cache.glob("entity_vectors/*/names.jsonl"))
    with open(names, "r+b") as handle:
        handle.write(b"X")
    bad = CliRunner().invoke(main, ["kb", "info", "--cache-dir", str(cache), "--verify"])
    rel = names.relative_to(cache)
    assert bad.exit_code == 2
    assert f"  damaged     {rel}: 1 of 1 blocks do not match their checksums" in bad.stdout
    assert bad.stderr.strip().splitlines()[-1].startswith(f"error: 1 damaged KB cache file in "
                                                          f"{cache} ({rel})")


def test_kb_info_lists_a_partial_cache_once_with_its_kb_and_fill(setup):
    done = CliRunner().invoke(main, ["kb", "info", "--cache-dir", str(setup["partial"])])
    assert done.exit_code == 0, done.output
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("    ")]
    assert re.fullmatch(r"    KB tsv:\S+kb\.tsv: [\d,]+ of 3,011 names encoded \(\d+\.\d %; the "
                        r"others when a search shortlists them\), index packed, packed index "
                        r"\S+kb_index\.safetensors", line), line


# ---- a full or read-only disk (tmpfs, root only) ------------------------------------------------

def _tmpfs(where: Path, options: str):
    return mounted_tmpfs(where, options, "test_partial_matrix.py injects ENOSPC into the same writes")


#: annotate in a child process (a SIGBUS would kill pytest), with the room check made blind, as
#: when another process fills the disk after it: the write itself must fail cleanly
BLIND = textwrap.dedent("""
    import sys
    from e2e_linker.kb_search import partial_matrix
    from e2e_linker.cli import main
    partial_matrix.ensure_room = lambda *args, **kwargs: None
    sys.argv = ["linker", *sys.argv[1:]]
    main()
""")


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and lines[-1].startswith("error: "), stderr
    assert [line for line in lines if "error: " in line] == lines[-1:], stderr
    return lines[-1]


@pytest.mark.parametrize("checked", [True, False], ids=["room-checked", "disk-fills-up"])
def test_a_full_disk_while_rows_are_encoded_is_one_line_and_leaves_nothing(setup, tmp_path,
                                                                           checked):
    with _tmpfs(tmp_path / "disk", "size=64k") as disk:
        cache = disk / "cache"
        command = [sys.executable, *([] if checked else ["-c", BLIND]),
                   *(["-m", "e2e_linker"] if checked else []),
                   "annotate", str(SAMPLE), "-o", str(tmp_path / "out.xml"), "--replace",
                   "--model", str(setup["model"]), "--cache-dir", str(cache)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert done.returncode == 2, (done.returncode, done.stderr[-2000:])  # was -7: SIGBUS
        line = _one_error_line(done.stderr)
        folder = next(cache.glob("entity_vectors/*"))
        if checked:
            assert re.fullmatch(rf"error: cannot write the KB cache in {folder}: only \d+\.\d MB "
                                r"free, and encoding shortlisted KB names needs \d+\.\d MB; "
                                r"free some space, or point E2E_LINKER_CACHE \(or --cache-dir\) "
                                r"at a folder with room", line), line
        else:
            assert line.startswith(f"error: cannot write the KB cache in {folder}: No space "
                                   "left on device;"), line
        assert not [p for p in cache.rglob("*.npy")], list(cache.rglob("*"))  # no sparse file
        assert _litter(cache) == []
    assert not (tmp_path / "out.xml").exists()


def test_a_damaged_file_on_a_read_only_cache_names_the_file_to_delete(setup, tmp_path):
    with _tmpfs(tmp_path / "ro", "size=4m") as disk:
        cache = _copy(setup, "partial", disk / "cache")
        # not the compiled KB: this in-process run would map it, and the failed run's
        # traceback (kept by CliRunner) would keep it mapped, the disk busy at unmount
        shutil.rmtree(cache / "compiled_kb")
        have = _kb_file(cache, ".partial-have.npy")
        have.write_bytes(b"")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        result = _annotate(setup["model"], cache, tmp_path / "out.xml")
        line = _one_error_line(result.stderr)
        assert result.exit_code == 2
        assert line == (f"error: the KB cache file {have} is damaged (empty) and cannot be "
                        "removed here (Read-only file system); delete it (what it held is "
                        "encoded again), or point E2E_LINKER_CACHE (or --cache-dir) at another "
                        "folder")
    assert not (tmp_path / "out.xml").exists()
