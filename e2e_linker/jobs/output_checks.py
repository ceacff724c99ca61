"""Checks on ``-o`` made before the model loads: never overwrite an input, never fail late.

Why a module of its own: ``linker annotate`` and ``linker normalize`` spend seconds to minutes
loading a model and may annotate for hours before they write; an output path that cannot work
(an input file, a read-only or full directory, a "directory" that is a file) must fail first,
with one line naming the path and exit code 2, and must never cost the user their input (the
gold annotations of ``annotate in.xml -o in.xml --replace``). It is the one guard of every
command that writes what the user names: ``annotate``, ``normalize``, ``convert``, ``view``,
``merge`` (its shard directory is its input), ``calibrate``, ``export`` and ``kb pack``. A
target that is not a regular file (a FIFO, ``/dev/null``, a socket) is refused too; a symlink
is judged by the file it points to, which the writer replaces (the link stays). Everything
here only looks: nothing is created or removed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from data_tools.formats.atomic import non_regular_kind, write_target
from data_tools.formats.detect import expand_inputs
from e2e_linker.errors import UserError
from e2e_linker.jobs.corpus_run import MANIFEST, is_directory_target

#: free space below which no run starts: room for a small output plus its temporary file
MIN_FREE_BYTES = 8 << 20


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


def check_not_an_input(inputs: Sequence[str | os.PathLike], output: str | os.PathLike, *,
                       label: str = "-o") -> None:
    """Refuse an ``output`` that is, contains or lies inside one of ``inputs``.

    Symlinks, hard links and spellings such as ``./in.xml`` or ``dir/../in.xml`` are seen
    through; ``-`` (standard input or output) is never a file here. ``label`` is how the
    messages call the output (``-o``, or an argument's name such as ``OUT_DIR``).
    """
    if str(output) == "-":
        return
    target = write_target(output)
    for item in inputs:
        if str(item) == "-":
            continue
        source = write_target(item)
        if source.is_dir():
            if _inside(target, source):
                raise UserError(f"{label} {output} is inside the input directory {item}: the "
                                "output would overwrite or join its inputs; choose an output "
                                "path outside it")
        elif target == source or _same_file(target, source):  # hard links too
            raise UserError(f"{label} {output} is the input {item}: writing it would destroy the "
                            "input; choose another output path")
        elif _inside(source, target):
            raise UserError(f"{label} {output} contains the input {item}; choose an output "
                            "directory that holds no input")


def check_output_target(inputs: Sequence[str | os.PathLike], output: str | os.PathLike, *,
                        directory: bool | None = None,
                        min_free_bytes: int | None = None, room_for_inputs: bool = True,
                        shards: bool = True, label: str = "-o") -> None:
    """Everything about ``-o`` that can be known before the model loads; raises
    :class:`UserError` (one line naming the path) when the run could not write there.

    * ``output`` is not one of ``inputs``, nor inside an input directory (a shard directory
      being merged, too), nor a folder holding one (see :func:`check_not_an_input`);
    * ``output`` is a regular file or nothing yet, never a FIFO, a device, a socket or a
      directory where a file is written (a directory where one is: never a file); a symlink is
      judged by the file it points to, which is what the writer replaces;
    * the directory it goes to is a directory (or can be created under the nearest existing
      one, as the writer creates it), and is writable;
    * that file system has at least ``min_free_bytes`` free (default :data:`MIN_FREE_BYTES`),
      and, with ``room_for_inputs``, at least the inputs' size (a corpus run's output is
      rarely smaller than its input; a model's statistics file or packed index is).

    ``directory`` says whether ``output`` is a directory rather than a file; ``None`` decides
    it as ``linker annotate`` does (:func:`corpus_run.is_directory_target`). A directory is a
    shard directory (new, empty or a run's) unless ``shards`` is False (a folder written into,
    ``linker export``'s). ``label`` is how the messages call the output.
    A write that still fails later (the disk fills up meanwhile) is reported by the writer.
    """
    if str(output) == "-":
        return
    check_not_an_input(inputs, output, label=label)
    path = Path(output)
    kind = non_regular_kind(path)  # None: a regular file, or nothing there yet
    if directory is None:
        directory = is_directory_target(output)
    if directory and (path.exists() or kind is not None):
        if not path.is_dir():
            if kind is not None or not shards:
                raise UserError(f"{label} {output} is {kind or 'a file'}, not a directory; "
                                "name a new or existing directory")
            raise UserError(f"{label} {output} is a file, and a name without a suffix is a "
                            "shard directory; remove the file or give the output file a suffix "
                            "(.xml, .json, .txt)")
        if shards and not (path / MANIFEST).is_file() and any(path.iterdir()):
            raise UserError(f"{label} {output} exists and is not an empty directory (nor a "
                            f"run's: no {MANIFEST}); -o needs a new or empty directory for "
                            "shards")
    elif not directory and path.is_dir():
        raise UserError(f"{label} {output} is a directory; name the output file")
    elif not directory and kind is not None:
        raise UserError(f"{label} {output} is {kind}, not a regular file: writing would "
                        "replace it; name a regular file or a new path")
    target = write_target(path)
    folder = target if directory else target.parent
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise UserError(f"cannot write {label} {output}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        why = "a read-only file system" if _read_only(existing) else "permission denied"
        raise UserError(f"cannot write {label} {output}: the directory {existing} is not writable "
                        f"({why})")
    try:
        stats = os.statvfs(existing)
    except (OSError, AttributeError):  # no statvfs (Windows): the writer reports a full disk
        return
    free = stats.f_bavail * stats.f_frsize
    floor = MIN_FREE_BYTES if min_free_bytes is None else min_free_bytes
    need = max(floor, _input_bytes([Path(i) for i in inputs if str(i) != "-"])
               if room_for_inputs else 0)
    if free < need:
        raise UserError(f"cannot write {label} {output}: only {_megabytes(free)} free in "
                        f"{existing}, and a run needs {_megabytes(need)} there (the inputs' "
                        f"size, {_megabytes(floor)} at least); free some space or choose "
                        f"another {label}")


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False
