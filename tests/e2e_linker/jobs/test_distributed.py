"""The one-machine launcher's process life cycle (e2e_linker.jobs.distributed): workers die
with their launcher, however it ends, and stop together when one fails.

Tiny Python commands stand in for the workers, so these run in seconds without torch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from e2e_linker.jobs.distributed import LAUNCHER_PID, World, die_with_launcher, supervise

#: a worker: joins as launch_local's workers do, says its PID, then works for a minute
WORKER = textwrap.dedent("""
    import sys, time
    from e2e_linker.jobs.distributed import die_with_launcher
    assert die_with_launcher()
    with open(sys.argv[1], "a") as out:
        print(__import__("os").getpid(), file=out, flush=True)
    time.sleep(60)
""")
#: a launcher of two such workers, as ``linker annotate --num-processes 2`` is
LAUNCHER = textwrap.dedent("""
    import os, sys
    from e2e_linker.jobs.distributed import supervise
    worker = [sys.executable, "-c", sys.argv[1], sys.argv[2]]
    sys.exit(supervise([worker, worker], [dict(os.environ)] * 2))
""")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_for(check, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def start_launcher(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    pids = tmp_path / "pids"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, WORKER, str(pids)])
    assert wait_for(lambda: pids.is_file() and len(pids.read_text().split()) == 2)
    return launcher, [int(p) for p in pids.read_text().split()]


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                                reason="tells living processes by /proc (Linux)")


@needs_proc
def test_workers_die_when_their_launcher_is_killed(tmp_path):
    launcher, workers = start_launcher(tmp_path)
    assert all(alive(p) for p in workers)
    launcher.send_signal(signal.SIGKILL)  # nothing of the launcher's own runs any more
    launcher.wait()
    assert wait_for(lambda: not any(alive(p) for p in workers), 10), \
        "workers outlived their launcher"


@needs_proc
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_launcher_stops_its_workers_and_says_how_it_ended(tmp_path, sig):
    launcher, workers = start_launcher(tmp_path)
    launcher.send_signal(sig)
    assert launcher.wait(timeout=30) == 128 + sig
    assert not any(alive(p) for p in workers)


def test_a_worker_whose_launcher_is_already_gone_ends_at_once(tmp_path):
    env = {**os.environ, LAUNCHER_PID: "1"}  # not its parent: the launcher died meanwhile
    done = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "pids")], env=env,
                          timeout=60)
    assert done.returncode == -signal.SIGTERM
    assert not (tmp_path / "pids").exists()


def test_outside_a_launcher_nothing_is_armed(monkeypatch):
    monkeypatch.delenv(LAUNCHER_PID, raising=False)
    assert die_with_launcher() is False


def test_one_failing_worker_stops_the_others_and_gives_its_exit_code(tmp_path):
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    failing = [sys.executable, "-c", "import time, sys; time.sleep(0.5); sys.exit(3)"]
    started = time.monotonic()
    assert supervise([sleeper, failing], [dict(os.environ)] * 2) == 3
    assert time.monotonic() - started < 30
    assert supervise([[sys.executable, "-c", "pass"]] * 2, [dict(os.environ)] * 2) == 0


def test_a_finished_process_waits_for_its_peers_before_taking_the_group_down(monkeypatch):
    import torch.distributed as dist

    calls = []
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: "destroy" not in calls)
    monkeypatch.setattr(dist, "barrier", lambda: calls.append("barrier"))
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroy"))
    World(rank=1, size=2).leave()
    assert calls == ["barrier", "destroy"]
    calls.clear()
    World().leave()  # one process: no group to leave
    assert calls == []
