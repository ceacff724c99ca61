"""Fault injection (issue 28): every way the user or the machine can fail a run ends in the
reference output bytes, or in exit code 2 with one line naming the path to fix — the input
untouched, no temporary file left behind.

* ``-o`` is an input (however spelled), cannot be written, or has no room: refused before the
  model loads (a broken ``--model`` proves it: had it loaded, that would be the error);
* the disk fills up while the output is written: one line naming the output, no ``.part``;
* a run killed outright leaves a ``.part``: the next run to that output removes it;
* killing the launcher of ``--num-processes 2`` kills its workers; ``--resume`` finishes the
  run to the reference bytes;
* the Python API refuses a string where a list of texts belongs, names bad items' positions;
* the page test skips without Chromium and fails without it under CI.

A full or read-only disk is a small tmpfs where the tests run as root (CI's container), and is
skipped with the reason elsewhere; a failing write is also injected everywhere by making the
output's fsync fail with ENOSPC.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.documents import Document, Passage
from data_tools.formats import write_documents
from e2e_linker.api import Linker
from e2e_linker.cli import main
from e2e_linker.errors import UserError
from e2e_linker.jobs import output_checks
from tests.helpers import chromium as chromium_helper
from tests.helpers.tiny_linker import tiny_linker_dir
from tests.helpers.tmpfs import mounted_tmpfs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bc5cdr_sample.bioc.xml"
SHARD = 10


@pytest.fixture(scope="module")
def setup(tmp_path_factory, bc5cdr_test_docs):
    """The tiny model, a broken model directory, a 100-document corpus and its reference
    output (one process, one file)."""
    root = tmp_path_factory.mktemp("faults")
    model, _ = tiny_linker_dir(root / "tiny", threshold=0.6)
    broken = root / "broken-model"
    broken.mkdir()
    corpus = root / "corpus.txt"
    write_documents(bc5cdr_test_docs[:100], corpus)
    reference = root / "reference.xml"
    result = _invoke(["annotate", str(corpus), "-o", str(reference), "--model", str(model),
                      "--shard-size", str(SHARD)], root / "cache")
    assert result.exit_code == 0, result.output
    return model, broken, corpus, reference.read_bytes(), root / "cache"


def _invoke(args: list[str], cache: Path):
    return CliRunner().invoke(main, args, env={"E2E_LINKER_CACHE": str(cache)})


def _one_error_line(result, only: bool = True) -> str:
    """The run failed with exit code 2 and one error line, last, with no traceback; ``only``:
    nothing else on stderr either (refused before any work, so no progress bars)."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], result.stderr
    assert "Traceback" not in result.stderr and (len(lines) == 1 or not only), result.stderr
    return lines[-1]


def _litter(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.part"))


def _tmpfs(where: Path, options: str):
    return mounted_tmpfs(where, options, "the injected-ENOSPC tests cover the same code")


# ---- 1. outputs: never an input, refused before the model loads ---------------------------

@pytest.mark.parametrize("spelling", ["in.xml", "./in.xml", "sub/../in.xml", "link.xml"])
def test_an_output_that_is_the_input_is_refused_and_the_input_kept(setup, tmp_path,
                                                                   monkeypatch, spelling):
    _, broken, _, _, cache = setup
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, "in.xml")
    Path("sub").mkdir()
    Path("link.xml").symlink_to("in.xml")
    line = _one_error_line(_invoke(["annotate", "in.xml", "-o", spelling, "--replace",
                                    "--model", str(broken)], cache))
    assert line == (f"error: -o {spelling} is the input in.xml: writing it would destroy the "
                    "input; choose another output path")
    assert Path("in.xml").read_bytes() == EXAMPLE.read_bytes()


def test_an_output_inside_an_input_directory_is_refused(setup, tmp_path, monkeypatch):
    _, broken, _, _, cache = setup
    monkeypatch.chdir(tmp_path)
    Path("corpus").mkdir()
    shutil.copy(EXAMPLE, "corpus/a.xml")
    line = _one_error_line(_invoke(["annotate", "corpus", "-o", "corpus/a.xml",
                                    "--model", str(broken)], cache))
    assert "-o corpus/a.xml is inside the input directory corpus" in line
    assert Path("corpus/a.xml").read_bytes() == EXAMPLE.read_bytes()
    assert sorted(os.listdir("corpus")) == ["a.xml"]


def test_normalize_refuses_its_input_as_output_too(setup, tmp_path, monkeypatch):
    _, _, _, _, cache = setup
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, "in.xml")
    line = _one_error_line(_invoke(["normalize", "in.xml", "-o", "./in.xml",
                                    "--model", str(tmp_path / "no-such-model")], cache))
    assert "-o ./in.xml is the input in.xml" in line
    assert Path("in.xml").read_bytes() == EXAMPLE.read_bytes()


def test_a_parent_that_is_a_file_is_named_before_the_model_loads(setup, tmp_path):
    _, broken, corpus, _, cache = setup
    (tmp_path / "afile").write_text("")
    line = _one_error_line(_invoke(["annotate", str(corpus), "-o",
                                    str(tmp_path / "afile" / "out.xml"),
                                    "--model", str(broken)], cache))
    assert line == (f"error: cannot write -o {tmp_path}/afile/out.xml: {tmp_path}/afile is a "
                    "file, not a directory")


def test_a_read_only_directory_is_named_before_the_model_loads(setup, tmp_path):
    _, broken, corpus, _, cache = setup
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as ro:
        line = _one_error_line(_invoke(["annotate", str(corpus), "-o", str(ro / "out.xml"),
                                        "--model", str(broken)], cache))
    assert line == (f"error: cannot write -o {ro}/out.xml: the directory {ro} is not writable "
                    "(a read-only file system)")


def test_a_nearly_full_disk_is_named_before_the_model_loads(setup, tmp_path):
    _, broken, corpus, _, cache = setup
    with _tmpfs(tmp_path / "small", "size=1m") as small:
        line = _one_error_line(_invoke(["annotate", str(corpus), "-o", str(small / "out.xml"),
                                        "--model", str(broken)], cache))
    assert line.startswith(f"error: cannot write -o {small}/out.xml: only 1.0 MB free in "
                           f"{small}, and a run needs 8.0 MB there")


# ---- the disk fills up while the output is written ------------------------------------------

@pytest.mark.parametrize("target,hint", [
    ("out.xml", "nothing was written"), ("run", "the finished shards are kept")])
def test_a_disk_that_fills_up_is_one_line_naming_the_output(setup, tmp_path, monkeypatch,
                                                             target, hint):
    model, _, corpus, reference, cache = setup
    monkeypatch.setattr(output_checks, "MIN_FREE_BYTES", 0)  # room at the start, none later
    with _tmpfs(tmp_path / "disk", "size=400k") as disk:  # > the input, < the output
        line = _one_error_line(_invoke(["annotate", str(corpus), "-o", str(disk / target),
                                        "--model", str(model), "--shard-size", str(SHARD)],
                                       cache), only=False)
        assert line.startswith(f"error: cannot write {disk}/{target}")
        assert ": No space left on device (" in line and hint in line
        assert _litter(disk) == []
        if target == "run":  # what was finished is resumable once there is room
            moved = tmp_path / "roomy"
            shutil.copytree(disk / "run", moved)
    if target == "run":
        result = _invoke(["annotate", str(corpus), "-o", str(moved), "--model", str(model),
                          "--shard-size", str(SHARD), "--resume"], cache)
        assert result.exit_code == 0, result.output
        assert _invoke(["merge", str(moved), "-o", str(tmp_path / "m.xml")], cache) \
            .exit_code == 0
        assert (tmp_path / "m.xml").read_bytes() == reference


@pytest.mark.parametrize("err,reason", [(errno.ENOSPC, "No space left on device"),
                                        (errno.EDQUOT, "Disk quota exceeded"),
                                        (errno.EACCES, "Permission denied")])
def test_an_injected_write_failure_is_one_line_and_leaves_nothing(setup, tmp_path, monkeypatch,
                                                                  err, reason):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to tell the writer's file descriptors")
    model, _, _, _, cache = setup
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".part"):
            raise OSError(err, os.strerror(err))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "out.xml"
    out.write_text("the previous output\n")
    line = _one_error_line(_invoke(["annotate", str(EXAMPLE), "-o", str(out),
                                    "--model", str(model)], cache), only=False)
    assert line == (f"error: cannot write {out}: {reason} (nothing was written; free some "
                    "space or fix the path, then run again)")
    assert out.read_text() == "the previous output\n"
    assert _litter(tmp_path) == []


# ---- a run killed outright: its temporary file goes with the next run -----------------------

def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "E2E_LINKER_CACHE": str(cache), "OMP_NUM_THREADS": "1"}


def _command(model: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "e2e_linker", "annotate", str(corpus), "-o", str(out),
            "--model", str(model), "--shard-size", str(SHARD), *extra]


def _wait_for(check, seconds: float = 240.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert proc is None or proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_killed_runs_temporary_file_is_removed_by_the_next_run(setup, tmp_path):
    model, _, corpus, reference, cache = setup
    out = tmp_path / "out.xml"
    proc = subprocess.Popen(_command(model, corpus, out), env=_env(cache),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: _litter(tmp_path), proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(_litter(tmp_path)) == 1 and not out.exists()

    again = subprocess.run(_command(model, corpus, out), env=_env(cache), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == reference
    assert _litter(tmp_path) == []


# ---- 3. processes: workers die with their launcher, --resume takes over ---------------------

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                    reason="tells living processes by /proc (Linux)")
def test_killing_the_launcher_kills_its_workers_and_resume_finishes(setup, tmp_path):
    import psutil

    model, _, corpus, reference, cache = setup
    out = tmp_path / "out.xml"
    shards = tmp_path / "out.xml.shards" / "shards"
    launcher = subprocess.Popen(_command(model, corpus, out, "--num-processes", "2"),
                                env=_env(cache), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    _wait_for(lambda: (shards / "00000.json").exists() or (shards / "00001.json").exists(),
              proc=launcher)
    workers = [p.pid for p in psutil.Process(launcher.pid).children()]
    assert len(workers) == 2
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in workers):
        assert time.monotonic() < deadline, "the workers outlived their launcher"
        time.sleep(0.05)
    assert not out.exists()

    refused = subprocess.run(_command(model, corpus, out, "--num-processes", "2"),
                             env=_env(cache), capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "pass --resume" in refused.stderr
    resumed = subprocess.run(_command(model, corpus, out, "--num-processes", "2", "--resume"),
                             env=_env(cache), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == reference
    assert sorted(os.listdir(tmp_path)) == ["out.xml"]  # shards merged and removed, no litter


# ---- 4. the API: a string is one text, bad items are named by position ----------------------

@pytest.fixture(scope="module")
def linker(setup):
    model, _, _, _, cache = setup
    return Linker.load(model, cache_dir=str(cache), index_kind="exact",
                       normalizer_model=str(cache.parent / "no-normalizer"))


def test_pipe_of_a_string_raises_instead_of_annotating_each_character(linker):
    with pytest.raises(UserError, match=r"a str is one text: pass \[text\]"):
        linker.pipe("Famotidine-associated delirium.")
    with pytest.raises(UserError, match="pipe item 2: expected a str or a Document, not int"):
        list(linker.pipe(["Famotidine.", Document(id="d", passages=[Passage(offset=0, text="Delirium.")]),
                          7]))


def test_normalize_validates_its_items_before_the_normalizer_loads(linker):
    with pytest.raises(UserError, match=r"normalize item 1: expected a text, a \(text, type\) "
                                        r"pair or a \(text, type, species\) triple, not "
                                        r"\('a', 'b', 'c', 'd'\)"):
        linker.normalize([("tamoxifen",), ("a", "b", "c", "d")])
    with pytest.raises(UserError, match=r"a str is one mention: pass \[text\]"):
        linker.normalize("tamoxifen")


# ---- 5. the page test on a fresh machine ----------------------------------------------------

def test_the_page_test_skips_without_chromium_and_fails_without_it_under_ci(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser anywhere
    for unset in (None, "", "0", "false"):
        if unset is None:
            monkeypatch.delenv("CI", raising=False)
        else:
            monkeypatch.setenv("CI", unset)
        with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
            chromium_helper.chromium()
    for value in ("1", "true"):
        monkeypatch.setenv("CI", value)
        with pytest.raises(pytest.fail.Exception, match="CI must have it"):
            chromium_helper.chromium()
