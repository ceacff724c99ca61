"""A Python client for ``linker serve``, on the standard library alone.

Why: a notebook or a pipeline should not need the model, torch or an HTTP library to use a
running service; ``import e2e_linker.client`` loads neither. Mentions come back as the
dicts ``linker annotate --format jsonl`` writes (``document``, ``start``, ``end``, ``text``,
``type``, ``concept_id``, ``concept_name``, ``mention_score``, ``link_score``, and with
``explain=True`` an ``explanation``)::

    from e2e_linker import client

    client.annotate("Cisplatin-induced nephrotoxicity.")         # one text → its mentions
    client.annotate(["text one", "text two"], explain=True)      # texts → a list per text
    client.normalize([("tamoxifen", "Chemical"), "breast cancer"])

A busy or still-loading server answers 503 with ``Retry-After``; the client waits and
retries (``retries`` times) before raising. Any other refusal raises :class:`ServiceError`
with the status and the server's one-line reason.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

#: where ``linker serve`` listens by default
DEFAULT_URL = "http://127.0.0.1:8000"


class ServiceError(Exception):
    """The service refused a request: ``status`` (HTTP) and its one-line ``message``."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(f"{status}: {message}")


def annotate(texts: str | Sequence[str], url: str = DEFAULT_URL, explain: bool = False,
             ids: Sequence[str] | None = None, timeout: float = 120.0,
             retries: int = 3) -> list[dict] | list[list[dict]]:
    """The mentions of one text (a list of dicts), or of each of several texts (a list of
    such lists, in order). ``ids`` names the documents (default ``text-1``, ``text-2``...)."""
    one = isinstance(texts, str)
    payload: dict[str, Any] = {"text": texts} if one else {"texts": list(texts)}
    if ids is not None:
        payload["ids"] = list(ids)
    if explain:
        payload["explain"] = True
    answer = json.loads(request(url, "/annotate", json.dumps(payload).encode(),
                                "application/json", timeout, retries))
    found = [doc["mentions"] for doc in answer["documents"]]
    return found[0] if one else found


def annotate_document(body: bytes, content_type: str, url: str = DEFAULT_URL,
                      replace: bool = False, explain: bool = False, timeout: float = 300.0,
                      retries: int = 3) -> bytes:
    """A BioC XML (``application/xml``), BioC JSON (``application/bioc+json``) or PubTator
    (``text/x-pubtator``) body annotated: the same format back, the bytes ``linker
    annotate`` writes (``replace`` drops the old annotations)."""
    query = "&".join(name for name, on in (("replace=true", replace),
                                           ("explain=true", explain)) if on)
    return request(url, "/annotate" + (f"?{query}" if query else ""), body, content_type,
                   timeout, retries)


def normalize(mentions: Iterable[str | tuple[str, str | None]], url: str = DEFAULT_URL,
              timeout: float = 300.0, retries: int = 3) -> list[dict]:
    """Concepts of mentions found elsewhere, given as texts or ``(text, type)`` pairs: one
    dict per mention (``text``, ``type``, ``concept_id``, ``concept_name``, ``link_score``),
    in order. The server loads its normalizer on the first call."""
    items = []
    for item in mentions:
        text, type_ = (item, None) if isinstance(item, str) else (item[0], item[1])
        items.append({"text": text, "type": type_})
    answer = json.loads(request(url, "/normalize", json.dumps(items).encode(),
                                "application/json", timeout, retries))
    return answer["mentions"]


def info(url: str = DEFAULT_URL, timeout: float = 30.0) -> dict:
    """The service's model, KB hash, types, settings, limits and version (``GET /info``)."""
    return json.loads(request(url, "/info", None, None, timeout, 0))


def wait_ready(url: str = DEFAULT_URL, timeout: float = 300.0) -> float:
    """Wait until the service has loaded its model (``GET /ready``); the seconds waited. A
    :class:`TimeoutError` when it is not ready within ``timeout``."""
    started = time.monotonic()
    while True:
        try:
            request(url, "/ready", None, None, 10.0, 0)
            return time.monotonic() - started
        except (ServiceError, ConnectionError):
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{url} was not ready within {timeout:g} s") from None
            time.sleep(0.2)


def request(url: str, path: str, body: bytes | None, content_type: str | None,
            timeout: float, retries: int) -> bytes:
    """One request (POST with a body, GET without), retried on 503 as ``Retry-After``
    says; the answer's body, or :class:`ServiceError` / :class:`ConnectionError`."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{url}: the service URL must start with http:// or https://")
    headers = {"Content-Type": content_type} if content_type else {}
    deadline = time.monotonic() + timeout
    for attempt in range(retries + 1):
        req = urllib.request.Request(url.rstrip("/") + path, data=body, headers=headers,
                                     method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=max(deadline - time.monotonic(), 1.0)
                                        ) as answer:
                return answer.read()
        except urllib.error.HTTPError as exc:
            message = error_message(exc)
            wait = retry_after(exc)
            if exc.code != 503 or attempt == retries or wait is None or \
                    time.monotonic() + wait > deadline:
                raise ServiceError(exc.code, message) from None
            time.sleep(wait)
        except urllib.error.URLError as exc:
            raise ConnectionError(f"cannot reach {url}: {exc.reason}") from None
    raise AssertionError("unreachable")


def error_message(exc: urllib.error.HTTPError) -> str:
    """The server's one-line reason (``{"error": ...}``), else the HTTP reason phrase."""
    try:
        return json.loads(exc.read())["error"]
    except (ValueError, KeyError, TypeError, OSError):
        return str(exc.reason)


def retry_after(exc: urllib.error.HTTPError) -> float | None:
    """Seconds a 503 asks to wait (None when it does not say)."""
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
