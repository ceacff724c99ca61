"""Every ``linker serve`` request is bounded, and no client can hold the model or a socket
for others (issue 47), on a real server (uvicorn on a free local port, a stand-in model whose
forward passes take real time; ``linker serve`` as its own process for the port):

* a request over the text budget is answered 413 with one line naming the limit;
* a request over its time budget is answered 504, its work dropped, others unharmed;
* a large request is cut into pieces that take turns: a one-word request is answered while
  it runs;
* a client that goes away has its queued work dropped and its running call abandoned;
* a connection that does not finish its headers is closed; the ``Host`` header of a loopback
  server must name the loopback;
* a port in use is one line and exit code 2, before the model loads.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from e2e_linker.serve.config import ServeConfig
from e2e_linker.serve.connections import host_names, host_of
from tests.e2e_linker.serve.fakes import FakeLinker
from tests.e2e_linker.serve.server_thread import running

ROOT = Path(__file__).resolve().parents[2]


def slow_linker(delay: float = 0.05) -> FakeLinker:
    """A stand-in whose every word is a forward pass of ``delay`` seconds."""
    linker = FakeLinker()
    linker.annotator.delay = delay
    return linker


def raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def info(url: str) -> dict:
    return httpx.get(f"{url}/info", timeout=10).json()


def test_a_request_over_the_text_budget_is_413_with_one_line_naming_the_limit():
    with running(ServeConfig(max_request_chars=100), load=FakeLinker) as url:
        for answer in (
                httpx.post(f"{url}/annotate", json={"texts": ["a" * 60, "b" * 41]}),
                httpx.post(f"{url}/annotate", content="é" * 101,
                           headers={"Content-Type": "text/plain"}),
                httpx.post(f"{url}/normalize", json=[{"text": "x" * 101}]),
                httpx.post(f"{url}/", data={"text": "y" * 101})):
            assert answer.status_code == 413, answer.text
            error = answer.text if answer.request.url.path == "/" else answer.json()["error"]
            assert "the limit is 100 (linker serve --max-request-chars)" in error
        line = httpx.post(f"{url}/annotate", json={"text": "z" * 101}).content
        assert line == (b'{"error":"101 characters of text in one request; the limit is 100 '
                        b'(linker serve --max-request-chars)"}')
        assert httpx.post(f"{url}/annotate", json={"text": "a" * 100}).status_code == 200
        assert info(url)["limits"]["max_request_chars"] == 100


def test_a_request_over_its_time_budget_is_504_and_its_work_is_dropped():
    linker = slow_linker()
    with running(ServeConfig(request_timeout_s=1.0), load=lambda: linker) as url:
        began = time.monotonic()
        late = httpx.post(f"{url}/annotate", json={"text": " ".join(["w"] * 400)}, timeout=60)
        assert late.status_code == 504, late.text
        assert time.monotonic() - began < 10  # not the 20 s its 400 forward passes take
        assert late.json()["error"] == ("the request did not finish within 1 s (linker serve "
                                        "--request-timeout); its work was dropped")
        ok = httpx.post(f"{url}/annotate", json={"text": "quick"}, timeout=30)
        assert ok.status_code == 200
        assert linker.annotator.forwards < 200  # the long call was abandoned
        batching = info(url)["batching"]
        assert batching["cancelled_requests"] == 1 and batching["abandoned_calls"] == 1


def test_a_one_word_request_is_answered_while_a_large_request_runs():
    linker = slow_linker(0.02)
    texts = [f"text {n} of large" for n in range(200)]  # 800 forward passes: 16 s alone
    config = ServeConfig(max_batch_chars=200, request_timeout_s=120)
    with running(config, load=lambda: linker) as url, ThreadPoolExecutor(1) as pool:
        large = pool.submit(httpx.post, f"{url}/annotate", json={"texts": texts},
                            headers={"Accept": "application/x-ndjson"}, timeout=120)
        assert linker.annotator.entered.wait(10)
        time.sleep(0.5)
        waits = []
        for n in range(3):
            began = time.monotonic()
            answer = httpx.post(f"{url}/annotate", json={"text": f"word{n}"}, timeout=60)
            waits.append(time.monotonic() - began)
            assert answer.status_code == 200
            assert answer.json()["documents"][0]["mentions"][0]["text"] == f"word{n}"
        assert not large.done() and max(waits) < 10, waits
        lines = large.result(120).content.decode().splitlines()
        assert [json.loads(line)["document"] for line in lines] == [
            f"text-{n}" for n in range(1, 201)]  # whole, in request order


def test_a_client_that_goes_away_has_its_work_dropped():
    linker = slow_linker(0.02)
    with running(ServeConfig(max_batch_chars=200), load=lambda: linker) as url:
        body = json.dumps({"texts": [f"text {n} of a request nobody waits for"
                                     for n in range(300)]}).encode()
        sock = raw(url)
        sock.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        assert linker.annotator.entered.wait(10)
        time.sleep(0.3)
        sock.close()  # the client gives up
        deadline = time.monotonic() + 10
        while info(url)["batching"]["cancelled_requests"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert info(url)["batching"]["queued_documents"] == 0
        began = time.monotonic()
        assert httpx.post(f"{url}/annotate", json={"text": "next"}, timeout=30
                          ).status_code == 200
        assert time.monotonic() - began < 5
        run = sum(len(call) for call in linker.annotator.calls)
        assert run < 100, run  # of its 300 documents, the queued ones never ran


def test_connections_that_do_not_finish_their_headers_are_closed():
    with running(ServeConfig(header_timeout_s=1.0), load=FakeLinker) as url:
        silent = raw(url)  # sends nothing at all
        partial = raw(url)
        partial.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no more
        idle = raw(url)  # a whole request, then idle on a kept-alive connection
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = idle.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        while not answer.endswith(b"}"):  # headers and body may come in two reads
            answer += idle.recv(65536)
        began = time.monotonic()
        for sock in (silent, partial, idle):
            sock.settimeout(15)
            assert sock.recv(65536) == b""  # closed by the server
            sock.close()
        assert time.monotonic() - began < 10
        assert httpx.get(f"{url}/health").status_code == 200


def test_the_host_header_of_a_loopback_server_must_name_the_loopback():
    with running(ServeConfig(), load=FakeLinker) as url:
        port = url.rsplit(":", 1)[1]
        for host in (f"localhost:{port}", "127.0.0.1", f"[::1]:{port}", "LOCALHOST"):
            assert httpx.get(f"{url}/health", headers={"Host": host}).status_code == 200
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example",
                     "localhost.evil.example:80"):
            refused = httpx.get(f"{url}/health", headers={"Host": host})
            assert refused.status_code == 400, host
            assert "is not allowed" in refused.json()["error"]
            assert "(linker serve --allowed-hosts)" in refused.json()["error"]
            assert "\n" not in refused.json()["error"]
    config = ServeConfig(allowed_hosts=("tool.internal", "127.0.0.1"))
    with running(config, load=FakeLinker) as url:
        assert httpx.get(f"{url}/health", headers={"Host": "tool.internal:1"}
                         ).status_code == 200
        assert httpx.get(f"{url}/health", headers={"Host": "localhost"}).status_code == 400
    assert host_names("0.0.0.0", None) is None  # another bind: no check unless asked
    assert host_names("127.0.0.1", ("*",)) is None
    assert host_of("[::1]:8000") == "::1" and host_of("LocalHost:80") == "localhost"


def test_a_port_in_use_is_one_line_and_exit_2_before_the_model_loads(tmp_path):
    broken = tmp_path / "model"  # were the model loaded first, this would be the error
    broken.mkdir()
    (broken / "linker_config.json").write_text("{")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "e2e_linker", "serve", "--model",
                               str(broken), "--port", str(port)], cwd=ROOT,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: the port is in use (another server?); "
        "choose another with --port"]
    assert time.monotonic() - began < 60


def test_the_new_limits_are_in_the_help_with_their_defaults():
    done = subprocess.run([sys.executable, "-m", "e2e_linker", "serve", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for option in ("--max-request-chars", "--request-timeout", "--max-batch-chars",
                   "--header-timeout", "--allowed-hosts"):
        assert option in text
    assert "[default: 200000;" in text and "[default: 300.0;" in text
