"""A real ``linker serve`` application on a free local port, run by uvicorn in a thread of the
test process (the model loads once per module, not once per test)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from e2e_linker.serve.app import create_app
from e2e_linker.serve.config import ServeConfig
from e2e_linker.serve.connections import uvicorn_options


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running(config: ServeConfig, load=None, ready: bool = True, timeout: float = 120.0
            ) -> Iterator[str]:
    """Serve ``create_app(config, load)`` on 127.0.0.1 and a free port; yields the base URL
    once ``/ready`` answers 200 (or, with ``ready=False``, once ``/health`` does), with the
    connection guards ``linker serve`` has. The server is shut down as SIGTERM would, and
    the thread joined, on exit."""
    config = ServeConfig(**{**config.__dict__, "host": "127.0.0.1", "port": free_port()})
    app = create_app(config, load=load)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                           log_level="warning", lifespan="on",
                                           **uvicorn_options(config.header_timeout_s)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{config.port}"
    deadline = time.monotonic() + timeout
    path = "/ready" if ready else "/health"
    while True:
        try:
            if httpx.get(url + path, timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            raise AssertionError(f"the server did not answer {path} within {timeout} s")
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(60)


def tiny_settings(root):
    """The annotate settings of a tiny model directory built under ``root`` (random 1-layer
    BERT, the synthetic KB, threshold 0, exact search, its own cache, a tiny normalizer):
    ``(settings, model directory, KB file)``."""
    from e2e_linker.collective.settings import AnnotateSettings
    from tests.helpers.tiny import tiny_encoder_dir
    from tests.helpers.tiny_linker import tiny_linker_dir

    directory, kb_file = tiny_linker_dir(root / "tiny")
    settings = AnnotateSettings(model_dir=str(directory), kb=f"tsv:{kb_file}",
                                cache_dir=str(root / "cache"), index_kind="exact",
                                normalizer_model=str(tiny_encoder_dir(root / "norm")))
    return settings, directory, kb_file
