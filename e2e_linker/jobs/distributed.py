"""Several processes, one job: the process group, its collectives, and a one-machine launcher.

Why this module: ``linker annotate`` and ``linker train`` run unchanged under any launcher
that sets the torch.distributed environment (``accelerate launch``, ``torchrun``, mpirun for
CPU), and ``linker annotate --num-processes N`` starts N such processes itself on one
machine. The process group comes from accelerate (:class:`accelerate.PartialState`: NCCL with
one GPU per process, gloo for CPU processes); this module adds what our commands need on top:
which process is which, object collectives that pass errors along instead of leaving the
other processes waiting forever, "main process first" for building shared caches (the KB
vectors are encoded by one process and then memory-mapped by all of them), and CPU threads
split between the processes of a machine.

Processes started by :func:`launch_local` die with their launcher: each arms Linux's
parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``; elsewhere a watchdog thread that
notices the re-parenting) as soon as it joins the group, so killing the launcher, even with
SIGKILL, never leaves workers running unsupervised; the launcher itself stops its workers when
it is interrupted or terminated. What the workers finished stays: ``--resume`` takes over.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import click

T = TypeVar("T")

#: how long a collective waits for the slowest process: the main process may spend a long time
#: alone first (encoding a large KB on a CPU, validating on dev) while the others wait for it
PROCESS_GROUP_TIMEOUT = timedelta(hours=float(os.environ.get("E2E_LINKER_DIST_TIMEOUT_H", "6")))

#: environment variables by which launchers announce more than one process
_WORLD_SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")

#: set by :func:`launch_local` for its workers: the launcher's process ID
LAUNCHER_PID = "E2E_LINKER_LAUNCHER_PID"
#: Linux ``prctl`` option: the signal a process gets when its parent dies
PR_SET_PDEATHSIG = 1
#: signals on which the launcher stops its workers before it exits (Ctrl-C: KeyboardInterrupt)
LAUNCHER_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                         if hasattr(signal, name))


def launched_distributed() -> bool:
    """True inside a process started by a multi-process launcher (accelerate, torchrun, mpirun)."""
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in _WORLD_SIZE_VARS)


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


class PeerFailed(SystemExit):
    """Another process of the group failed and reported it; this one stops quietly (exit 2).

    A ``SystemExit`` so that only the process that met the problem prints it: N copies of the
    same one-line error would only hide it.
    """

    def __init__(self) -> None:
        super().__init__(2)


@dataclass
class World:
    """This process's place in the group; with ``size == 1`` every collective is a no-op."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def barrier(self) -> None:
        if self.distributed:
            import torch.distributed as dist

            dist.barrier()

    def leave(self) -> None:
        """End this process's part of a run that succeeded: wait for every peer, then take the
        process group down.

        Why: a process that tears its group down (or exits) while a peer is still in a
        collective or talking to the rendezvous store can end with ``terminate called without
        an active exception`` (SIGABRT, exit 134) after its work was written, and the launcher
        then reports the run as failed. Waiting first means every peer is past its last
        collective; a failed run skips this and leaves through :func:`_leave_group`.
        """
        if self.distributed:
            self.barrier()
            _leave_group()

    def broadcast(self, obj: T | None = None) -> T:
        """The main process's ``obj`` on every process (pickled; small objects only)."""
        if not self.distributed:
            return obj  # type: ignore[return-value]
        import torch.distributed as dist

        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]  # type: ignore[return-value]

    def all_gather(self, obj: T) -> list[T]:
        """Every process's ``obj``, in rank order, on every process."""
        if not self.distributed:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def on_main(self, work: Callable[[], T]) -> T:
        """``work()`` on the main process, its result on all; an error there stops all.

        The main process re-raises its own exception (the CLI prints it as one line); the
        others raise :class:`PeerFailed` instead of waiting at the next collective forever.
        """
        result, error = None, None
        if self.is_main:
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - passed on, then re-raised
                error = exc
        failed = self.broadcast(error is not None)
        if error is not None:
            raise error
        if failed:
            raise PeerFailed()
        return self.broadcast(result)

    def check_all(self, work: Callable[[], T]) -> list[T]:
        """``work()`` on every process, then every process's result on all of them.

        If any process failed, it re-raises its own exception and the others stop with
        :class:`PeerFailed` (the main process names the failed process when it did not fail
        itself), so no process is left at a collective that will never complete.
        """
        result, error = None, None
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - passed on, then re-raised
            error = exc
        summary = f"{type(error).__name__}: {error}".splitlines()[0] if error else None
        statuses = self.all_gather((summary, result))
        if error is not None:
            raise error
        failed = [(rank, s) for rank, (s, _) in enumerate(statuses) if s is not None]
        if failed:
            if self.is_main:
                from e2e_linker.errors import UserError

                rank, message = failed[0]
                raise UserError(f"process {rank} of {self.size} failed: {message}")
            raise PeerFailed()
        return [r for _, r in statuses]

    def _sync(self, error: BaseException | None) -> None:
        """A barrier that also tells every process whether one of them failed."""
        failed = any(self.all_gather(error is not None))
        if error is not None:
            raise error
        if failed:
            raise PeerFailed()

    @contextlib.contextmanager
    def main_process_first(self) -> Iterator[None]:
        """Run the block on the main process, then on each other machine's first process, then
        on the rest: what one process writes to a cache (KB vectors, a faiss index) the others
        then read, memory-mapped, instead of every process encoding the KB at once. If the
        block fails on one process, the ones still waiting stop with :class:`PeerFailed`."""
        first = self.is_main
        second = not first and self.local_rank == 0
        if not first:
            self._sync(None)
            if not second:
                self._sync(None)
        error = None
        try:
            yield
        except BaseException as exc:  # noqa: BLE001 - passed on, then re-raised
            error = exc
        if first:
            self._sync(error)
            self._sync(None)
        elif second:
            self._sync(error)
        elif error is not None:
            raise error


def die_with_launcher() -> bool:
    """In a worker of :func:`launch_local`: be terminated (SIGTERM) when the launcher dies.

    Why: a killed ``linker annotate --num-processes N`` must not leave N workers running on,
    re-parented to PID 1, writing shards nobody merges (and holding the GPUs). On Linux this is
    the parent-death signal, armed in the worker itself (no ``preexec_fn`` in a launcher that
    has threads); elsewhere a daemon thread that checks the parent once a second. A launcher
    already gone by now terminates this process at once. The variable is removed from the
    environment, so the worker's own children are not affected. Returns whether it applied.
    """
    value = os.environ.pop(LAUNCHER_PID, None)
    if not value:
        return False
    launcher = int(value)
    armed = False
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != launcher:  # it died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)
    if not armed:
        threading.Thread(target=_watch_launcher, args=(launcher,), daemon=True,
                         name="die-with-launcher").start()
    return True


def _watch_launcher(launcher: int) -> None:
    while os.getppid() == launcher:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def init_world(device: str | None = None) -> World:
    """Join the process group the launcher set up (a one-process world if there is none).

    GPU runs use one GPU per process (``cuda:LOCAL_RANK``, NCCL); CPU runs use gloo. Each
    process gets ``cores // processes on this machine`` torch threads, so N processes never
    oversubscribe the cores one process would have used. A worker of :func:`launch_local`
    first arranges to die with it (:func:`die_with_launcher`).
    """
    die_with_launcher()
    if not launched_distributed():
        return World(device=device or "")
    import torch
    from accelerate import PartialState

    cpu = device == "cpu" or not torch.cuda.is_available()
    state = PartialState(cpu=cpu, timeout=PROCESS_GROUP_TIMEOUT)
    atexit.register(_leave_group)
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", 0)) or state.num_processes
    torch.set_num_threads(max(1, available_cores() // local_size))
    if not cpu:
        if state.local_process_index >= torch.cuda.device_count():
            from e2e_linker.errors import UserError

            raise UserError(f"process {state.local_process_index} of {local_size} on this "
                            f"machine has no GPU of its own ({torch.cuda.device_count()} "
                            "visible); start at most one process per GPU, or use --device cpu")
        torch.cuda.set_device(state.local_process_index)
    return World(rank=state.process_index, size=state.num_processes,
                 local_rank=state.local_process_index, local_size=local_size,
                 device="cpu" if cpu else "cuda")


def _leave_group() -> None:
    """Destroy the process group before the interpreter ends.

    Why: a gloo group left for the C++ destructors at exit can end the process with
    ``terminate called without an active exception`` (SIGABRT, exit 134) after all its work
    was written, and the launcher then reports the run as failed.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


# ---- the one-machine launcher (linker annotate --num-processes N) ---------------------------

def render_argv(command: click.Command, params: dict[str, Any],
                drop: Sequence[str] = ()) -> list[str]:
    """The command-line arguments that parse back into ``params`` for ``command``.

    Why: the worker processes must run exactly the command the user typed, whether it came
    from the ``linker`` script, ``python -m e2e_linker`` or a test's ``CliRunner`` (whose
    ``sys.argv`` is not the command's); rendering the parsed parameters covers all three.
    """
    options: list[str] = []
    arguments: list[str] = []
    for param in command.params:
        name = param.name
        if name is None or name in drop or name not in params:
            continue
        value = params[name]
        if isinstance(param, click.Argument):
            arguments += [str(v) for v in value] if param.nargs != 1 else [str(value)]
            continue
        assert isinstance(param, click.Option)
        flag = param.opts[-1] if param.opts[-1].startswith("--") else param.opts[0]
        if param.is_flag and param.secondary_opts:  # --x/--no-x: True, False or unset
            if value is not None:
                options.append(flag if value else param.secondary_opts[0])
        elif param.is_flag:
            if value:
                options.append(flag)
        elif value is not None:
            for v in value if param.multiple else [value]:
                options += [flag, str(v)]
    return [*options, "--", *arguments]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch_local(args: Sequence[str], processes: int) -> int:
    """Run ``python -m e2e_linker ARGS`` as ``processes`` ranks of one group on this machine.

    The children get the torch.distributed environment ``torchrun`` would give them and
    ``OMP_NUM_THREADS = cores // processes``. When one exits with an error the others are
    stopped (they would wait for it at the next collective); returns the first non-zero exit
    code, else 0. The children die with the launcher (see :func:`die_with_launcher` and
    :func:`supervise`).
    """
    env = dict(os.environ)
    env.update({"WORLD_SIZE": str(processes), "LOCAL_WORLD_SIZE": str(processes),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
                "OMP_NUM_THREADS": str(max(1, available_cores() // processes))})
    return supervise([[sys.executable, "-m", "e2e_linker", *args]] * processes,
                     [{**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
                      for rank in range(processes)])


def supervise(commands: Sequence[Sequence[str]], envs: Sequence[dict[str, str]]) -> int:
    """Start one child per command (with its environment) and wait for all of them.

    When one fails the others are stopped. The children die with this process: they get
    :data:`LAUNCHER_PID` (see :func:`die_with_launcher`, for SIGKILL, which nothing here can
    catch), and while they run SIGTERM and SIGHUP stop them before this process exits with
    ``128 + signal`` (Ctrl-C stops them and raises KeyboardInterrupt). Returns the first
    non-zero exit code (``128 + signal`` for a child killed by a signal), else 0. Why apart
    from :func:`launch_local`: the life cycle can be tested with tiny commands, without torch.
    """
    mine = str(os.getpid())
    with _signals_stop_the_launcher():
        children: list[subprocess.Popen] = []
        try:
            for command, env in zip(commands, envs, strict=True):
                children.append(subprocess.Popen(list(command), env={**env, LAUNCHER_PID: mine}))
            return _wait_all(children)
        except BaseException:
            _stop(children)
            raise


def _wait_all(children: list[subprocess.Popen]) -> int:
    code = 0
    running = list(children)
    while running:
        for child in list(running):
            status = child.poll()
            if status is None:
                continue
            running.remove(child)
            if status != 0 and code == 0:
                code = status if status > 0 else 128 - status
                _stop(running)
        time.sleep(0.05)
    return code


class Terminated(SystemExit):
    """The launcher was sent SIGTERM or SIGHUP: it exits with ``128 + signal`` once its
    children are stopped."""


@contextlib.contextmanager
def _signals_stop_the_launcher() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` in it (their default
    action would end the launcher before it could stop its children). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, _frame: object) -> None:
        raise Terminated(128 + signum)

    previous = {sig: signal.signal(sig, terminate) for sig in LAUNCHER_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
