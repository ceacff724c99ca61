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
#: default request size limit: 10 MiB, a large BioC file of abstracts
DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024


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
    workers: int = 1
    #: torch threads of the model thread (None: torch's default, one a core)
    threads: int | None = 1
    settings: AnnotateSettings = field(default_factory=AnnotateSettings)

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_queue < 1 or self.max_request_bytes < 1:
            raise ValueError("--max-batch, --max-queue and --max-request-bytes must be at "
                             "least 1")
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
        return cls(**{**data, "settings": AnnotateSettings(**data["settings"])})
