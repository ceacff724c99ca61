"""`linker annotate ... -o OUTDIR --resume`: SIGKILL mid-run, resume, nothing lost or doubled.

Also: the shard directory merges into exactly the bytes of a one-file run (what issue 7's
multi-process mode relies on), a resume refuses a changed run, and a damaged shard is redone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from data_tools.formats import read_documents, write_documents
from e2e_linker.cli import main
from e2e_linker.jobs.corpus_run import MANIFEST, REPORT, SHARDS, merge_shards
from tests.helpers.tiny_linker import tiny_linker_dir

SHARD = 10


@pytest.fixture(scope="module")
def setup(tmp_path_factory, bc5cdr_test_docs):
    root = tmp_path_factory.mktemp("resume")
    model, _ = tiny_linker_dir(root / "tiny", threshold=0.6)
    corpus = root / "corpus"
    corpus.mkdir()
    # two files of two formats, so the run crosses a file boundary inside a shard
    write_documents(bc5cdr_test_docs[:125], corpus / "a.txt")
    write_documents(bc5cdr_test_docs[125:250], corpus / "b.xml")
    return model, corpus, [d.id for d in bc5cdr_test_docs[:250]]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "E2E_LINKER_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}


def _annotate(model: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "e2e_linker", "annotate", str(corpus), "-o", str(out),
            "--model", str(model), "--shard-size", str(SHARD), *extra]


def _shard_ids(out: Path) -> list[str]:
    return [d.id for f in sorted((out / SHARDS).glob("*.xml")) for d in read_documents(f)]


def test_sigkill_then_resume_loses_and_duplicates_nothing(setup, tmp_path):
    model, corpus, ids = setup
    out = tmp_path / "run"
    proc = subprocess.Popen(_annotate(model, corpus, out), env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not (out / SHARDS / "00003.json").exists():  # three shards done, more to come
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / REPORT).exists(), "killed before the end"
    done = sorted(p.name for p in (out / SHARDS).glob("*.json"))
    assert 4 <= len(done) < len(ids) // SHARD

    again = subprocess.run(_annotate(model, corpus, out), env=_env(tmp_path),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "--resume" in again.stderr  # no silent overwrite

    resumed = subprocess.run(_annotate(model, corpus, out, "--resume"), env=_env(tmp_path),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(done)} shards already done" in resumed.stderr
    assert _shard_ids(out) == ids  # every document once, in input order
    assert not list(out.rglob("*.part"))  # the killed shard's temporary file is gone
    report = json.loads((out / REPORT).read_text())
    assert (report["documents"], report["shards"]) == (len(ids), len(ids) // SHARD)

    # merged shards == one uninterrupted run into one file, byte for byte
    single = tmp_path / "single.xml"
    result = CliRunner().invoke(main, ["annotate", str(corpus), "-o", str(single), "--model",
                                       str(model), "--shard-size", str(SHARD)],
                                env={"E2E_LINKER_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["merge", str(out), "-o", str(tmp_path / "merged.xml")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "merged.xml").read_bytes() == single.read_bytes()


def test_resume_redoes_a_damaged_shard_and_refuses_a_changed_run(setup, tmp_path):
    model, corpus, ids = setup
    out = tmp_path / "run"
    env = {"E2E_LINKER_CACHE": str(tmp_path / "cache")}
    base = ["annotate", str(corpus), "-o", str(out), "--model", str(model),
            "--shard-size", "50"]
    assert CliRunner().invoke(main, base, env=env).exit_code == 0
    first = (out / SHARDS / "00001.xml").read_bytes()
    (out / SHARDS / "00001.xml").write_bytes(first[: len(first) // 2])  # torn write
    (out / SHARDS / "00002.json").unlink()  # died before recording shard 2
    result = CliRunner().invoke(main, [*base, "--resume"], env=env)
    assert result.exit_code == 0, result.output
    assert "3 shards already done" in result.stderr
    assert (out / SHARDS / "00001.xml").read_bytes() == first
    assert _shard_ids(out) == ids

    result = CliRunner().invoke(main, [*base, "--resume", "--threshold", "0.9"], env=env)
    assert result.exit_code == 2 and "differs from the one started there in: settings" \
        in result.stderr.strip().splitlines()[-1]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["shard_size"] == 50 and len(manifest["inputs"]) == 2


def test_merge_refuses_an_unfinished_or_damaged_run(setup, tmp_path):
    model, corpus, ids = setup
    out = tmp_path / "run"
    env = {"E2E_LINKER_CACHE": str(tmp_path / "cache")}
    assert CliRunner().invoke(main, ["annotate", str(corpus), "-o", str(out), "--model",
                                     str(model), "--shard-size", "100"], env=env).exit_code == 0
    assert merge_shards(out, tmp_path / "all.txt") == len(ids)
    assert [d.id for d in read_documents(tmp_path / "all.txt")] == ids
    shard = out / SHARDS / "00001.xml"
    shard.write_bytes(shard.read_bytes().replace(b"<id>", b"<id>X", 1))
    result = CliRunner().invoke(main, ["merge", str(out), "-o", str(tmp_path / "m.xml")])
    assert result.exit_code == 2 and "shard 1 is missing or damaged" in result.stderr
    (out / REPORT).unlink()
    result = CliRunner().invoke(main, ["merge", str(out), "-o", str(tmp_path / "m.xml")])
    assert result.exit_code == 2 and "not a finished run" in result.stderr
    assert not (tmp_path / "m.xml").exists()


def test_resume_needs_a_directory_and_a_directory_must_be_new(setup, tmp_path):
    model, corpus, _ = setup
    env = {"E2E_LINKER_CACHE": str(tmp_path / "cache")}
    result = CliRunner().invoke(main, ["annotate", str(corpus), "-o", str(tmp_path / "o.xml"),
                                       "--model", str(model), "--resume"], env=env)
    assert result.exit_code == 2 and "--resume needs -o to be a shard directory" in result.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    result = CliRunner().invoke(main, ["annotate", str(corpus), "-o", str(busy), "--model",
                                       str(model)], env=env)
    assert result.exit_code == 2 and "not an empty directory" in result.stderr
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]


def test_bad_document_fails_before_any_shard_and_skip_resumes_with_its_report(setup, tmp_path):
    model, corpus, ids = setup
    bad_corpus = tmp_path / "corpus"
    bad_corpus.mkdir()
    for f in corpus.iterdir():
        (bad_corpus / f.name).write_bytes(f.read_bytes())
    text = (bad_corpus / "a.txt").read_text()
    victim = ids[60]
    assert f"\n{victim}\t" in text
    # its first annotation row gets a non-numeric start offset
    (bad_corpus / "a.txt").write_text(text.replace(f"\n{victim}\t", f"\n{victim}\tx", 1))
    out = tmp_path / "run"
    env = {"E2E_LINKER_CACHE": str(tmp_path / "cache")}
    base = ["annotate", str(bad_corpus), "-o", str(out), "--model", str(model),
            "--shard-size", "25"]
    result = CliRunner().invoke(main, base, env=env)
    assert result.exit_code == 2 and f"document {victim}" in result.stderr.splitlines()[-1]
    assert not out.exists()  # found by the input check, before the model or any shard

    result = CliRunner().invoke(main, [*base, "--on-error", "skip"], env=env)
    assert result.exit_code == 0, result.output
    assert _shard_ids(out) == [i for i in ids if i != victim]
    (out / REPORT).unlink()  # as if killed after shard 3
    for late in sorted((out / SHARDS).glob("*.json"))[4:]:
        late.unlink()
    result = CliRunner().invoke(main, [*base, "--resume", "--on-error", "skip"], env=env)
    assert result.exit_code == 0, result.output
    assert "4 shards already done" in result.stderr
    assert f"skipped: {bad_corpus / 'a.txt'}: document {victim}" in result.stderr
    assert _shard_ids(out) == [i for i in ids if i != victim]
    report = json.loads((out / REPORT).read_text())
    assert [s["where"].split(",")[0] for s in report["skipped"]] == [f"document {victim}"]
