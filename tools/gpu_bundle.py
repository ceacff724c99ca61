"""A GPU check anyone can run: what a GPU run of the default model needs, packed into one small
folder, and the runner that unpacks it on the GPU machine and runs the benchmark and the
BC5CDR test score in one go.

    python -m tools.gpu_bundle pack OUT [--rev REV] [--limit-mib 64]
    # copy OUT to the GPU machine, then there:
    sh OUT/run.sh [--device cuda] [--precision bf16] [--index exact] [--max-docs N]
                  [--kb SPEC] [--cache DIR] [--results DIR]

Why: a GPU machine is often reached only by copying a small tree (a lent machine that takes at
most 64 MiB; a user's cluster node without the project's data). The repository with its model is
about 95 MB and the vocabularies and corpora live outside it, so the check packs exactly what
the run reads (docs/scaling.md, "The GPU check"):

* ``code.tar.xz``: the files of ``e2e_linker/``, ``data_tools/``, ``eval/`` and
  ``pyproject.toml`` as they are in the working tree, those git tracks or would track (not
  the ignored ones; ``--rev REV``: as committed at REV), without the default model and
  ``eval/results/``;
* ``model.tar.xz``: the default model without what a collective run with ``--index exact``
  never reads (:data:`MODEL_LEFT_OUT`: the normalizer, read by ``--linking text`` and
  ``linker normalize`` only, and the packed shortlist index, read by ``--index packed`` and
  ``auto`` only), its ``SHA256SUMS`` without their lines (a model's load checks every file
  the manifest lists);
* ``data/``: the vocabularies of the model's KB (``kb_manifest.json``'s spec:
  :func:`data_tools.registry.spec_files`) and the BC5CDR test corpus, each xz-compressed under
  its path below the data folder (a gzip file is stored decompressed, which xz packs tighter,
  and gzip-compressed again when unpacked: its loaders open ``.gz`` by name);
* ``bundle.json`` (what is in it, each part's size, the commit, the dependencies the run
  needs), ``gpu_bundle.py`` (this file: the runner) and ``run.sh``.

Packing prints each part's size and fails when the folder exceeds ``--limit-mib``.

**The runner** (``run.sh`` → ``gpu_bundle.py run``, standard library only) unpacks into
``work/`` beside itself once, checks that the dependencies are installed (it installs nothing:
the GPU machine has no registry to install from, so torch and the package's dependencies must
be there already; the code runs from ``work/code`` on ``PYTHONPATH``, as ``pip install -e``
would), then runs, each step's output in a log of its own:

1. ``nvidia-smi`` (when there is one);
2. ``python -m eval.bench --device cuda --precision bf16 --no-per-mention --index exact``;
3. ``linker annotate`` of BC5CDR test (``--replace``, the same device, precision and index);
4. ``linker score --by-type`` of that output against the corpus;

and writes ``summary.json`` and ``summary.md`` (each step's command, exit code and seconds, the
bench's headline figures, strict F1) into the results folder (default ``results/`` beside the
bundle). The first run on a machine encodes the whole KB into ``--cache`` (default
``work/cache``): its time is the annotate step's, and the bench's load time.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

#: the largest bundle a lent GPU machine takes (its whole copied tree is 64 MiB)
LIMIT_MIB = 64.0
#: the repository's tracked files a GPU run imports or reads
CODE_PATHS = ("e2e_linker/", "data_tools/", "eval/", "pyproject.toml")
#: the default model's folder, packed as a part of its own
MODEL_DIR = "e2e_linker/default_model/"
#: tracked paths under :data:`CODE_PATHS` the run never reads: earlier results
CODE_LEFT_OUT = ("eval/results/",)
#: the default model's files a collective run with ``--index exact`` never reads: the
#: normalizer (``--linking text``, ``linker normalize``) and the packed shortlist index
#: (``--index packed``/``auto``)
MODEL_LEFT_OUT = ("e2e_linker/default_model/normalizer/",
                  "e2e_linker/default_model/kb_index.safetensors")
#: the model's checksum manifest (e2e_linker/kb_search/shipped.py): a model's load checks
#: every file it lists, so the bundle's copy lists only the files the bundle has
MODEL_MANIFEST = MODEL_DIR + "SHA256SUMS"
#: the corpus the check annotates and scores, as the data registry names it
CORPUS = ("bc5cdr-bioc", "test")
#: dependencies that another distribution may provide, by the module they install (a GPU
#: machine has faiss-gpu where the package asks for faiss-cpu)
PROVIDED_BY_MODULE = {"faiss-cpu": "faiss"}
#: the host-worker switch of the code's corpus engine (e2e_linker/jobs/host_pool.py; the
#: runner reads no package code, a test holds the two equal) and the counts the check benches
#: with besides none
WORKERS_VARIABLE = "E2E_LINKER_HOST_WORKERS"
HOST_WORKERS = (4,)
#: the bundle's own files
MANIFEST = "bundle.json"
RUNNER = "gpu_bundle.py"
RUN_SCRIPT = "run.sh"
CODE_ARCHIVE = "code.tar.xz"
MODEL_ARCHIVE = "model.tar.xz"
DATA_FOLDER = "data"
#: xz preset: 6 (xz's default) packs the vocabularies to about a fifth
XZ_PRESET = 6
RUN_SH = """#!/bin/sh
# The GPU check: unpack, run the benchmark, annotate and score BC5CDR test (gpu_bundle.py run --help)
exec "${PYTHON:-python3}" "$(dirname "$0")/gpu_bundle.py" run "$@"
"""


# ---- packing (on the machine with the repository and the data) ---------------------------------
def tracked_files(repo: Path, rev: str | None) -> list[str]:
    """The repository's files (relative paths) a GPU run needs, under :data:`CODE_PATHS` less
    :data:`CODE_LEFT_OUT` and :data:`MODEL_LEFT_OUT`: those committed at ``rev``, or (None)
    the working tree's files git tracks or would (untracked, not ignored: a module written and
    imported but not committed yet)."""
    command = ["git", "ls-tree", "-r", "--name-only", rev] if rev else \
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(command, cwd=repo, check=True, capture_output=True,
                            text=True).stdout.splitlines()
    return [path for path in listed
            if path.startswith(CODE_PATHS) and not path.startswith(CODE_LEFT_OUT)
            and not path.startswith(MODEL_LEFT_OUT)
            and (rev is not None or (repo / path).is_file())]  # a file deleted, not yet committed


def file_bytes(repo: Path, rev: str | None, path: str) -> bytes:
    """A tracked file's content at ``rev``, or in the working tree."""
    if rev is None:
        return (repo / path).read_bytes()
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=repo, check=True,
                          capture_output=True).stdout


def trimmed_manifest(data: bytes) -> bytes:
    """The model's ``SHA256SUMS`` without the lines of :data:`MODEL_LEFT_OUT`'s files."""
    left_out = tuple(p.removeprefix(MODEL_DIR) for p in MODEL_LEFT_OUT)
    lines = data.decode("utf-8").splitlines(keepends=True)
    return "".join(line for line in lines
                   if not line.partition("  ")[2].rstrip("\n").startswith(left_out)
                   ).encode("utf-8")


def write_archive(target: Path, repo: Path, rev: str | None, paths: Sequence[str]) -> int:
    """``paths`` (from the working tree or ``rev``) as a ``.tar.xz``, the model's manifest
    trimmed (:func:`trimmed_manifest`); returns their bytes."""
    total = 0
    with tarfile.open(target, "w:xz", preset=XZ_PRESET) as archive:
        for path in paths:
            data = file_bytes(repo, rev, path)
            if path == MODEL_MANIFEST:
                data = trimmed_manifest(data)
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
            total += len(data)
    return total


def pack_data_file(source: Path, rel: str, folder: Path) -> dict:
    """``source`` xz-compressed as ``folder/<rel>.xz`` (a gzip file decompressed first);
    returns its entry in the bundle's manifest."""
    is_gzip = source.read_bytes()[:2] == b"\x1f\x8b"
    data = gzip.decompress(source.read_bytes()) if is_gzip else source.read_bytes()
    stored = folder / DATA_FOLDER / f"{rel}.xz"
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(lzma.compress(data, preset=XZ_PRESET))
    return {"path": rel, "stored": stored.relative_to(folder).as_posix(), "gzip": is_gzip,
            "bytes": source.stat().st_size, "packed_bytes": stored.stat().st_size}


def needed_data(model_dir: Path) -> tuple[Path, list[Path], Path]:
    """The data folder, the vocabularies of the model's KB spec in it and the corpus
    :data:`CORPUS`: the files of it the check reads."""
    from data_tools.registry import data_dir, get_dataset, spec_files

    spec = json.loads((model_dir / "kb_manifest.json").read_text())["kb"]
    return data_dir(), spec_files(spec), Path(get_dataset(*CORPUS).path)


def requirements(repo: Path) -> list[str]:
    """The package's dependencies, as ``pyproject.toml`` lists them (what the runner checks)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the tomli backport, a dependency there
        import tomli as tomllib
    return list(tomllib.loads((repo / "pyproject.toml").read_text())["project"]["dependencies"])


def pack(out: Path, repo: Path, rev: str | None = None, limit_mib: float = LIMIT_MIB,
         data: tuple[Path, Sequence[Path], Path] | None = None) -> dict:
    """Write the bundle into ``out`` (a new or empty folder) and return its manifest.

    ``data``: the data folder, the vocabularies in it and the corpus in it (default:
    :func:`needed_data`). Fails (SystemExit, one line) when the bundle is larger than
    ``limit_mib``; the folder is left as written, to be looked at."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"gpu_bundle: {out} is not empty; pack into a new folder")
    paths = tracked_files(repo, rev)
    model_paths = [p for p in paths if p.startswith(MODEL_DIR)]
    code_paths = [p for p in paths if not p.startswith(MODEL_DIR)]
    if not model_paths:
        raise SystemExit(f"gpu_bundle: no tracked files under {MODEL_DIR} in {repo}")
    parts = {"code": {"files": len(code_paths),
                      "bytes": write_archive(out / CODE_ARCHIVE, repo, rev, code_paths),
                      "packed_bytes": 0},
             "model": {"files": len(model_paths),
                       "bytes": write_archive(out / MODEL_ARCHIVE, repo, rev, model_paths),
                       "packed_bytes": 0}}
    parts["code"]["packed_bytes"] = (out / CODE_ARCHIVE).stat().st_size
    parts["model"]["packed_bytes"] = (out / MODEL_ARCHIVE).stat().st_size
    data_root, vocabularies, corpus = data or needed_data(repo / MODEL_DIR)
    entries = [pack_data_file(path, path.relative_to(data_root).as_posix(), out)
               for path in [*vocabularies, corpus]]
    parts["data"] = {"files": len(entries), "bytes": sum(d["bytes"] for d in entries),
                     "packed_bytes": sum(d["packed_bytes"] for d in entries)}
    shutil.copyfile(Path(__file__), out / RUNNER)
    (out / RUN_SCRIPT).write_text(RUN_SH)
    (out / RUN_SCRIPT).chmod(0o755)
    commit = subprocess.run(["git", "rev-parse", rev or "HEAD"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout.strip()
    dirty = rev is None and bool(subprocess.run(
        ["git", "status", "--porcelain", "--", *CODE_PATHS], cwd=repo, check=True,
        capture_output=True, text=True).stdout.strip())
    manifest = {"commit": commit, "working_tree_changes": dirty, "rev": rev,
                "corpus": corpus.relative_to(data_root).as_posix(),
                "requires": requirements(repo), "model_left_out": list(MODEL_LEFT_OUT),
                "data": entries, "parts": parts}
    others = folder_bytes(out)
    manifest["total_bytes"] = others
    for _ in range(3):  # the total counts the manifest, which holds the total: a fixed point
        text = json.dumps(manifest, indent=2) + "\n"
        manifest["total_bytes"] = others + len(text.encode())
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    total = folder_bytes(out)
    print(size_table(manifest, total, limit_mib))
    if total > limit_mib * 2**20:
        raise SystemExit(f"gpu_bundle: {out} is {total / 2**20:.1f} MiB, over the "
                         f"{limit_mib:g} MiB limit")
    return manifest


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``: what copying it moves."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def size_table(manifest: dict, total: int, limit_mib: float) -> str:
    """Each part's files, bytes and packed bytes, and the bundle's total against the limit."""
    lines = [f"{'part':<8}{'files':>7}{'MB':>10}{'packed MB':>12}"]
    for name, part in manifest["parts"].items():
        lines.append(f"{name:<8}{part['files']:>7}{part['bytes'] / 1e6:>10.1f}"
                     f"{part['packed_bytes'] / 1e6:>12.1f}")
    lines.append(f"bundle: {total / 2**20:.1f} MiB ({total:,} bytes) of at most "
                 f"{limit_mib:g} MiB")
    return "\n".join(lines)


# ---- running (on the GPU machine: standard library only until the code is unpacked) -----------
def unpack(bundle: Path, work: Path) -> dict:
    """The bundle unpacked into ``work`` (``code/`` with the model in place, ``data/``), once:
    a second call finds the marker and does nothing. Returns the manifest."""
    manifest = json.loads((bundle / MANIFEST).read_text())
    marker = work / ".unpacked"
    if marker.is_file() and marker.read_text() == manifest["commit"]:
        return manifest
    for archive in (CODE_ARCHIVE, MODEL_ARCHIVE):
        with tarfile.open(bundle / archive, "r:xz") as tar:
            # the "data" filter (no links out, no absolute paths) where this Python has it
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(work / "code", **safe)
    for entry in manifest["data"]:
        data = lzma.decompress((bundle / entry["stored"]).read_bytes())
        target = work / DATA_FOLDER / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress(data, mtime=0) if entry["gzip"] else data)
    marker.write_text(manifest["commit"])
    return manifest


def missing_requirements(requires: Iterable[str]) -> list[str]:
    """The distributions of ``requires`` (pyproject dependency strings) not installed here,
    whatever their versions (a GPU machine's torch is its own); one with an environment marker
    is checked only where it applies (Python version), and one another distribution provides
    (:data:`PROVIDED_BY_MODULE`: faiss-gpu for faiss-cpu) counts when its module imports."""
    import importlib.metadata
    import importlib.util
    import re

    missing = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        version = re.search(r"python_version\s*<\s*['\"](\d+)\.(\d+)['\"]", marker)
        if version and sys.version_info[:2] >= (int(version[1]), int(version[2])):
            continue
        name = re.split(r"[<>=!~\[ ]", spec.strip(), maxsplit=1)[0]
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            module = PROVIDED_BY_MODULE.get(name)
            if module is None or importlib.util.find_spec(module) is None:
                missing.append(name)
    return missing


def run_step(name: str, command: list[str], cwd: Path, env: dict, results: Path,
             stdout_to: Path | None = None) -> dict:
    """Run one step, its output (stderr, and stdout unless ``stdout_to``) in
    ``results/<name>.log``; returns its command, exit code and seconds."""
    print(f"== {name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    with open(results / f"{name}.log", "w") as log, \
            (open(stdout_to, "w") if stdout_to else open(os.devnull, "w")) as out:
        code = subprocess.run(command, cwd=cwd, env=env, stdout=out if stdout_to else log,
                              stderr=log).returncode
    seconds = time.perf_counter() - start
    print(f"   exit {code} after {seconds:.1f} s", flush=True)
    return {"command": " ".join(command), "exit_code": code, "seconds": round(seconds, 2),
            "log": f"{name}.log"}


def run(argv: list[str] | None = None) -> int:
    """The runner: unpack, check, bench, annotate, score, summarise (the module docstring)."""
    parser = argparse.ArgumentParser(prog="run.sh", description="The GPU check (docs/scaling.md)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--precision", default="bf16", help="fp32, bf16, auto, int8")
    parser.add_argument("--index", default="exact", help="KB search (linker annotate --index)")
    parser.add_argument("--max-docs", type=int, default=None,
                        help="the first N corpus documents only (a dry run)")
    parser.add_argument("--kb", default=None, help="another KB spec (a dry run on a small KB)")
    parser.add_argument("--cache", default=None,
                        help="KB vector cache (default: work/cache beside the bundle)")
    parser.add_argument("--results", default=None,
                        help="results folder (default: results/ beside the bundle)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs it")
    parser.add_argument("--host-workers", type=int, nargs="*", default=list(HOST_WORKERS),
                        help="also bench with each of these numbers of host worker processes "
                             "(E2E_LINKER_HOST_WORKERS; none: skip)")
    args = parser.parse_args(argv)
    bundle = Path(__file__).resolve().parent
    work = bundle / "work"
    results = Path(args.results).resolve() if args.results else bundle / "results"
    results.mkdir(parents=True, exist_ok=True)
    print(f"unpacking into {work}", flush=True)
    manifest = unpack(bundle, work)
    missing = missing_requirements(manifest["requires"])
    if missing:
        print(f"gpu_bundle: not installed here: {', '.join(missing)} (the check installs "
              "nothing; install the package's dependencies first)", file=sys.stderr)
        return 2
    code = work / "code"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
               [str(code), *filter(None, [os.environ.get("PYTHONPATH")])]),
           "E2E_LINKER_DATA": str(work / DATA_FOLDER),
           "E2E_LINKER_CACHE": str(Path(args.cache).resolve() if args.cache
                                   else work / "cache")}
    python = args.python
    gold = work / DATA_FOLDER / manifest["corpus"]
    common = ["--device", args.device, "--precision", args.precision, "--index", args.index]
    kb = ["--kb", args.kb] if args.kb else []
    steps = {}
    if shutil.which("nvidia-smi"):
        steps["nvidia_smi"] = run_step("nvidia_smi", ["nvidia-smi"], code, env, results)
    if args.max_docs is not None:  # the first N documents, as the corpus's own format
        cut = results / f"gold_first{args.max_docs}.bioc.xml"
        steps["cut_corpus"] = run_step("cut_corpus", [
            python, "-c", "import sys, itertools; from data_tools.formats import "
            "read_documents, write_documents; write_documents(list(itertools.islice("
            "read_documents(sys.argv[1]), int(sys.argv[3]))), sys.argv[2])",
            str(gold), str(cut), str(args.max_docs)], code, env, results)
        gold = cut
    bench = [python, "-m", "eval.bench", *common, "--no-per-mention", "--corpus", str(gold),
             "--json", str(results / "bench" / "bench.json"), *kb]
    steps["bench"] = run_step("bench", bench, code, env, results)
    for count in args.host_workers:  # the figures that set the GPU default (docs/scaling.md)
        name = f"bench_workers_{count}"
        steps[name] = run_step(name, [*bench[:bench.index("--json")], "--json",
                                      str(results / "bench" / f"{name}.json"), *kb], code,
                               {**env, WORKERS_VARIABLE: str(count)}, results)
    predicted = results / "annotated.bioc.xml"
    steps["annotate"] = run_step("annotate", [
        python, "-m", "e2e_linker", "annotate", str(gold), "-o", str(predicted), "--replace",
        *common, *kb], code, env, results)
    steps["score"] = run_step("score", [
        python, "-m", "e2e_linker", "score", str(gold), str(predicted), "--by-type", "--json"],
        code, env, results, stdout_to=results / "score.json")
    summary = summarise(manifest, args, steps, results)
    (results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (results / "summary.md").write_text(summary_markdown(summary))
    print(summary_markdown(summary))
    return 0 if all(step["exit_code"] == 0 for step in steps.values()) else 1


def read_json(path: Path) -> dict | None:
    """A results file's JSON (None: the step that writes it failed)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def summarise(manifest: dict, args: argparse.Namespace, steps: dict, results: Path) -> dict:
    """The check's record: the bundle's commit, the settings, each step, the bench's
    headline figures and the score."""
    bench = read_json(results / "bench" / "bench.json") or {}
    workers = {}
    for name in steps:
        if name.startswith("bench_workers_"):
            found = read_json(results / "bench" / f"{name}.json") or {}
            workers[name.removeprefix("bench_workers_")] = {
                key: found[key] for key in ("annotate_docs_per_s", "ratio_annotate_vs_encoder")
                if key in found}
    headline = ("device", "machine", "documents", "encoder_docs_per_s", "annotate_docs_per_s",
                "annotate_mentions_per_s", "ratio_annotate_vs_encoder", "host_ms_per_doc",
                "host_stages_ms_per_doc", "load_seconds", "peak_rss_mb")
    return {"commit": manifest["commit"],
            "working_tree_changes": manifest["working_tree_changes"],
            "settings": {"device": args.device, "precision": args.precision,
                         "index": args.index, "max_docs": args.max_docs, "kb": args.kb},
            "steps": steps,
            "bench": {key: bench[key] for key in headline if key in bench},
            "bench_host_workers": workers,
            "score": read_json(results / "score.json")}


def summary_markdown(summary: dict) -> str:
    """``summary.json`` for a person: the steps, the bench's figures, the F1."""
    settings = summary["settings"]
    lines = [f"# GPU check of {summary['commit'][:12]}"
             f"{' (with working-tree changes)' if summary['working_tree_changes'] else ''}",
             "", ", ".join(f"{k} {v}" for k, v in settings.items() if v is not None), "",
             "| step | exit | seconds |", "|---|---|---|"]
    lines += [f"| {name} | {step['exit_code']} | {step['seconds']:.1f} |"
              for name, step in summary["steps"].items()]
    bench = summary["bench"]
    if bench:
        lines += ["", f"Bench on {bench.get('device')}: bare encoder "
                      f"{bench.get('encoder_docs_per_s', 0):.1f} docs/s, annotate "
                      f"{bench.get('annotate_docs_per_s', 0):.1f} docs/s (ratio "
                      f"{bench.get('ratio_annotate_vs_encoder', 0):.3f}), host "
                      f"{bench.get('host_ms_per_doc', 0):.2f} ms/document."]
    for count, found in summary.get("bench_host_workers", {}).items():
        if found:
            lines += [f"With {count} host workers: annotate "
                      f"{found.get('annotate_docs_per_s', 0):.1f} docs/s (ratio "
                      f"{found.get('ratio_annotate_vs_encoder', 0):.3f})."]
    score = summary["score"]
    if score and "f1" in score:
        by_type = ", ".join(f"{name} {row['f1']:.4f}"
                            for name, row in score.get("by_type", {}).items())
        lines += ["", f"Strict F1 **{score['f1']:.4f}** (precision {score['precision']:.4f}, "
                      f"recall {score['recall']:.4f}); by type: {by_type or 'none'}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``pack OUT`` here, ``run`` on the GPU machine (``run.sh`` calls it)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        return run(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_bundle",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    packing = sub.add_parser("pack", help="write the bundle into a new folder")
    packing.add_argument("out", help="the bundle folder (new or empty)")
    packing.add_argument("--rev", default=None,
                         help="pack the code as committed at REV (default: the working tree)")
    packing.add_argument("--limit-mib", type=float, default=LIMIT_MIB,
                         help="fail above this size")
    sub.add_parser("run", help="run the check (on the GPU machine: run.sh)")
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    pack(Path(args.out), repo, args.rev, args.limit_mib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
