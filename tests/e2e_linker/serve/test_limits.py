"""Overload and hostile clients on a real server (uvicorn on a free port, a stand-in model):
a declared body over the limit is refused before it is read, a chunked one as it passes the
limit (413); a client that sends too slowly is cut off (408) and stalls nobody; a client that
vanishes mid-request harms nothing; a full queue answers 503 with Retry-After; requests
before the model is loaded get 503 and /ready says so; a document that breaks the annotator
fails its own request (500, one line) and the requests batched with it are answered."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from e2e_linker.serve.config import ServeConfig
from tests.e2e_linker.serve.fakes import POISON, FakeLinker
from tests.e2e_linker.serve.server_thread import running


def raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def answer_of(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
        if b"\r\n\r\n" in data and data.split(b"\r\n\r\n", 1)[1].endswith(b"}"):
            break
    return data


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent():
    with running(ServeConfig(max_request_bytes=1000), load=FakeLinker) as url:
        sock = raw(url)
        sock.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000000000\r\n\r\n")  # and not one byte of the body
        started = time.monotonic()
        head = answer_of(sock)
        assert time.monotonic() - started < 10
        assert head.startswith(b"HTTP/1.1 413") and b"over the limit of 1000 bytes" in head
        sock.close()
        assert httpx.get(f"{url}/health").status_code == 200


def test_a_chunked_body_is_refused_as_it_passes_the_limit():
    sent = []

    def body():
        for _ in range(10_000):  # 10 MB offered, 1,000 bytes allowed
            sent.append(1)
            yield b"x" * 1000

    with running(ServeConfig(max_request_bytes=1000), load=FakeLinker) as url:
        try:
            answer = httpx.post(f"{url}/annotate", content=body(),
                                headers={"Content-Type": "text/plain"}, timeout=30)
        except httpx.TransportError:  # the server may close while the client still sends
            answer = None
        if answer is not None:
            assert answer.status_code == 413
            assert "over the limit of 1000 bytes" in answer.json()["error"]
        assert len(sent) < 10_000  # refused long before the end
        ok = httpx.post(f"{url}/annotate", json={"text": "aspirin ok"}, timeout=30)
        assert ok.status_code == 200


def test_a_slow_client_is_cut_off_and_stalls_nobody_and_a_vanished_one_harms_nothing():
    with running(ServeConfig(read_timeout_s=1.5), load=FakeLinker) as url:
        slow = raw(url)
        slow.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 100\r\n\r\n{\"text\": ")  # ... and then nothing
        gone = raw(url)
        gone.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 100\r\n\r\n{\"te")
        gone.close()  # vanishes mid-body
        done = raw(url)
        done.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 16\r\n\r\n{\"text\": \"a b\"}")
        done.close()  # vanishes before its answer
        started = time.monotonic()
        for n in range(5):  # others are answered at once meanwhile
            answer = httpx.post(f"{url}/annotate", json={"text": f"word{n} x"}, timeout=10)
            assert answer.status_code == 200
        assert time.monotonic() - started < 1.5
        cut = answer_of(slow)
        assert cut.startswith(b"HTTP/1.1 408") and b"did not arrive within 1.5 s" in cut
        slow.close()
        assert httpx.get(f"{url}/ready").status_code == 200


def test_a_full_queue_answers_503_with_retry_after_and_recovers():
    linker = FakeLinker()
    linker.annotator.gate = threading.Event()
    config = ServeConfig(max_batch=1, max_queue=3, max_wait_ms=0)
    with running(config, load=lambda: linker) as url, ThreadPoolExecutor(4) as pool:
        blocker = pool.submit(httpx.post, f"{url}/annotate", json={"text": "first x"},
                              timeout=30)
        assert linker.annotator.entered.wait(10)  # the model is busy ...
        waiting = pool.submit(httpx.post, f"{url}/annotate",
                              json={"texts": ["a x", "b x", "c x"]}, timeout=30)
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/info").json()["batching"]["queued_documents"] < 3:
            assert time.monotonic() < deadline  # ... and three documents wait: full
            time.sleep(0.05)
        refused = httpx.post(f"{url}/annotate", json={"text": "one too many"}, timeout=10)
        assert refused.status_code == 503
        assert "busy" in refused.json()["error"]
        assert int(refused.headers["Retry-After"]) >= 1
        page = httpx.post(f"{url}/", data={"text": "also refused"}, timeout=10)
        assert page.status_code == 503 and "busy" in page.text
        linker.annotator.gate.set()
        assert blocker.result(30).status_code == 200
        assert waiting.result(30).status_code == 200
        assert httpx.post(f"{url}/annotate", json={"text": "room x"},
                          timeout=10).status_code == 200


def test_a_document_that_breaks_the_annotator_fails_its_own_request_only():
    linker = FakeLinker()
    linker.annotator.gate = threading.Event()
    config = ServeConfig(max_batch=8, max_wait_ms=0)
    with running(config, load=lambda: linker) as url, ThreadPoolExecutor(4) as pool:
        blocker = pool.submit(httpx.post, f"{url}/annotate", json={"text": "first x"},
                              timeout=30)
        assert linker.annotator.entered.wait(10)  # the model is busy: the next ones wait
        good = [pool.submit(httpx.post, f"{url}/annotate", json={"text": f"fine {n}"},
                            timeout=30) for n in range(2)]
        bad = pool.submit(httpx.post, f"{url}/annotate", json={"text": f"a {POISON} here"},
                          timeout=30)
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/info").json()["batching"]["queued_documents"] < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        linker.annotator.gate.set()
        assert blocker.result(30).status_code == 200
        assert [g.result(30).status_code for g in good] == [200, 200]
        assert [g.result(30).json()["documents"][0]["mentions"][0]["text"]
                for g in good] == ["fine", "fine"]
        refused = bad.result(30)
        assert refused.status_code == 500
        message = refused.json()["error"]
        assert "poisoned document" in message and "\n" not in message
        assert any(len(call) == 3 for call in linker.annotator.calls)  # they shared a call
        assert httpx.post(f"{url}/annotate", json={"text": "later x"},
                          timeout=10).status_code == 200


def test_before_the_model_is_loaded_ready_and_annotate_answer_503():
    gate = threading.Event()

    def load():
        assert gate.wait(30)
        return FakeLinker()

    with running(ServeConfig(), load=load, ready=False) as url:
        assert httpx.get(f"{url}/health").status_code == 200
        ready = httpx.get(f"{url}/ready")
        assert ready.status_code == 503 and ready.json()["state"] == "loading"
        early = httpx.post(f"{url}/annotate", json={"text": "early"})
        assert early.status_code == 503 and early.headers["Retry-After"]
        assert "still loading" in early.json()["error"]
        assert httpx.get(f"{url}/info").json()["state"] == "loading"
        gate.set()
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/ready").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert httpx.post(f"{url}/annotate", json={"text": "now x"}).status_code == 200


def test_bodies_received_at_once_are_bounded_too():
    with running(ServeConfig(max_request_bytes=1000, read_timeout_s=20),
                 load=FakeLinker) as url:
        uploads = []
        for _ in range(8):  # eight bodies of 900 bytes, each still 100 bytes short
            sock = raw(url)
            sock.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: 1000\r\n\r\n" + b"a" * 900)
            uploads.append(sock)
            time.sleep(0.1)
        ninth = raw(url)
        ninth.sendall(b"POST /annotate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 1000\r\n\r\n" + b"a" * 1000)
        refused = answer_of(ninth)
        assert refused.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in refused.lower()
        for sock in uploads:  # they finish their bodies and are answered
            sock.sendall(b"a" * 100)
            assert answer_of(sock).startswith(b"HTTP/1.1 200")
            sock.close()
        assert httpx.post(f"{url}/annotate", content=b"b" * 1000,
                          headers={"Content-Type": "text/plain"}).status_code == 200
