"""tools.gpu_bundle: packing a fake repository (a tiny fake model, one vocabulary plain and one
gzip, a corpus) gives the layout and size accounting the runner expects; unpacking restores
every file the run reads, and nothing it does not; the size limit is enforced. The runner's
steps themselves run the real benchmark and are checked by hand (docs/scaling.md)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tools import gpu_bundle

WEIGHTS = bytes(range(256)) * 64  # 16 KiB of "encoder weights"
KEPT_LINE = f"{'a' * 64}  encoder/model.safetensors\n"
MANIFEST = (KEPT_LINE + f"{'b' * 64}  kb_index.safetensors\n"
            f"{'c' * 64}  normalizer/normalizer.json\n")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture()
def fake_repo(tmp_path) -> Path:
    """A git repository shaped like this one: code, a default model with the files a run
    leaves out, earlier results, files outside the packed paths, and one uncommitted edit."""
    repo = tmp_path / "repo"
    files = {
        "pyproject.toml": '[project]\nname = "x"\ndependencies = ["numpy>=1", '
                          '"tomli>=2.0; python_version < \'3.11\'"]\n',
        "README.md": "not packed\n",
        "e2e_linker/__init__.py": "",
        "e2e_linker/cli.py": "print('cli')\n",
        "e2e_linker/default_model/linker_config.json": "{}\n",
        "e2e_linker/default_model/kb_manifest.json": '{"kb": "fake"}\n',
        "e2e_linker/default_model/kb_index.safetensors": "packed index\n",
        "e2e_linker/default_model/normalizer/normalizer.json": "{}\n",
        "e2e_linker/default_model/SHA256SUMS": MANIFEST,
        "data_tools/__init__.py": "",
        "eval/__init__.py": "",
        "eval/bench.py": "print('bench')\n",
        "eval/results/bench/bench.json": "{}\n",
        "tests/test_x.py": "not packed\n",
        "examples/sample.txt": "not packed\n",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "e2e_linker/default_model/encoder").mkdir()
    (repo / "e2e_linker/default_model/encoder/model.safetensors").write_bytes(WEIGHTS)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fake")
    (repo / "eval/bench.py").write_text("print('bench, edited')\n")  # not committed
    (repo / "e2e_linker/written.py").write_text("not committed yet: packed\n")
    (repo / ".gitignore").write_text("*.pyc\n")
    (repo / "e2e_linker/cli.pyc").write_bytes(b"ignored: not packed")
    return repo


@pytest.fixture()
def fake_data(tmp_path) -> tuple[Path, list[Path], Path]:
    """A data folder with a plain and a gzip vocabulary and a corpus."""
    root = tmp_path / "data"
    plain = root / "vocab" / "medic.txt"
    zipped = root / "vocab" / "genes" / "genes.gene_info.gz"
    corpus = root / "bc5cdr" / "test.BioC.xml"
    for path in (plain, zipped, corpus):
        path.parent.mkdir(parents=True, exist_ok=True)
    plain.write_text("D001\tname\n" * 500)
    zipped.write_bytes(gzip.compress(b"9606\t1\tA1BG\n" * 500))
    corpus.write_text("<collection></collection>\n")
    return root, [plain, zipped], corpus


def test_pack_writes_the_layout_and_counts_every_byte(fake_repo, fake_data, tmp_path, capsys):
    out = tmp_path / "bundle"
    manifest = gpu_bundle.pack(out, fake_repo, data=fake_data)
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == ["bundle.json", "code.tar.xz", "data/bc5cdr/test.BioC.xml.xz",
                     "data/vocab/genes/genes.gene_info.gz.xz", "data/vocab/medic.txt.xz",
                     "gpu_bundle.py", "model.tar.xz", "run.sh"]
    with tarfile.open(out / "code.tar.xz") as tar:
        code = sorted(tar.getnames())
    with tarfile.open(out / "model.tar.xz") as tar:
        model = sorted(tar.getnames())
    # the code under the packed paths as in the working tree, a file not committed yet
    # included; no results, tests, examples, nothing git ignores
    assert code == ["data_tools/__init__.py", "e2e_linker/__init__.py", "e2e_linker/cli.py",
                    "e2e_linker/written.py", "eval/__init__.py", "eval/bench.py",
                    "pyproject.toml"]
    # the model without the normalizer and the packed index
    assert model == ["e2e_linker/default_model/SHA256SUMS",
                     "e2e_linker/default_model/encoder/model.safetensors",
                     "e2e_linker/default_model/kb_manifest.json",
                     "e2e_linker/default_model/linker_config.json"]
    assert manifest["parts"]["model"]["bytes"] == len(KEPT_LINE) + len(WEIGHTS) + 3 + 15
    assert manifest["parts"]["model"]["packed_bytes"] == (out / "model.tar.xz").stat().st_size
    assert manifest["parts"]["data"]["files"] == 3
    assert manifest["corpus"] == "bc5cdr/test.BioC.xml"
    assert manifest["working_tree_changes"] is True
    assert manifest["requires"][0] == "numpy>=1"
    # the total is what copying the folder moves, the manifest included
    assert manifest["total_bytes"] == gpu_bundle.folder_bytes(out)
    printed = capsys.readouterr().out
    assert "of at most 64 MiB" in printed and "model" in printed
    assert (out / "run.sh").stat().st_mode & 0o111


def test_pack_at_a_revision_takes_the_committed_files(fake_repo, fake_data, tmp_path):
    out = tmp_path / "bundle"
    manifest = gpu_bundle.pack(out, fake_repo, rev="HEAD", data=fake_data)
    with tarfile.open(out / "code.tar.xz") as tar:
        text = tar.extractfile("eval/bench.py").read()
        names = tar.getnames()
    assert text == b"print('bench')\n"  # not the uncommitted edit
    assert "e2e_linker/written.py" not in names
    assert manifest["working_tree_changes"] is False


def test_unpack_restores_what_the_run_reads(fake_repo, fake_data, tmp_path):
    out = tmp_path / "bundle"
    gpu_bundle.pack(out, fake_repo, data=fake_data)
    work = tmp_path / "work"
    gpu_bundle.unpack(out, work)
    root, (plain, zipped), corpus = fake_data
    assert (work / "data/vocab/medic.txt").read_bytes() == plain.read_bytes()
    restored = work / "data/vocab/genes/genes.gene_info.gz"
    assert restored.read_bytes()[:2] == b"\x1f\x8b"  # its loader opens .gz by name
    assert gzip.decompress(restored.read_bytes()) == gzip.decompress(zipped.read_bytes())
    assert (work / "data/bc5cdr/test.BioC.xml").read_bytes() == corpus.read_bytes()
    model = work / "code/e2e_linker/default_model"
    assert (model / "encoder/model.safetensors").read_bytes() == WEIGHTS
    # the model's checksum manifest lists what the bundle has, so its load check passes
    assert (model / "SHA256SUMS").read_text() == KEPT_LINE
    assert not (model / "normalizer").exists() and not (model / "kb_index.safetensors").exists()
    assert (work / "code/eval/bench.py").read_text() == "print('bench, edited')\n"
    # a second call finds the marker and leaves the unpacked tree alone
    (work / "code/eval/bench.py").write_text("changed\n")
    gpu_bundle.unpack(out, work)
    assert (work / "code/eval/bench.py").read_text() == "changed\n"


def test_a_bundle_over_the_limit_is_refused_in_one_line(fake_repo, fake_data, tmp_path):
    with pytest.raises(SystemExit, match=r"over the 0.001 MiB limit"):
        gpu_bundle.pack(tmp_path / "bundle", fake_repo, limit_mib=0.001, data=fake_data)


def test_pack_refuses_a_folder_with_files(fake_repo, fake_data, tmp_path):
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "old.txt").write_text("x")
    with pytest.raises(SystemExit, match="not empty"):
        gpu_bundle.pack(tmp_path / "bundle", fake_repo, data=fake_data)


def test_missing_requirements_names_what_is_not_installed():
    requires = ["numpy>=1.26", "no-such-distribution-xyz>=1",
                "tomli>=2.0; python_version < '3.11'"]
    missing = gpu_bundle.missing_requirements(requires)
    assert "no-such-distribution-xyz" in missing and "numpy" not in missing
    assert ("tomli" in missing) == (sys.version_info < (3, 11) and not _installed("tomli"))


def test_a_dependency_another_distribution_provides_counts(monkeypatch):
    """faiss-cpu is satisfied by any faiss whose module imports (faiss-gpu on a GPU machine)."""
    import importlib.util

    monkeypatch.setitem(gpu_bundle.PROVIDED_BY_MODULE, "no-such-cpu-build", "json")
    assert gpu_bundle.missing_requirements(["no-such-cpu-build>=1"]) == []
    monkeypatch.setitem(gpu_bundle.PROVIDED_BY_MODULE, "no-such-cpu-build", "no_such_module_x")
    assert importlib.util.find_spec("no_such_module_x") is None
    assert gpu_bundle.missing_requirements(["no-such-cpu-build>=1"]) == ["no-such-cpu-build"]


def _installed(name: str) -> bool:
    import importlib.metadata

    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_summary_reads_the_steps_results(tmp_path):
    """The summary takes the bench's headline figures and the score from the results folder,
    and a step that failed leaves its figures out instead of failing the summary."""
    import argparse

    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench.json").write_text(json.dumps(
        {"device": "cuda (H100)", "encoder_docs_per_s": 170.0, "annotate_docs_per_s": 18.0,
         "ratio_annotate_vs_encoder": 0.106, "host_ms_per_doc": 50.0, "stages": {}}))
    args = argparse.Namespace(device="cuda", precision="bf16", index="exact", max_docs=None,
                              kb=None)
    steps = {"bench": {"command": "b", "exit_code": 0, "seconds": 1.0, "log": "bench.log"},
             "score": {"command": "s", "exit_code": 2, "seconds": 0.1, "log": "score.log"}}
    summary = gpu_bundle.summarise({"commit": "a" * 40, "working_tree_changes": False}, args,
                                   steps, tmp_path)
    assert summary["bench"]["host_ms_per_doc"] == 50.0 and "stages" not in summary["bench"]
    assert summary["score"] is None
    text = gpu_bundle.summary_markdown(summary)
    assert "| score | 2 |" in text and "host 50.00 ms/document" in text
    assert "Strict F1" not in text
    (tmp_path / "score.json").write_text(json.dumps(
        {"f1": 0.8478, "precision": 0.85, "recall": 0.8456,
         "by_type": {"Chemical": {"f1": 0.8732}, "Disease": {"f1": 0.816}}}))
    text = gpu_bundle.summary_markdown(gpu_bundle.summarise(
        {"commit": "a" * 40, "working_tree_changes": False}, args, steps, tmp_path))
    assert "Strict F1 **0.8478**" in text and "Chemical 0.8732, Disease 0.8160" in text


def test_the_runner_benches_host_workers_through_the_engines_switch(tmp_path):
    """The runner names the engine's variable itself (it reads no package code before it
    unpacks); the summary carries each host-worker bench's figures."""
    import argparse

    from e2e_linker.jobs.host_pool import WORKERS_VARIABLE

    assert gpu_bundle.WORKERS_VARIABLE == WORKERS_VARIABLE
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench_workers_4.json").write_text(json.dumps(
        {"annotate_docs_per_s": 400.0, "ratio_annotate_vs_encoder": 0.81}))
    args = argparse.Namespace(device="cuda", precision="bf16", index="exact", max_docs=None,
                              kb=None)
    steps = {"bench_workers_4": {"command": "b", "exit_code": 0, "seconds": 1.0,
                                 "log": "bench_workers_4.log"}}
    summary = gpu_bundle.summarise({"commit": "a" * 40, "working_tree_changes": False}, args,
                                   steps, tmp_path)
    assert summary["bench_host_workers"] == {"4": {"annotate_docs_per_s": 400.0,
                                                   "ratio_annotate_vs_encoder": 0.81}}
    assert "With 4 host workers: annotate 400.0 docs/s (ratio 0.810)" in \
        gpu_bundle.summary_markdown(summary)
