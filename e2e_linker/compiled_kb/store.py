"""The compiled KBs in the cache folder: built once per KB spec, read by every later start.

Layout: ``<cache>/compiled_kb/<key>/`` holds one ``.npy`` file per array of
:func:`~e2e_linker.compiled_kb.kb_view.kb_arrays` and ``meta.json`` (the lists the arrays
index, the KB's content hash, what the key hashes); ``<key>`` hashes the spec's vocabulary
files' contents, the model's mined names and :data:`FORMAT_VERSION`
(:func:`~e2e_linker.compiled_kb.vocab_digests.compiled_key`), so a changed vocabulary file or
spec compiles a new one.

Why it is safe to trust: a build writes into a temporary folder beside the final one, each file
atomic and sealed with its integrity record (:mod:`e2e_linker.kb_search.integrity`), and
renames the folder into place last, holding the cache folder's lock — a killed build leaves no
folder to be read. Every open checks each file against its record (size and header always, the
digests of small files whole and of large ones sampled); a file that fails is reported, the
folder discarded and the KB compiled again. Files are memory-mapped read-only, so processes on
one machine share them through the page cache. No pickle anywhere.

``E2E_LINKER_COMPILED_KB=off`` bypasses all of this (the KB and the sieves' dictionaries are
built from the vocabulary files, as before compiled KBs existed): it exists only to check that
outputs with and without a compiled KB are byte-identical (tests, docs/decisions/0035-startup.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from e2e_linker.compiled_kb.kb_view import CompiledKB, concept_columns, kb_arrays
from e2e_linker.compiled_kb.vocab_digests import compiled_key
from e2e_linker.console import say
from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import (
    default_cache_dir,
    ensure_room,
    exclusive,
    writable,
)
from e2e_linker.kb_search.integrity import (
    OK,
    RECORD_SUFFIX,
    STAMP_SUFFIX,
    Verdict,
    check_file,
    report_damage,
    save_array,
    save_lines,
)

#: bump when what :func:`kb_arrays` derives changes (name folding, compact keys, layout), or
#: what a spec loads from the same files: old compiled KBs are then left unread and built anew
#: (4: each concept's type index; 5: gene_info's loci of unknown type left out,
#: data_tools.registry.GENE_SKIP_TYPES; 6: MeSH supplementary concepts mapped only to
#: organisms or population groups left out, data_tools.kb_loaders.load_mesh_supplementary;
#: 7: the same for the ``mesh_chemical`` preset)
FORMAT_VERSION = 7
#: the folder of compiled KBs inside the cache folder
FOLDER_NAME = "compiled_kb"
META_FILE = "meta.json"
#: set to ``off`` to build the KB from its files instead (output-identity checks only)
BYPASS_ENV = "E2E_LINKER_COMPILED_KB"


def format_key(sieves: bool = True) -> str:
    """The format a compiled KB is written in: :data:`FORMAT_VERSION`, the
    :class:`~data_tools.kb.Concept` fields it stores (a field added to the dataclass makes a new
    compiled KB, never one read without it) and whether it holds the sieves' dictionaries."""
    return (f"{FORMAT_VERSION}:{json.dumps(concept_columns(), sort_keys=True)}:"
            f"{'sieves' if sieves else 'concepts'}")


def compiled_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The folder of compiled KBs in the cache folder (``--cache-dir`` or the default)."""
    return Path(cache_dir or default_cache_dir()) / FOLDER_NAME


def bypassed() -> bool:
    """Whether :data:`BYPASS_ENV` asks for KBs built from their files (identity checks)."""
    return os.environ.get(BYPASS_ENV, "").strip().lower() in ("off", "0", "no", "false")


def open_compiled(spec: str, build: Callable[[], object], extra_names: Path | None = None,
                  cache_dir: str | os.PathLike | None = None, progress: bool = True,
                  sieves: bool = True) -> CompiledKB:
    """The compiled KB of ``spec`` plus the mined names in ``extra_names``: read from the
    cache folder, or compiled from ``build()`` (the built KB) and written there first; with
    the sieves' dictionaries (annotate) or without them (``sieves=False``: normalize).

    A cache folder that cannot be written, or has no room for it, gives the compiled KB in
    memory, said in one note: it saves time, it is never a reason to stop."""
    from data_tools.registry import spec_files

    root = compiled_root(cache_dir)
    key, sources = compiled_key(spec, spec_files(spec), extra_names, root, format_key(sieves))
    folder = root / key
    found, _ = read_folder(folder)
    if found is not None:
        return found
    with contextlib.suppress(OSError):
        root.mkdir(parents=True, exist_ok=True)
    if not os.access(root, os.W_OK):
        print(f"note: the compiled KB cannot be written in {root}; building the KB in memory "
              "this time", file=sys.stderr)
        return CompiledKB(*compile_arrays(spec, build, progress, sieves))
    with exclusive(root, "compiling a KB", progress):
        found, why = read_folder(folder)
        if found is not None:
            return found
        if why:
            report_damage(folder, why, "discarded; the KB is compiled again")
            shutil.rmtree(folder, ignore_errors=True)
        arrays, meta = compile_arrays(spec, build, progress, sieves)
        try:
            with writable(root):
                write_folder(folder, arrays, {**meta, "key": sources})
        except UserError as exc:  # no room: the vector store says so when it needs room too
            print(f"note: the compiled KB is not kept ({exc}); it is used from memory this "
                  "time", file=sys.stderr)
            return CompiledKB(arrays, meta)
    found, why = read_folder(folder)
    if found is None:
        raise OSError(f"the compiled KB just written in {folder} cannot be read: {why}")
    return found


def compile_arrays(spec: str, build: Callable[[], object], progress: bool, sieves: bool = True
                   ) -> tuple[dict[str, np.ndarray], dict]:
    """Build the KB and its arrays, with a progress line on stderr."""
    started = time.perf_counter()
    if progress:  # on a terminal or with -v (e2e_linker/console.py)
        say(f"compiling KB '{spec}': reading its files and deriving names, dictionaries and "
            "compact keys (once: later starts map the result)...")
    kb = build()
    arrays, meta = kb_arrays(kb, sieves)
    if progress:
        say(f"compiled KB '{spec}': {len(kb):,} concepts, {meta['names']:,} names in "
            f"{time.perf_counter() - started:.0f} s")
    return arrays, {**meta, "format": FORMAT_VERSION, "spec": spec,
                    "built_s": round(time.perf_counter() - started, 1),
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_folder(folder: Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write a compiled KB into ``folder`` (absent): every file sealed, in a temporary folder
    renamed into place last (the caller holds the cache folder's lock)."""
    ensure_room(folder.parent, sum(a.nbytes for a in arrays.values()), "the compiled KB")
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for name, array in arrays.items():
            save_array(tmp / f"{name}.npy", array)
        save_lines(tmp / META_FILE, [json.dumps({**meta, "arrays": sorted(arrays)}) + "\n"])
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_folder(folder: Path) -> tuple[CompiledKB | None, str]:
    """``(the compiled KB, "")`` when ``folder`` holds a whole one; ``(None, why)`` when it is
    damaged (a file missing, cut short or changed), ``(None, "")`` when there is none."""
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        return None, ("its meta.json is missing" if folder.is_dir() else "")
    verdict = check_file(meta_path, npy=False)
    if verdict.state != OK:
        return None, f"{META_FILE}: {verdict.why}"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        names = list(meta["arrays"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"{META_FILE} unreadable ({exc})"
    if meta.get("format") != FORMAT_VERSION or meta.get("columns") != concept_columns():
        return None, "written in another format (or with other concept fields)"
    arrays: dict[str, np.ndarray] = {}
    for name in names:
        path = folder / f"{name}.npy"
        if not path.is_file():
            return None, f"{path.name} is missing"
        verdict = check_file(path)
        if verdict.state != OK:
            return None, f"{path.name}: {verdict.why}"
        arrays[name] = map_array(path)
    try:
        return CompiledKB(arrays, meta), ""
    except (KeyError, TypeError) as exc:
        return None, f"{META_FILE} does not describe its arrays ({exc!r})"


def map_array(path: Path) -> np.ndarray:
    """A checked ``.npy`` file memory-mapped read-only (an empty one read: nothing to map), as
    a plain ndarray over the mapping: indexing an ``np.memmap`` one element at a time, as the
    key tables' binary searches do, costs several times more."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)
    except ValueError:
        return np.load(path, allow_pickle=False)


def list_compiled(cache_dir: str | os.PathLike | None = None) -> list[dict]:
    """Each compiled KB in the cache folder: key, spec, concepts, names, bytes, when built,
    and ``ok`` or why it is damaged; ``stale``: of another format, which this code never reads,
    ``earlier_format``: of an earlier one, which no later version reads either (a later
    format may be a newer version's, run from the same cache folder); for ``linker kb info``
    and ``linker kb prune``, nothing is discarded here."""
    root = compiled_root(cache_dir)
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        meta: dict = {}
        with contextlib.suppress(OSError, ValueError):
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        _, why = read_folder(folder)
        stale = bool(meta) and (meta.get("format") != FORMAT_VERSION or
                                meta.get("columns") != concept_columns())
        earlier = stale and isinstance(meta.get("format"), int) and \
            meta["format"] < FORMAT_VERSION
        if stale:
            why = ("stale (an earlier format, never read by this code: `linker kb prune` "
                   "deletes it)" if earlier else
                   "stale (another format, never read by this code)")
        out.append({"key": folder.name, "spec": meta.get("spec"),
                    "concepts": meta.get("concepts"), "names": meta.get("names"),
                    "bytes": sum(f.stat().st_size for f in folder.iterdir() if f.is_file()),
                    "built_at": meta.get("built_at"), "state": why or "ok", "stale": stale,
                    "earlier_format": earlier, "path": str(folder)})
    return out


def verify_compiled(cache_dir: str | os.PathLike | None = None) -> list[Verdict]:
    """Every sealed file of every compiled KB (and the vocabulary digests) checked against its
    record, every byte now: what ``linker kb info --verify`` adds to the vector cache's."""
    root = compiled_root(cache_dir)
    out: list[Verdict] = []
    for path in sorted(root.rglob("*")) if root.is_dir() else ():
        if path.is_file() and not path.name.endswith((RECORD_SUFFIX, STAMP_SUFFIX)) and \
                not any(part.startswith(".") for part in path.relative_to(root).parts):
            out.append(check_file(path, npy=path.suffix == ".npy", full=True))
    return out
