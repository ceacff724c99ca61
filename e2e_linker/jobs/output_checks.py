"""Checks on ``-o`` made before the model loads: never overwrite an input, never fail late.

Why a module of its own: ``linker annotate`` and ``linker normalize`` spend seconds to minutes
loading a model and may annotate for hours before they write; an output path that cannot work
(an input file, a read-only or full directory, a "directory" that is a file) must fail first,
with one line naming the path and exit code 2, and must never cost the user their input (the
gold annotations of ``annotate in.xml -o in.xml --replace``). Everything here only looks:
nothing is created or removed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from data_tools.formats.detect import expand_inputs
from e2e_linker.errors import UserError
from e2e_linker.jobs.corpus_run import MANIFEST, is_directory_target

#: free space below which no run starts: room for a small output plus its temporary file
MIN_FREE_BYTES = 8 << 20


def _real(path: str | os.PathLike) -> Path:
    """``path`` absolute with every symlink and ``.``/``..`` resolved (also when it does not
    exist yet: its existing part is resolved)."""
    return Path(os.path.realpath(os.fspath(path)))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (as anything)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _input_bytes(inputs: Sequence[Path]) -> int:
    """The inputs' total size (a directory's files too); 0 where it cannot be told cheaply."""
    try:
        return sum(p.stat().st_size for p in expand_inputs(inputs))
    except (OSError, ValueError):
        return 0


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


def check_not_an_input(inputs: Sequence[str | os.PathLike], output: str | os.PathLike) -> None:
    """Refuse an ``output`` that is, contains or lies inside one of ``inputs``.

    Symlinks, hard links and spellings such as ``./in.xml`` or ``dir/../in.xml`` are seen
    through; ``-`` (standard input or output) is never a file here.
    """
    if str(output) == "-":
        return
    target = _real(output)
    for item in inputs:
        if str(item) == "-":
            continue
        source = _real(item)
        if source.is_dir():
            if _inside(target, source):
                raise UserError(f"-o {output} is inside the input directory {item}: the "
                                "output would overwrite or join its inputs; choose an output "
                                "path outside it")
        elif target == source or _same_file(target, source):  # hard links too
            raise UserError(f"-o {output} is the input {item}: writing it would destroy the "
                            "input; choose another output path")
        elif _inside(source, target):
            raise UserError(f"-o {output} contains the input {item}; choose an output "
                            "directory that holds no input")


def check_output_target(inputs: Sequence[str | os.PathLike], output: str | os.PathLike, *,
                        directory: bool | None = None,
                        min_free_bytes: int | None = None) -> None:
    """Everything about ``-o`` that can be known before the model loads; raises
    :class:`UserError` (one line naming the path) when the run could not write there.

    * ``output`` is not one of ``inputs``, nor inside an input directory (see
      :func:`check_not_an_input`);
    * the directory it goes to is a directory (or can be created under the nearest existing
      one, as the writer creates it), and is writable;
    * that file system has at least ``min_free_bytes`` free (default :data:`MIN_FREE_BYTES`),
      and at least the inputs' size (an output is rarely smaller than its input).

    ``directory`` says whether ``output`` is a shard directory rather than a file; ``None``
    decides it as ``linker annotate`` does (:func:`corpus_run.is_directory_target`).
    A write that still fails later (the disk fills up meanwhile) is reported by the writer.
    """
    if str(output) == "-":
        return
    check_not_an_input(inputs, output)
    path = Path(output)
    if directory is None:
        directory = is_directory_target(output)
    if directory and path.exists():
        if not path.is_dir():
            raise UserError(f"-o {output} is a file, and a name without a suffix is a shard "
                            "directory; remove the file or give the output file a suffix "
                            "(.xml, .json, .txt)")
        if not (path / MANIFEST).is_file() and any(path.iterdir()):
            raise UserError(f"-o {output} exists and is not an empty directory (nor a run's: "
                            f"no {MANIFEST}); -o needs a new or empty directory for shards")
    elif not directory and path.is_dir():
        raise UserError(f"-o {output} is a directory; name the output file")
    folder = path if directory else path.parent
    existing = _nearest_existing(_real(folder))
    if not existing.is_dir():
        raise UserError(f"cannot write -o {output}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        why = "a read-only file system" if _read_only(existing) else "permission denied"
        raise UserError(f"cannot write -o {output}: the directory {existing} is not writable "
                        f"({why})")
    try:
        stats = os.statvfs(existing)
    except (OSError, AttributeError):  # no statvfs (Windows): the writer reports a full disk
        return
    free = stats.f_bavail * stats.f_frsize
    floor = MIN_FREE_BYTES if min_free_bytes is None else min_free_bytes
    need = max(floor, _input_bytes([Path(i) for i in inputs if str(i) != "-"]))
    if free < need:
        raise UserError(f"cannot write -o {output}: only {_megabytes(free)} free in "
                        f"{existing}, and a run needs {_megabytes(need)} there (the inputs' "
                        f"size, {_megabytes(floor)} at least); free some space or choose "
                        "another -o")


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False
