"""One output guard for every command that writes what the user names (issue 47): the input
is never the output, a shard of the run being merged is never the output, a FIFO, a device or
a directory is never replaced by a regular file, a symlink is written through, and SIGTERM
leaves no temporary file. Each refusal is exit code 2 and one line on stderr naming the path,
with the input's bytes unchanged, made before anything is read or a model loads (a missing KB
or a broken model directory proves it: had it loaded, that would be the error).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.formats.atomic import OutputError, atomic_output
from e2e_linker.cli import main
from e2e_linker.jobs.corpus_run import run_to_directory

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bc5cdr_sample.bioc.xml"
FIFO = "is a FIFO (named pipe), not a regular file: writing would replace it; name a regular " \
       "file or a new path"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Run in ``tmp_path``; a replace outside it (``/dev/null``, should a guard fail) raises
    instead of happening."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("E2E_LINKER_CACHE", str(tmp_path / "cache"))
    real = os.replace

    def replace(src, dst, **kwargs):
        assert Path(os.path.realpath(dst)).is_relative_to(os.path.realpath(tmp_path)), \
            f"would replace {dst}"
        real(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return tmp_path


def refused(args: list[str]) -> str:
    """Run ``linker ARGS``: exit code 2, exactly one line on stderr (returned), no traceback."""
    result = CliRunner().invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def litter(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.part"))


def finished_run(where: Path) -> Path:
    """A finished shard directory of the example (5 documents, 3 shards)."""
    run_to_directory([EXAMPLE], where, None, shard_size=2, progress=False)
    return where


# ---- 1. view: never over its input or its gold ----------------------------------------------

@pytest.mark.parametrize("gold", [False, True])
def test_view_refuses_its_input_or_gold_as_output(in_tmp, gold):
    shutil.copy(EXAMPLE, "pred.xml")
    shutil.copy(EXAMPLE, "gold.xml")
    target = "./gold.xml" if gold else "pred.xml"
    args = ["view", "pred.xml", "-o", target, "--kb", f"tsv:{in_tmp}/no-such-kb.tsv"]
    line = refused(args + (["--gold", "gold.xml"] if gold else []))
    source = "gold.xml" if gold else "pred.xml"
    assert line == (f"error: -o {target} is the input {source}: writing it would destroy the "
                    "input; choose another output path")
    for name in ("pred.xml", "gold.xml"):
        assert Path(name).read_bytes() == EXAMPLE.read_bytes()
    assert litter(in_tmp) == []


# ---- 2. what is not a regular file: refused; a symlink: written through ----------------------

@pytest.mark.parametrize("args,label", [
    (["view", str(EXAMPLE), "-o", "out.html"], "-o"),
    (["convert", str(EXAMPLE), "out.html"], "TARGET"),
    (["annotate", str(EXAMPLE), "-o", "out.html", "--model", "broken-model"], "-o"),
    (["normalize", str(EXAMPLE), "-o", "out.html", "--model", "no-such-model"], "-o"),
    (["merge", "run", "-o", "out.html"], "-o"),
])
def test_a_fifo_output_is_refused_and_stays_a_fifo(in_tmp, args, label):
    os.mkfifo("out.html")
    Path("broken-model").mkdir()
    finished_run(in_tmp / "run")
    assert refused(args) == f"error: {label} out.html {FIFO}"
    assert stat.S_ISFIFO(os.lstat("out.html").st_mode)
    assert litter(in_tmp) == []


def test_dev_null_and_a_link_to_it_are_refused(in_tmp):
    Path("null.html").symlink_to(os.devnull)
    for target in (os.devnull, "null.html"):
        line = refused(["view", str(EXAMPLE), "-o", target, "--no-names"])
        assert line == (f"error: -o {target} is a character device, not a regular file: "
                        "writing would replace it; name a regular file or a new path")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and Path("null.html").is_symlink()


def test_a_directory_where_a_file_goes_is_one_line(in_tmp):
    Path("out").mkdir()
    finished_run(in_tmp / "run")
    for args in (["view", str(EXAMPLE), "-o", "out", "--no-names"], ["merge", "run", "-o", "out"]):
        assert refused(args) == "error: -o out is a directory; name the output file"
    assert refused(["convert", str(EXAMPLE), "out"]) == \
        "error: TARGET out is a directory; name the output file"
    assert os.listdir("out") == []


def test_the_atomic_writer_itself_refuses_a_fifo_a_device_and_a_directory(in_tmp):
    os.mkfifo("fifo")
    Path("folder").mkdir()
    targets = {"fifo": "a FIFO (named pipe)", "folder": "a directory"}
    try:  # a device of our own: a broken writer must not get to replace /dev/null
        os.mknod("null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets["null"] = "a character device"
    except (PermissionError, OSError):
        pass
    for name, kind in targets.items():
        with pytest.raises(OutputError) as error:
            with atomic_output(name) as handle:
                handle.write("never")
        assert str(error.value) == f"cannot write {name}: {kind}, not a regular file"
    assert stat.S_ISFIFO(os.lstat("fifo").st_mode) and os.listdir("folder") == []
    if "null" in targets:
        assert stat.S_ISCHR(os.lstat("null").st_mode)
    assert litter(in_tmp) == []


def test_a_symlinked_output_is_written_through_and_stays_a_link(in_tmp):
    Path("real.xml").write_text("the previous output\n")
    Path("link.xml").symlink_to("real.xml")
    Path("dangling.xml").symlink_to("new.xml")
    for target in ("plain.xml", "link.xml", "dangling.xml"):
        done = CliRunner().invoke(main, ["convert", str(EXAMPLE), target])
        assert done.exit_code == 0, done.output
    assert os.readlink("link.xml") == "real.xml" and os.readlink("dangling.xml") == "new.xml"
    assert Path("real.xml").read_bytes() == Path("new.xml").read_bytes() == \
        Path("plain.xml").read_bytes() != b"the previous output\n"
    with atomic_output("link.xml") as handle:  # the writer itself, for every command
        handle.write("through the link\n")
    assert Path("link.xml").is_symlink() and Path("real.xml").read_text() == "through the link\n"
    assert sorted(os.listdir(".")) == ["dangling.xml", "link.xml", "new.xml", "plain.xml",
                                       "real.xml"]


# ---- 3. merge: never over the run it merges ---------------------------------------------------

@pytest.mark.parametrize("target", ["run/shards/00000.xml", "run/manifest.json", "run/m.xml",
                                    "run"])
def test_merge_refuses_a_target_inside_the_run_it_merges(in_tmp, target):
    run = finished_run(in_tmp / "run")
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    line = refused(["merge", "run", "-o", target])
    assert line == (f"error: -o {target} is inside the input directory run: the output would "
                    "overwrite or join its inputs; choose an output path outside it")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    done = CliRunner().invoke(main, ["merge", "run", "-o", "merged.xml"])
    assert done.exit_code == 0, done.output


# ---- the other writers: calibrate, export, kb pack, convert ----------------------------------

def test_every_other_writer_refuses_its_input_before_the_model_loads(in_tmp):
    model = in_tmp / "model"  # not a loadable model: had it loaded, that would be the error
    model.mkdir()
    (model / "linker_config.json").write_text("{}")
    shutil.copy(EXAMPLE, "in.xml")
    cases = {
        ("kb", "pack", "--model", "model", "-o", "model/linker_config.json"):
            "error: -o model/linker_config.json is the input model/linker_config.json: "
            "writing it would destroy the input; choose another output path",
        ("export", "model", "model"):
            "error: OUT_DIR model is inside the input directory model: the output would "
            "overwrite or join its inputs; choose an output path outside it",
        ("export", "model", "in.xml"):
            "error: OUT_DIR in.xml is a file, not a directory; name a new or existing directory",
        ("convert", "in.xml", "./in.xml"):
            "error: TARGET ./in.xml is the input in.xml: writing it would destroy the input; "
            "choose another output path",
    }
    for args, line in cases.items():
        assert refused(list(args)) == line
    os.mkfifo(model / "activation_absmax.safetensors")
    assert refused(["calibrate", "model", "in.xml"]) == \
        f"error: the statistics file model/activation_absmax.safetensors {FIFO}"
    assert (model / "linker_config.json").read_text() == "{}"
    assert Path("in.xml").read_bytes() == EXAMPLE.read_bytes()
    assert sorted(os.listdir(model)) == ["activation_absmax.safetensors", "linker_config.json"]


# ---- 4. SIGTERM, like Ctrl-C, removes the temporary file -------------------------------------

SLOW_RUN = """
import sys, time
from e2e_linker.jobs.corpus_run import run_to_file

def slow(docs):  # the annotator at work while the output's temporary file is open
    print("writing", flush=True)
    time.sleep(120)
    return docs

run_to_file([sys.argv[1]], sys.argv[2], slow, progress=False)
"""


def test_sigterm_during_a_one_file_run_leaves_no_temporary_file(in_tmp):
    Path("out.xml").write_text("the previous output\n")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(EXAMPLE), "out.xml"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "writing\n", proc.stderr.read()
        assert len(litter(in_tmp)) == 1  # the run's .out.xml.xxxxxxxx.part
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    assert "Traceback" not in proc.stderr.read()
    assert litter(in_tmp) == [] and Path("out.xml").read_text() == "the previous output\n"
