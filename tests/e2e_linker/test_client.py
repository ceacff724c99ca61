"""The service client (``e2e_linker.client``): standard library only, no torch; the same
mentions the server gives; document bodies; normalize; a refusal as ServiceError with the
server's line; a loading server waited for through Retry-After."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from e2e_linker import client
from e2e_linker.serve.config import ServeConfig
from tests.e2e_linker.serve.fakes import FakeLinker
from tests.e2e_linker.serve.server_thread import running, tiny_settings
from tests.helpers.hostile_inputs import GOOD_PUBTATOR

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    settings, _, _ = tiny_settings(tmp_path_factory.mktemp("client"))
    with running(ServeConfig(settings=settings, max_queue=10)) as base:
        yield base


def test_importing_the_client_loads_neither_torch_nor_an_http_library():
    code = ("import sys, json; import e2e_linker.client; "
            "print(json.dumps(sorted(m for m in ('torch', 'httpx', 'fastapi', 'requests') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, cwd=ROOT)
    assert json.loads(out.stdout) == []


def test_annotate_gives_what_the_server_gives(url):
    text = "Aspirin caused a headache."
    server = httpx.post(f"{url}/annotate", json={"text": text}, timeout=60).json()
    assert client.annotate(text, url=url) == server["documents"][0]["mentions"]
    several = client.annotate([text, "Nothing here."], url=url, ids=["a", "b"])
    assert len(several) == 2 and several[0][0]["document"] == "a"
    explained = client.annotate(text, url=url, explain=True)
    assert all(m["explanation"]["candidates"] for m in explained)
    assert client.info(url)["state"] == "ready"


def test_documents_and_normalize(url):
    out = client.annotate_document(GOOD_PUBTATOR.encode(), "text/x-pubtator", url=url)
    assert out.startswith(b"11|t|Aspirin and nausea.") and out.count(b"\n11\t") > 2
    found = client.normalize([("aspirin", "Chemical"), "nausea"], url=url)
    assert [(m["text"], m["type"], m["concept_id"]) for m in found] == [
        ("aspirin", "Chemical", "C001"), ("nausea", "", "D002")]


def test_refusals_and_unreachable_servers_are_errors_with_their_reason(url):
    with pytest.raises(client.ServiceError) as refused:
        client.annotate(["x"] * 11, url=url)
    assert refused.value.status == 413 and "--max-queue" in refused.value.message
    with pytest.raises(client.ServiceError) as bad:
        client.annotate_document(b"<collection>", "application/xml", url=url)
    assert bad.value.status == 400 and "malformed XML" in bad.value.message
    with pytest.raises(ConnectionError):
        client.annotate("x", url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="http"):
        client.annotate("x", url="file:///etc/passwd")


def test_a_loading_server_is_waited_for_through_retry_after():
    gate = threading.Event()

    def load():
        assert gate.wait(30)
        return FakeLinker()

    with running(ServeConfig(), load=load, ready=False) as base:
        with pytest.raises(client.ServiceError) as early:
            client.annotate("x y", url=base, retries=0)
        assert early.value.status == 503
        threading.Timer(1.0, gate.set).start()
        assert client.annotate("word here", url=base, retries=3)[0]["text"] == "word"
        assert client.wait_ready(base, timeout=10) >= 0
