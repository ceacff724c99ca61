"""Write to a temporary file beside the target and rename it into place on success.

A crash, a bad document or Ctrl-C in the middle of a corpus run must never leave a truncated
output file that looks complete. Nor may it leave litter: the temporary file
(``.NAME.xxxxxxxx.part``) is removed when the block fails, and a process killed outright
(SIGKILL, SIGTERM, a power cut) cannot remove its own, so the next write to the same target
removes every stale one first. "Stale" is decided by a lock, not by age: the writer holds an
exclusive ``flock`` on its temporary file from creation to rename, the kernel releases it when
the writer dies, so a temporary file nobody holds is left from a dead run, and one that is held
belongs to a writer still at work and is left alone.

A failed write (disk full, permission denied, read-only file system, quota) raises
:class:`OutputError`, naming the target rather than its temporary file.

Only a regular file is ever replaced. A symlink is written through: the file it points to is
replaced (atomically, as any other), and the link stays a link. A target that is not a regular
file (a FIFO, a device such as ``/dev/null``, a socket, a directory) is refused with an
:class:`OutputError`, never replaced by a regular file. SIGTERM, like Ctrl-C, removes the
temporary file: while a write is open in the main thread, a SIGTERM that would otherwise end
the process at once raises :class:`SystemExit` (exit code 143) so the clean-up runs.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no locks, and so no clean-up of other runs' temporary files
    fcntl = None  # type: ignore[assignment]

#: ``tempfile.mkstemp``'s random part: 8 characters of this alphabet
_TEMP_NAME = r"\.{name}\.[a-z0-9_]{{8}}\.part"

#: what a file that is not a regular one is, by its mode (see :func:`non_regular_kind`)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class OutputError(OSError):
    """Writing an output file failed; ``filename`` is the target, not its temporary file.

    Why a class of its own: the disk filling up is the user's to fix, not a bug, so a command
    line prints it as one line; and an ``OSError`` met while *reading* must not pass for one.
    """

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


class OutputPermissionError(OutputError, PermissionError):
    """:class:`OutputError` for EACCES/EPERM: still a ``PermissionError`` for callers."""


def output_error(exc: OSError, target: str | os.PathLike) -> OutputError:
    """``exc`` (met while writing ``target``) as an :class:`OutputError` naming ``target``."""
    if isinstance(exc, OutputError):
        return exc
    kind = OutputPermissionError if exc.errno in (errno.EACCES, errno.EPERM) else OutputError
    code = exc.errno if exc.errno is not None else errno.EIO
    return kind(code, exc.strerror or os.strerror(code), str(target))


class _TargetFile(io.FileIO):
    """The temporary file's raw handle: a failed write names the target."""

    def __init__(self, fd: int, target: Path):
        super().__init__(fd, "wb", closefd=True)
        self.target = target

    def write(self, data) -> int:  # type: ignore[override]
        try:
            return super().write(data)
        except OSError as exc:
            raise output_error(exc, self.target) from exc


def write_target(path: str | os.PathLike) -> Path:
    """The file that a write to ``path`` replaces: ``path`` with every symlink followed (and
    ``.``/``..`` resolved), also when the link dangles (the file it names is created).

    Why: renaming a new file over a symlink would replace the link itself and leave the file
    it points to stale; every writer of an output resolves the path here first.
    """
    return Path(os.path.realpath(os.fspath(path)))


def non_regular_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` (symlinks followed) is when it exists and is not a regular file: ``"a
    FIFO (named pipe)"``, ``"a character device"``, ``"a directory"``, ...; ``None`` for a
    regular file or nothing there (a dangling symlink included).

    Why: a writer that renames a regular file over a FIFO or ``/dev/null`` destroys it; the
    checks before a run and :func:`atomic_output` itself refuse such a target by this.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "a symlink loop" if exc.errno == errno.ELOOP else None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "a special file")


class _SigtermRaises:
    """While at least one :func:`atomic_output` block is open in the main thread, SIGTERM
    raises ``SystemExit(143)`` instead of ending the process at once (which would leave the
    temporary file behind). Installed only over the default action: a handler some other part
    installed (a server's, a launcher's) is left alone."""

    def __init__(self) -> None:
        self.depth = 0
        self.installed = False

    @staticmethod
    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        if self.depth == 0 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._raise)
            self.installed = True
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0 and self.installed:
                self.installed = False
                signal.signal(signal.SIGTERM, signal.SIG_DFL)


_sigterm_raises = _SigtermRaises()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _lock(fd: int, wait: bool) -> bool:
    """An exclusive ``flock`` on ``fd``; False when another process holds one (``wait=False``)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError as exc:  # a file system without locks: treat every file as held
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            return False
        raise
    return True


def is_temporary_of(name: str, target_name: str) -> bool:
    """Whether the file name ``name`` is one of :func:`atomic_output`'s temporary files for a
    target called ``target_name``."""
    return re.fullmatch(_TEMP_NAME.format(name=re.escape(target_name)), name) is not None


def remove_stale_temporaries(directory: str | os.PathLike,
                             target_name: str | None = None) -> list[Path]:
    """Remove the temporary files in ``directory`` that no living writer holds.

    Why: a run killed outright leaves its ``.NAME.xxxxxxxx.part`` behind; a later run removes
    those of its own target (``target_name``), or all of them (``None``: a shard directory's).
    Files another process is still writing are left alone. Returns what was removed.
    """
    if fcntl is None:
        return []
    folder = Path(directory)
    try:
        names = [p for p in folder.iterdir() if p.name.startswith(".") and
                 p.name.endswith(".part")]
    except OSError:  # missing or unreadable: nothing of ours can be there
        return []
    removed = []
    for path in names:
        if target_name is not None and not is_temporary_of(path.name, target_name):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # gone already, or not ours to open
        try:
            # unlinked while the lock is held: a writer that created the file but has not
            # locked it yet waits for it, then sees the file gone and makes another
            if _lock(fd, wait=False):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
        finally:
            os.close(fd)
    return removed


def _create_temporary(target: Path) -> tuple[int, str]:
    """A new locked temporary file beside ``target`` (see the module docstring)."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        _lock(fd, wait=True)
        if os.fstat(fd).st_nlink:
            return fd, tmp
        os.close(fd)  # removed as stale between its creation and our lock: make another


@contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Yield a file object for a temporary sibling of ``path``; rename on clean exit.

    On any exception (Ctrl-C and SIGTERM included) the temporary file is removed and ``path``
    is left as it was; an ``OSError`` from writing, flushing, syncing or renaming it is raised
    as :class:`OutputError` naming ``path``. A symlink is written through (see
    :func:`write_target`); a target that is not a regular file is refused with an
    :class:`OutputError` before anything is created. Stale temporary files of ``path`` left
    by killed runs are removed first.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_output writes in mode 'w' or 'wb', not {mode!r}")
    target = write_target(path)
    kind = non_regular_kind(target)
    if kind is not None:
        code = errno.EISDIR if kind == "a directory" else errno.EINVAL
        raise OutputError(code, f"{kind}, not a regular file", str(path))
    with _sigterm_raises():
        yield from _write_atomically(target, Path(path), mode)


def _write_atomically(target: Path, shown: Path, mode: str) -> Iterator[IO]:
    """:func:`atomic_output`'s body: ``target`` is the file replaced, ``shown`` the path that
    errors name."""
    tmp = None
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(target.parent, target.name)
            fd, tmp = _create_temporary(target)
        except FileExistsError as exc:  # a parent is a file
            raise OutputError(errno.ENOTDIR, f"{exc.filename} is not a directory",
                              str(shown)) from exc
        except OSError as exc:
            raise output_error(exc, shown) from exc
        try:
            raw = _TargetFile(os.dup(fd), shown)  # fd itself keeps the lock until the rename
            handle: IO = io.BufferedWriter(raw)
            if mode == "w":
                handle = io.TextIOWrapper(handle, encoding="utf-8", newline="\n")
            try:
                yield handle
            except BaseException:
                with contextlib.suppress(Exception):  # the block's own error is the one to report
                    handle.close()
                raise
            handle.close()  # flushes: a full disk shows here at the latest
            try:
                os.fsync(fd)  # a shard recorded as done must survive a crash of the machine too
                os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
                os.replace(tmp, target)
                tmp = None
            except OSError as exc:
                raise output_error(exc, shown) from exc
        finally:
            os.close(fd)
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
