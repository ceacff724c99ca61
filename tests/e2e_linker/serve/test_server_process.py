"""``linker serve`` as a user runs it (its own process): it listens on 127.0.0.1, answers
/health at once and /ready once loaded; SIGTERM finishes the requests in flight before the
process exits; a model that cannot load ends it with one line and exit code 2."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.e2e_linker.serve.server_thread import free_port, tiny_settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_settings(tmp_path_factory.mktemp("serve-process"))


def serve(*args: str) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "e2e_linker", "serve", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(url: str, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"{url} did not answer 200"
        time.sleep(0.1)


def test_sigterm_finishes_the_requests_in_flight_then_exits(tiny):
    settings, directory, kb_file = tiny
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = serve("--model", str(directory), "--kb", f"tsv:{kb_file}", "--index", "exact",
                    "--cache-dir", settings.cache_dir, "--port", str(port),
                    "--max-wait-ms", "3000")  # a request waits 3 s for company: in flight
    try:
        wait_for(f"{url}/health", process)
        wait_for(f"{url}/ready", process)
        with ThreadPoolExecutor(3) as pool:
            in_flight = [pool.submit(httpx.post, f"{url}/annotate",
                                     json={"text": f"Aspirin caused nausea {n}."}, timeout=60)
                         for n in range(3)]
            time.sleep(1.0)  # the requests wait in the batcher
            process.send_signal(signal.SIGTERM)
            answers = [f.result(60) for f in in_flight]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert all(a.json()["documents"][0]["mentions"] for a in answers)
        _, stderr = process.communicate(timeout=60)
        # uvicorn re-raises the signal once shut down, so the parent sees SIGTERM's status
        assert process.returncode in (0, -signal.SIGTERM), stderr
        assert f"linker serve: http://127.0.0.1:{port}/" in stderr and "ready (" in stderr
        assert "Traceback" not in stderr
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/health", timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_model_that_cannot_load_ends_the_server_with_one_line(tmp_path):
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "linker_config.json").write_text("{")
    process = serve("--model", str(broken), "--port", str(free_port()))
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 2
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and str(broken / "linker_config.json") in last
    assert "Traceback" not in stderr


def test_bad_options_are_one_line_before_anything_loads():
    done = subprocess.run([sys.executable, "-m", "e2e_linker", "serve", "--max-batch", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--max-batch" in done.stderr
