"""Everything ``linker serve`` can be told, as one value.

Why its own module: the command builds it, the application reads it, and with ``--workers N``
it travels to each worker process as JSON in an environment variable (no pickle), so it must
be plain data with one place that turns it into and out of JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from e2e_linker.collective.settings import AnnotateSettings

#: the environment variable a ``--workers N`` process reads its options from
CONFIG_ENV = "E2E_LINKER_SERVE_CONFIG"
#: the addresses (and the name) only this machine can reach: a server listening on one of
#: them answers only requests whose ``Host`` header names one of them, by default
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: default request size limit: 10 MiB, a large BioC file of abstracts
DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024
#: default text budget of one request: 200,000 characters, about 130 abstracts, some 25 s of
#: the model's time on one CPU core once the KB names it meets are cached (one document of
#: that size is one call, the longest a request can hold the model for others)
DEFAULT_MAX_REQUEST_CHARS = 200_000
#: default time budget of one request, from when its body has been read to its answer
DEFAULT_REQUEST_TIMEOUT_S = 300.0
#: default characters annotated in one call: two or three abstracts, a fraction of a second
#: on a CPU, so that a request arriving behind a large one waits for that much only
DEFAULT_MAX_BATCH_CHARS = 4_000
#: default seconds a connection may take to send its request line and headers, and may stay
#: idle between requests
DEFAULT_HEADER_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ServeConfig:
    """``linker serve``'s options (each documented in its ``--help``) and the annotate
    settings the model is loaded with."""

    host: str = "127.0.0.1"
    port: int = 8000
    #: documents annotated in one call at most
    max_batch: int = 32
    #: how long the first request of a batch waits for others to join it
    max_wait_ms: float = 10.0
    #: the largest request body accepted (413 above, checked while reading)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    #: documents waiting for the model at most (503 with Retry-After above)
    max_queue: int = 1024
    #: seconds a client may take to send its body (408 after)
    read_timeout_s: float = 60.0
    #: characters of text one request may hold (413 above)
    max_request_chars: int = DEFAULT_MAX_REQUEST_CHARS
    #: seconds one request may wait for and use the model (504 after; its work is dropped)
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    #: characters annotated in one call at most (a longer document is a call of its own)
    max_batch_chars: int = DEFAULT_MAX_BATCH_CHARS
    #: seconds a connection may take to send its headers, or stay idle between requests
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    #: host names the ``Host`` header may give (``*``: any); None: the loopback names when
    #: the server listens on a loopback address, any otherwise
    allowed_hosts: tuple[str, ...] | None = None
    workers: int = 1
    #: torch threads of the model thread (None: torch's default, one a core)
    threads: int | None = 1
    settings: AnnotateSettings = field(default_factory=AnnotateSettings)

    def __post_init__(self) -> None:
        if min(self.max_batch, self.max_queue, self.max_request_bytes,
               self.max_request_chars, self.max_batch_chars) < 1:
            raise ValueError("--max-batch, --max-queue, --max-request-bytes, "
                             "--max-request-chars and --max-batch-chars must be at least 1")
        if self.request_timeout_s <= 0 or self.header_timeout_s <= 0:
            raise ValueError("--request-timeout and --header-timeout must be above 0")
        if self.allowed_hosts is not None and not self.allowed_hosts:
            raise ValueError("--allowed-hosts names no host (use * for any)")
        if self.threads is not None and self.threads < 1:
            raise ValueError("--threads must be at least 1")
        if self.max_wait_ms < 0 or self.read_timeout_s <= 0:
            raise ValueError("--max-wait-ms must be at least 0 and --read-timeout above 0")

    def to_json(self) -> str:
        """The options as JSON (for ``--workers`` processes)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        """The options :meth:`to_json` wrote."""
        data = json.loads(text)
        hosts = data.get("allowed_hosts")
        return cls(**{**data, "settings": AnnotateSettings(**data["settings"]),
                      "allowed_hosts": None if hosts is None else tuple(hosts)})
