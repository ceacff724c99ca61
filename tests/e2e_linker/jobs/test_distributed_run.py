"""`linker annotate --num-processes 2`: two CPU processes (gloo) share one shard directory.

The merged output must be the bytes of a one-process run; the KB vectors must be encoded by
one process only; resume works per shard whatever the number of processes; an error in the
coordination step is reported once with exit code 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.formats import read_documents, write_documents
from e2e_linker.cli import main
from e2e_linker.commands.annotate import command as annotate_command
from e2e_linker.console import VERBOSE_ENV
from e2e_linker.jobs.corpus_run import REPORT, SHARDS
from e2e_linker.jobs.distributed import render_argv
from tests.helpers.tiny_linker import tiny_linker_dir

SHARD = 7


@pytest.fixture(scope="module")
def setup(tmp_path_factory, bc5cdr_test_docs):
    root = tmp_path_factory.mktemp("distributed")
    model, _ = tiny_linker_dir(root / "tiny", threshold=0.6)
    corpus = root / "corpus"
    corpus.mkdir()
    docs = bc5cdr_test_docs[:60]  # two formats, the file boundary inside shard 4
    write_documents(docs[:30], corpus / "a.txt")
    write_documents(docs[30:], corpus / "b.xml")
    single = root / "single.xml"
    result = CliRunner().invoke(main, ["annotate", str(corpus), "-o", str(single), "--model",
                                       str(model), "--shard-size", str(SHARD)],
                                env={"E2E_LINKER_CACHE": str(root / "cache")})
    assert result.exit_code == 0, result.output
    return model, corpus, single, [d.id for d in docs]


def _run(model: Path, corpus: Path, out: Path | str, cache: Path, *extra: str):
    # verbose: the progress lines the assertions count are off on a pipe by default
    env = {**os.environ, "E2E_LINKER_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           VERBOSE_ENV: "1"}
    return subprocess.run([sys.executable, "-m", "e2e_linker", "annotate", str(corpus), "-o",
                           str(out), "--model", str(model), "--shard-size", str(SHARD), *extra],
                          env=env, capture_output=True, text=True, timeout=300)


def _merged(out: Path, target: Path) -> bytes:
    result = CliRunner().invoke(main, ["merge", str(out), "-o", str(target)])
    assert result.exit_code == 0, result.output
    return target.read_bytes()


def test_two_processes_merge_to_the_one_process_bytes(setup, tmp_path):
    model, corpus, single, ids = setup
    out = tmp_path / "run"
    done = _run(model, corpus, out, tmp_path / "cache", "--num-processes", "2")
    assert done.returncode == 0, done.stderr
    # a fresh cache: the main process encoded the KB, the other only memory-mapped it
    assert done.stderr.count("encoding KB names:   0%") == 1
    assert done.stderr.count(f"wrote {len(ids)} documents") == 1  # one summary, from rank 0
    shards = -(-len(ids) // SHARD)
    assert sorted(p.name for p in (out / SHARDS).glob("*.xml")) == [
        f"{k:05d}.xml" for k in range(shards)]
    report = json.loads((out / REPORT).read_text())
    assert (report["shards"], report["documents"], report["skipped"]) == (shards, len(ids), [])
    assert _merged(out, tmp_path / "merged.xml") == single.read_bytes()

    # resume per shard, with another number of processes: redo shards 1 and 4 in one process
    (out / REPORT).unlink()
    for k in (1, 4):
        (out / SHARDS / f"{k:05d}.json").unlink()
    (out / SHARDS / "00004.xml").write_bytes(b"torn")
    again = _run(model, corpus, out, tmp_path / "cache", "--resume")
    assert again.returncode == 0, again.stderr
    assert f"{shards - 2} shards already done" in again.stderr
    assert _merged(out, tmp_path / "merged2.xml") == single.read_bytes()
    assert [d.id for d in read_documents(tmp_path / "merged2.xml")] == ids


def test_accelerate_launch_gives_the_same_bytes(setup, tmp_path):
    """The launcher path users take on GPUs and clusters, here with 2 CPU processes."""
    model, corpus, single, ids = setup
    launcher = Path(sys.executable).with_name("accelerate")
    if not launcher.is_file():
        pytest.skip("accelerate's launcher is not installed beside this interpreter")
    out = tmp_path / "run"
    env = {**os.environ, "E2E_LINKER_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [str(launcher), "launch", "--cpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "e2e_linker", "annotate",
         str(corpus), "-o", str(out), "--model", str(model), "--shard-size", str(SHARD)],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / REPORT).read_text())
    assert report["documents"] == len(ids)
    assert _merged(out, tmp_path / "merged.xml") == single.read_bytes()


def test_a_refused_run_is_one_error_line_with_exit_code_2(setup, tmp_path):
    model, corpus, _, _ = setup
    out = tmp_path / "busy"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    result = _run(model, corpus, out, tmp_path / "cache", "--num-processes", "2")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {out} already holds a run (manifest.json); pass --resume to "
                      "finish it, or choose an empty directory"]
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def test_several_processes_write_one_file_directly(setup, tmp_path):
    """``-o FILE`` with several processes: shards beside the file, merged, then removed."""
    model, corpus, single, _ = setup
    out = tmp_path / "o.xml"
    result = _run(model, corpus, out, tmp_path / "cache", "--num-processes", "2")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == single.read_bytes()
    assert not (tmp_path / "o.xml.shards").exists()


def test_an_interrupted_one_file_run_resumes_through_its_shards(setup, tmp_path):
    """What a crash leaves (shards without report, one shard unfinished) is finished by the
    same command with --resume, by one process, into the one-process bytes."""
    model, corpus, single, _ = setup
    out = tmp_path / "o.xml"
    shards = tmp_path / "o.xml.shards"
    result = _run(model, corpus, f"{shards}/", tmp_path / "cache", "--num-processes", "2")
    assert result.returncode == 0, result.stderr
    (shards / REPORT).unlink()
    (shards / SHARDS / "00003.json").unlink()
    result = _run(model, corpus, out, tmp_path / "cache", "--resume")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == single.read_bytes() and not shards.exists()


def test_worker_arguments_parse_back_into_the_same_parameters(tmp_path, monkeypatch):
    """Every option of the command (its defaults included, so options added later are
    covered) survives the trip through the worker command line."""
    monkeypatch.chdir(tmp_path)
    for name in ("-odd name.txt", "b.xml"):
        (tmp_path / name).write_text("")
    (tmp_path / "m").mkdir()
    defaults = annotate_command.make_context("annotate", ["b.xml", "-o", "x"]).params
    params = {**defaults, "inputs": ("-odd name.txt", "b.xml"), "output": "out dir",
              "model_dir": "m", "fmt": "biocjson", "threshold": 0.25, "batch_size": 8,
              "replace": True, "on_error": "skip", "shard_size": 3,
              "num_processes": 4, "disable": "sieve_stack,short_forms",
              "overrides": ("lexical_gate.gate=0.5", "propagation.threshold=0.3",
                            "dictionary.threshold=0.1")}
    argv = render_argv(annotate_command, params, drop=("num_processes",))
    assert "--num-processes" not in argv
    ctx = annotate_command.make_context("annotate", argv)
    assert ctx.params == {**params, "num_processes": 1}


def test_exact_search_on_a_shared_machine_maps_one_fp32_file(tmp_path):
    """Processes sharing a machine map one fp32 twin of the cached fp16 matrix instead of each
    holding an fp32 copy: same scores, same rows, and the twin is written once."""
    import numpy as np

    from e2e_linker.kb_search.backends import ExactSearch

    rng = np.random.default_rng(0)
    np.save(tmp_path / "v.npy", rng.standard_normal((1000, 16)).astype(np.float16))
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    queries = rng.standard_normal((7, 16)).astype(np.float32)
    copy = ExactSearch(mapped, block_rows=300, shared=False)
    shared = ExactSearch(mapped, block_rows=300, shared=True)
    twin = tmp_path / "v.f32.npy"
    assert np.array_equal(np.load(twin), np.asarray(mapped, dtype=np.float32))
    for a, b in zip(copy.search(queries, 5), shared.search(queries, 5), strict=True):
        assert np.array_equal(a, b)
    stamp = twin.stat().st_mtime_ns
    ExactSearch(mapped, shared=True)
    assert twin.stat().st_mtime_ns == stamp  # mapped again, not rewritten
