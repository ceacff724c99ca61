"""Checksums of the files shipped inside the package: the default models' weights, heads,
tokenizers, configs and packed KB indexes.

Why: these files are read on every start and trusted as they are; a packed index with 1–4 MB
zeroed changed 10 of 85 links with exit code 0 (issue 47). The tree ships a manifest,
``SHA256SUMS`` (:data:`MANIFEST_FILE`, the format ``sha256sum`` writes and ``sha256sum -c``
checks) at its root, listing every file under it; :func:`write_manifest` writes it and a test
checks that it matches the tree, so it cannot drift.

**When a file is checked** (:func:`require_shipped`): when it is loaded — every byte, hashed
whole — the first time a process loads that version of it (device, inode, size, mtime and
ctime of the file and of the manifest: :func:`~e2e_linker.kb_search.integrity.file_version`);
a version that passed is remembered in the cache folder (``<cache>/shipped/``, one stamp per
file, the same stamps and "racy" rule as the cache's own files,
:func:`~e2e_linker.kb_search.integrity.remembered`), so a warm start reads a few stats. Without
a writable cache folder each process hashes what it loads (about 0.1 s for the default model).
A file that fails is one line naming it and exit code 2: nothing here can be made again, the
package must be reinstalled. ``linker kb info --verify`` hashes every listed file now
(:func:`verify_tree`). A model directory without a manifest (one you trained or exported) is
not checked here, and neither is a copy of a shipped one outside the installed package
(its files are yours to change: a manifest counts only inside :data:`PACKAGE_ROOT`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from e2e_linker.errors import UserError
from e2e_linker.kb_search.cache_folder import default_cache_dir
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    UNVERIFIED,
    Verdict,
    atomic_write,
    file_version,
    remember_check,
    remembered,
)

MANIFEST_FILE = "SHA256SUMS"
#: shipped files a person may edit, checked by their own reader instead: the pipeline
#: declaration (e2e_linker/pipeline/declaration.py refuses a bad one with one line)
EDITABLE = frozenset({"pipeline.toml"})
#: the installed package: only a manifest inside it lists shipped files (a model folder copied
#: or assembled elsewhere, with its SHA256SUMS beside changed files, is the user's own)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: where a shipped file's remembered check lives, inside the cache folder
STAMP_FOLDER = "shipped"
#: read size when hashing a file
CHUNK_BYTES = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """The sha256 (hex) of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def listed_files(root: str | os.PathLike) -> list[str]:
    """Every file under ``root`` that its manifest must list (paths relative to it, sorted):
    all but the manifest itself, the :data:`EDITABLE` declarations, caches Python leaves
    (``__pycache__``) and hidden files."""
    root = Path(root)
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and path.name != MANIFEST_FILE and path.name not in EDITABLE \
                and "__pycache__" not in rel.parts \
                and not any(part.startswith(".") for part in rel.parts):
            out.append(rel.as_posix())
    return sorted(out)


def write_manifest(root: str | os.PathLike) -> Path:
    """Write ``root/SHA256SUMS`` listing every file under ``root`` (what a release runs after
    changing a shipped file; the manifest test says when it is due)."""
    root = Path(root)
    lines = [f"{sha256_file(root / rel)}  {rel}\n" for rel in listed_files(root)]
    target = root / MANIFEST_FILE
    atomic_write(target, lambda handle: handle.write("".join(lines).encode("utf-8")))
    return target


def read_manifest(manifest: str | os.PathLike) -> dict[str, str]:
    """Relative path → sha256 of a manifest (an unreadable line is an error naming it)."""
    out = {}
    for number, line in enumerate(Path(manifest).read_text(encoding="utf-8").splitlines(), 1):
        hexdigest, sep, rel = line.partition("  ")
        if not sep or len(hexdigest) != 64:
            raise UserError(f"{manifest}: line {number} is not '<sha256>  <path>'; reinstall "
                            "the package to restore it")
        out[rel] = hexdigest
    return out


def manifest_of(path: str | os.PathLike) -> tuple[Path, str] | None:
    """(the manifest that lists ``path``, its name there), looking in the folders above it;
    None when no manifest lists it (a model directory of your own)."""
    path = Path(path).resolve()
    for folder in path.parents:
        if not folder.is_relative_to(PACKAGE_ROOT):
            return None
        manifest = folder / MANIFEST_FILE
        if manifest.is_file():
            rel = path.relative_to(folder).as_posix()
            return (manifest, rel) if rel in read_manifest(manifest) else None
    return None


def update_manifest(path: str | os.PathLike) -> None:
    """Give ``path`` its new sha256 in the manifest that lists it (nothing when none does):
    what a tool that rewrites a shipped file (``linker kb pack``) calls, so that the tree and
    its manifest stay one."""
    found = manifest_of(path)
    if found is None:
        return
    manifest, rel = found
    entries = {**read_manifest(manifest), rel: sha256_file(path)}
    atomic_write(manifest, lambda handle: handle.write(
        "".join(f"{h}  {r}\n" for r, h in sorted(entries.items())).encode("utf-8")))


def _stamp(path: Path) -> Path:
    key = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:24]
    return Path(default_cache_dir()) / STAMP_FOLDER / f"{key}.verified.json"


def check_shipped(path: str | os.PathLike, *, full: bool = False) -> Verdict:
    """``path`` checked against the manifest that lists it: :data:`OK`, :data:`DAMAGED` (its
    sha256 differs, or it is missing) or :data:`UNVERIFIED` (no manifest lists it). Every byte
    is hashed unless this version was checked before (``full``: hashed now anyway)."""
    path = Path(path).resolve()
    found = manifest_of(path)
    if found is None:
        return Verdict(path, UNVERIFIED, "no manifest lists it")
    manifest, rel = found
    if not path.is_file():
        return Verdict(path, DAMAGED, f"missing (listed in {manifest})")
    key = file_version(path) + file_version(manifest)
    stamp = _stamp(path)
    if not full and remembered(key, stamp):
        return Verdict(path, OK)
    if sha256_file(path) != read_manifest(manifest)[rel]:
        return Verdict(path, DAMAGED, f"its sha256 is not the one {manifest} lists")
    with contextlib.suppress(OSError):  # none: remembered in this process only
        stamp.parent.mkdir(parents=True, exist_ok=True)
    remember_check(key, stamp)
    return Verdict(path, OK, checked=1)


def require_shipped(*paths: str | os.PathLike) -> None:
    """Check each shipped file among ``paths`` before it is read (:func:`check_shipped`); a
    damaged one is a :class:`UserError`, one line naming it (exit code 2)."""
    for path in paths:
        verdict = check_shipped(path)
        if verdict.state == DAMAGED:
            raise UserError(f"shipped file {verdict.path} is damaged ({verdict.why}); "
                            "reinstall e2e_linker (or git checkout the file) to restore it; "
                            "changed on purpose: python -c 'from e2e_linker.kb_search.shipped "
                            "import write_manifest as w; w(\"DIR\")' for its model folder")


def require_shipped_tree(directory: str | os.PathLike, skip: tuple[str, ...] = ()) -> None:
    """:func:`require_shipped` for every file a manifest lists under ``directory`` (but not
    under its subfolders named in ``skip``, which are another model's): a model's load."""
    directory = Path(directory).resolve()
    found = manifest_of_folder(directory)
    if found is None:
        return
    manifest, prefix = found
    paths = [manifest.parent / rel for rel in read_manifest(manifest)
             if rel.startswith(prefix) and not rel[len(prefix):].startswith(
                 tuple(f"{s}/" for s in skip))]
    require_shipped(*paths)


def manifest_of_folder(directory: Path) -> tuple[Path, str] | None:
    """(the manifest at or above ``directory``, the prefix of ``directory``'s files in it);
    None outside the installed package (:data:`PACKAGE_ROOT`)."""
    for folder in (directory, *directory.parents):
        if not folder.is_relative_to(PACKAGE_ROOT):
            return None
        manifest = folder / MANIFEST_FILE
        if manifest.is_file():
            rel = directory.relative_to(folder).as_posix()
            return manifest, "" if rel == "." else f"{rel}/"
    return None


def verify_tree(directory: str | os.PathLike) -> list[Verdict]:
    """Every file the manifest at ``directory`` lists, hashed now, and every file under it that
    the manifest does not list (``linker kb info --verify``)."""
    directory = Path(directory).resolve()
    manifest = directory / MANIFEST_FILE
    if not manifest.is_file():
        return [Verdict(manifest, DAMAGED, "missing: the shipped files cannot be checked")]
    listed = read_manifest(manifest)
    out = [check_shipped(directory / rel, full=True) for rel in sorted(listed)]
    out += [Verdict(directory / rel, UNVERIFIED, f"not listed in {manifest}")
            for rel in listed_files(directory) if rel not in listed]
    return [v if v.state != OK else Verdict(v.path, OK) for v in out]
