"""The FastAPI application of ``linker serve``: routes, error answers, start and stop.

Routes: ``POST /annotate`` (JSON texts → mentions; BioC XML / BioC JSON / PubTator → the same
format annotated), ``POST /normalize`` (given mentions → concepts), ``GET /health``,
``GET /ready``, ``GET /info``, ``GET /`` and ``POST /`` (the paste page), and the framework's
OpenAPI schema at ``/openapi.json`` (its documentation pages are off: they load scripts from
the network). Every refused request is answered ``{"error": "<one line>"}`` with its status;
nothing a request sends can stop the process, name a file it reads, or be unpickled.

The model is loaded by the worker thread after the server starts (:mod:`batching`), so
``/health`` answers at once and ``/ready`` says when the model and KB are loaded. On SIGTERM
the server stops accepting connections, finishes the requests in flight, then the worker
finishes its queue and stops.

Each request is bounded: its body (:mod:`limits`), its text (``max_request_chars``, checked
when it is queued) and its time (``request_timeout_s``, once its body is read; 504 after).
A request whose client goes away, or whose time runs out, has its future cancelled, and the
worker drops what is left of its work (:mod:`batching`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from data_tools.documents import Document
from data_tools.formats.mentions_jsonl import ANNOTATOR, mention_records
from e2e_linker.collective.settings import AnnotateSettings, type_list
from e2e_linker.errors import EXPECTED_ERRORS
from e2e_linker.serve.batching import ANNOTATE, NORMALIZE, READY, Batcher, Job
from e2e_linker.serve.bodies import (
    DOCUMENT_TYPES,
    JSON,
    NDJSON,
    TEXT,
    decode_text,
    document_format,
    media_type,
    read_body,
    text_documents,
    unsupported,
    write_body,
)
from e2e_linker.serve.config import ServeConfig
from e2e_linker.serve.connections import HostCheck, host_names
from e2e_linker.serve.errors import RequestError, one_line
from e2e_linker.serve.limits import BodyLimits
from e2e_linker.serve.page import form_fields, page
from e2e_linker.serve.schemas import (
    TEXT_ID_PREFIX,
    AnnotateRequest,
    AnnotateResponse,
    ErrorResponse,
    NormalizeItem,
    NormalizeResponse,
)

#: media types that ask ``/annotate`` for JSON Lines: the bytes of ``linker annotate
#: --format jsonl``
JSONL_TYPES = (NDJSON, "application/jsonl", "application/x-jsonlines")
NORMALIZE_ITEMS = TypeAdapter(list[NormalizeItem])
#: the error answers documented for every route
ERRORS = {status: {"model": ErrorResponse}
          for status in (400, 408, 413, 415, 422, 500, 503, 504)}
#: the status of a request whose client went away (nobody reads it; for the access log)
CLIENT_GONE = 499
TEXT_PLAIN_ID = f"{TEXT_ID_PREFIX}-1"


def package_version() -> str:
    """The installed e2e-linker version."""
    try:
        return version("e2e-linker")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def load_linker(settings: AnnotateSettings, threads: int | None = None) -> Any:
    """The linker ``linker annotate`` would load with these settings (a damaged model
    directory is one line naming it), in the thread that will run it, with ``threads`` torch
    threads (None: torch's default).

    Why a thread count of its own: the server's calls are small (a few sentences), and on a
    CPU whose cores are also busy (its clients, other jobs) the intra-op threads of such a
    call spend more time waiting for each other than computing (docs/decisions/0036-serve-one-thread.md)."""
    import torch

    from e2e_linker.api import Linker
    from e2e_linker.jobs.model_guard import loading_model

    if threads is not None:
        torch.set_num_threads(threads)
    with loading_model(settings.model_dir):
        return Linker.load(settings=settings)


def validation_message(exc: ValidationError, fields: Sequence[str] = ()) -> tuple[int, str]:
    """A pydantic error as ``(status, one line)``: 400 for a body that is not JSON, 422 for
    JSON of the wrong shape (the first problem, with where it is; an unknown field with the
    ``fields`` the body takes)."""
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return 400, f"malformed JSON: {error.get('ctx', {}).get('error', error['msg'])}"
    where = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden" and error["loc"][:1] in (("documents",),
                                                                   ("passages",)):
        message += "; a BioC JSON body goes with Content-Type application/bioc+json"
    elif error["type"] == "extra_forbidden" and fields and len(error["loc"]) == 1:
        message += f"; the fields are {', '.join(fields)}"
    return 422, f"{where}: {message}" if where else message


def parse_json(adapter: Callable[[bytes], Any], body: bytes, fields: Sequence[str] = ()
               ) -> Any:
    """``adapter(body)`` (a pydantic JSON validator) with its errors as one line (naming
    ``fields``, those of the body's object, when it has another)."""
    try:
        return adapter(body)
    except ValidationError as exc:
        status, message = validation_message(exc, fields)
        raise RequestError(status, message) from None


#: the query parameters ``POST /annotate`` takes (another one is refused, not ignored)
ANNOTATE_QUERY = ("explain", "format", "replace", "types")


def check_query(request: Request, accepted: Sequence[str]) -> None:
    """Refuse a query parameter the route does not take: ``/annotate?type=Gene`` used to
    be answered as if it were not there."""
    unknown = sorted(set(request.query_params) - set(accepted))
    if unknown:
        raise RequestError(422, f"unknown query parameter{'s' if len(unknown) > 1 else ''} "
                                f"{', '.join(unknown)}; {request.url.path} takes "
                                f"{', '.join(accepted)}")


def chosen_types(batcher: Batcher, asked: Sequence[str] | None) -> frozenset[str] | None:
    """The mention types a request asks for (None: every type), each one the service
    writes (its ``--types``, else the model's), or a 422 naming those."""
    if not asked:
        return None
    if batcher.state != READY:
        raise batcher.not_ready()
    annotator = batcher.linker.annotator
    offered = list(annotator.settings.types or annotator.model.config.types)
    unknown = [t for t in asked if t not in offered]
    if unknown:
        raise RequestError(422, f"types: {', '.join(unknown)} is not a type this service "
                                f"writes; use {', '.join(offered)}")
    return frozenset(asked)


def keep_types(docs: Sequence[Document], wanted: frozenset[str] | None) -> Sequence[Document]:
    """``docs`` with the linker's mentions of other types than ``wanted`` left out (the
    input's own annotations stay); all of them when ``wanted`` is None."""
    if wanted is not None:
        for doc in docs:
            for passage in doc.passages:
                passage.annotations = [a for a in passage.annotations
                                       if a.type in wanted
                                       or a.infons.get("annotator") != ANNOTATOR]
    return docs


def mentions_body(docs: Sequence[Document], jsonl: bool) -> bytes:
    """The annotated texts' mentions: ``{"documents": [{"id", "mentions"}]}``, or with
    ``jsonl`` the JSON Lines ``linker annotate --format jsonl`` writes, byte for byte (the
    linker filled each annotation's record: :mod:`data_tools.formats.records`)."""
    if jsonl:
        return "".join(json.dumps(record, ensure_ascii=False) + "\n"
                       for doc in docs for record in mention_records(doc)).encode()
    content = {"documents": [{"id": doc.id, "mentions": mention_records(doc)} for doc in docs]}
    return json.dumps(content, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode()


def wants_jsonl(request: Request, output: str | None) -> bool:
    """Whether the client asked for JSON Lines (``?format=jsonl`` or the Accept header)."""
    if output is not None:
        if output not in ("json", "jsonl"):
            raise RequestError(422, f"format={output}: use json or jsonl")
        return output == "jsonl"
    accept = request.headers.get("accept", "").lower()
    return any(kind in accept for kind in JSONL_TYPES)


async def client_gone(request: Request) -> None:
    """Return when the client of ``request`` (whose body has been read) disconnects."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def run_job(batcher: Batcher, job: Job, request: Request, timeout_s: float) -> Any:
    """Queue ``job`` and wait for it, at most ``timeout_s`` seconds (504 after) and only
    while the client is connected: either way the job is cancelled, so the worker drops
    its work. The annotator's own errors become one-line answers (422 for the input's
    fault, 500 otherwise)."""
    future = batcher.submit(job)
    answer = asyncio.wrap_future(future)
    gone = asyncio.ensure_future(client_gone(request))
    try:
        await asyncio.wait((answer, gone), timeout=timeout_s,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not answer.done():
            answer.cancel()
            future.cancel()  # the worker drops its queued pieces, and its call if alone
    if answer.cancelled():
        if gone.done() and not gone.cancelled():
            raise RequestError(CLIENT_GONE, "the client went away")
        raise RequestError(504, f"the request did not finish within {timeout_s:g} s (linker "
                                "serve --request-timeout); its work was dropped")
    try:
        return answer.result()
    except RequestError:
        raise
    except EXPECTED_ERRORS as exc:
        raise RequestError(422, str(exc) or type(exc).__name__) from None
    except Exception as exc:  # noqa: BLE001 - the request fails, the server goes on
        raise RequestError(500, f"internal error: {type(exc).__name__}: {exc}") from None


class ServiceInfo:
    """What ``GET /info`` says; the KB's content hash is computed once, on first ask."""

    def __init__(self, config: ServeConfig, batcher: Batcher):
        self.config = config
        self.batcher = batcher
        self.lock = threading.Lock()
        self.kb_hash: str | None = None

    def hash_kb(self) -> str | None:
        """The KB's content hash (the one model manifests record)."""
        with self.lock:
            kb = self.batcher.linker.kb
            if self.kb_hash is None and kb is not None:
                self.kb_hash = kb.content_hash()
            return self.kb_hash

    def describe(self) -> dict:
        """The service: version, limits, state and, once loaded, model, KB and settings."""
        from e2e_linker.defaults import DEFAULT_MODEL_DIR

        config, batcher = self.config, self.batcher
        out: dict = {"version": package_version(), "state": batcher.state,
                     "limits": {"max_batch": config.max_batch,
                                "max_wait_ms": config.max_wait_ms,
                                "max_request_bytes": config.max_request_bytes,
                                "max_queue": config.max_queue,
                                "read_timeout_s": config.read_timeout_s,
                                "max_request_chars": config.max_request_chars,
                                "request_timeout_s": config.request_timeout_s,
                                "max_batch_chars": config.max_batch_chars,
                                "header_timeout_s": config.header_timeout_s,
                                "allowed_hosts": sorted(names) if (names := host_names(
                                    config.host, config.allowed_hosts)) else "any"},
                     "threads": config.threads}
        if batcher.state != READY:
            if batcher.error:
                out["error"] = batcher.error
            return out
        annotator = batcher.linker.annotator
        settings = asdict(annotator.settings)
        settings.pop("cache_dir")
        model_dir = config.settings.model_dir
        types = list(annotator.settings.types or annotator.model.config.types)
        normalizer = batcher.normalizer_future
        out.update(
            model=str(Path(model_dir).resolve() if model_dir else DEFAULT_MODEL_DIR),
            kb=config.settings.kb or "the model's",
            kb_concepts=len(batcher.linker.kb) if batcher.linker.kb is not None else None,
            kb_hash=self.hash_kb(), types=types, settings=settings,
            load_seconds=round(batcher.load_seconds or 0.0, 2),
            batching=batcher.stats.as_dict() | {"queued_documents": batcher.pending},
            normalizer="not loaded" if normalizer is None else
            "loading" if not normalizer.done() else
            "failed" if normalizer.exception() else "ready")
        return out


def create_app(config: ServeConfig, load: Callable[[], Any] | None = None,
               on_ready: Callable[[], None] | None = None,
               on_failed: Callable[[BaseException], None] | None = None) -> FastAPI:
    """The application: a :class:`Batcher` whose worker runs ``load`` (default: the linker
    ``config.settings`` name) when the server starts."""
    batcher = Batcher(load or partial(load_linker, config.settings, config.threads),
                      config.max_batch,
                      config.max_wait_ms / 1000, config.max_queue, on_ready, on_failed,
                      max_chars=config.max_request_chars,
                      max_batch_chars=config.max_batch_chars)
    info = ServiceInfo(config, batcher)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        try:
            yield
        finally:  # the server has finished its requests in flight; finish the queue
            await run_in_threadpool(batcher.close, 60.0)

    app = FastAPI(title="e2e_linker", version=package_version(), lifespan=lifespan,
                  docs_url=None, redoc_url=None,
                  description="End-to-end biomedical entity linking as a local service.")
    app.state.batcher = batcher
    app.add_middleware(BodyLimits, max_bytes=config.max_request_bytes,
                       timeout_s=config.read_timeout_s)
    # added last, so outermost: a request for another host is refused before its body
    app.add_middleware(HostCheck, names=host_names(config.host, config.allowed_hosts))

    async def run(job: Job, request: Request) -> Any:
        return await run_job(batcher, job, request, config.request_timeout_s)

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status,
                            headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": one_line(str(exc.detail))}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error.get("loc", ()))
        return JSONResponse({"error": one_line(f"{where}: {error.get('msg', 'invalid')}")},
                            status_code=422)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": one_line(f"internal error: {type(exc).__name__}: "
                                               f"{exc}")}, status_code=500)

    @app.get("/health", summary="Alive")
    async def health() -> dict:
        """200 while the process serves requests (the model may still be loading)."""
        return {"status": "ok"}

    @app.get("/ready", summary="Model and KB loaded",
             responses={503: {"description": "still loading (or failed to)"}})
    async def ready() -> JSONResponse:
        """200 once the model and KB are loaded and requests are annotated; 503 before."""
        if batcher.state == READY and not batcher.closing:
            return JSONResponse({"ready": True})
        refusal = batcher.not_ready()
        return JSONResponse({"ready": False, "state": batcher.state, "error": refusal.message},
                            status_code=503, headers=refusal.headers)

    @app.get("/info", summary="Model, KB, types, settings, version")
    async def service_info() -> dict:
        """The service's model, KB (and its content hash), types, settings, limits, batching
        figures and version."""
        return await run_in_threadpool(info.describe)

    @app.post("/annotate", summary="Find and link mentions", response_model=None,
              responses={200: {"model": AnnotateResponse, "content": {
                  NDJSON: {}, **{kind: {} for kind in DOCUMENT_TYPES}}}, **ERRORS},
              openapi_extra={"requestBody": {"required": True, "content": {
                  JSON: {"schema": AnnotateRequest.model_json_schema()},
                  TEXT: {"schema": {"type": "string"}},
                  **{kind: {"schema": {"type": "string"}} for kind in DOCUMENT_TYPES}}}})
    async def annotate(request: Request, explain: bool = False, replace: bool = False,
                       output: str | None = Query(None, alias="format"),
                       types: str | None = Query(None, description="write only mentions "
                                                 "of these types, comma-separated")
                       ) -> Response:
        """JSON ``{"text": ...}`` or ``{"texts": [...]}`` (or a ``text/plain`` body) → the
        mentions of each text, as ``linker annotate --format jsonl`` writes them (JSON Lines
        with ``Accept: application/x-ndjson`` or ``?format=jsonl``). A BioC XML, BioC JSON or
        PubTator body (by Content-Type) → the same format with the annotations added
        (``?replace=true`` drops the old ones). ``explain`` (in the JSON or the query) adds
        each mention's deciding step and top candidates; ``types`` (in the JSON or the query,
        comma-separated there) keeps only mentions of those types. An unknown query parameter,
        JSON field or type is refused (422) with the accepted names."""
        check_query(request, ANNOTATE_QUERY)
        asked = type_list(types) if types is not None else None
        body = await request.body()
        kind = media_type(request.headers.get("content-type"), body)
        fmt = document_format(kind)
        if fmt is not None:
            wanted = chosen_types(batcher, asked)
            docs, collection = await run_in_threadpool(read_body, body, fmt,
                                                       config.max_queue)
            done = keep_types(await run(Job(ANNOTATE, docs, explain, replace), request),
                              wanted)
            out = await run_in_threadpool(write_body, done, fmt, collection)
            return Response(out, media_type=kind)
        if kind == JSON:
            req = await run_in_threadpool(parse_json, AnnotateRequest.model_validate_json,
                                          body, tuple(AnnotateRequest.model_fields))
            items, explain = req.items(), explain or req.explain
            if req.types is not None:
                if asked is not None:
                    raise RequestError(422, "types: give them in the query or the JSON, "
                                            "not both")
                asked = req.types
        elif kind == TEXT:
            items = [(TEXT_PLAIN_ID, await run_in_threadpool(decode_text, body))]
        else:
            raise unsupported(kind)
        jsonl = wants_jsonl(request, output)
        wanted = chosen_types(batcher, asked)
        docs = text_documents(items)
        if not docs:  # {"texts": []}: nothing to wait for
            return Response(b"" if jsonl else b'{"documents":[]}',
                            media_type=NDJSON if jsonl else JSON)
        done = keep_types(await run(Job(ANNOTATE, docs, explain), request), wanted)
        out = await run_in_threadpool(mentions_body, done, jsonl)
        return Response(out, media_type=NDJSON if jsonl else JSON)

    @app.post("/normalize", summary="Link mentions you already have", response_model=None,
              responses={200: {"model": NormalizeResponse}, **ERRORS},
              openapi_extra={"requestBody": {"required": True, "content": {JSON: {
                  "schema": {"type": "array", "items": NormalizeItem.model_json_schema()}}}}})
    async def normalize(request: Request) -> JSONResponse:
        """``[{"text": ..., "type": ..., "species": ...}, ...]`` → each mention's concept,
        as :meth:`Linker.normalize <e2e_linker.api.Linker.normalize>` links it (the
        normalizer is loaded on the first call): a gene by its names, of the item's
        ``species`` first (an NCBI Taxonomy ID or a name; default human); no match is
        ``"concept_id": null``. IDs are namespaced; a gene carries ``species`` and
        ``species_name``; every answer its ``confidence`` (:meth:`Linker.normalize
        <e2e_linker.api.Linker.normalize>` says what it estimates)."""
        body = await request.body()
        kind = media_type(request.headers.get("content-type"), body)
        if kind != JSON:
            raise RequestError(415, f"Content-Type {kind or '(none)'} is not supported; send "
                                    f"{JSON}")
        items = await run_in_threadpool(parse_json, NORMALIZE_ITEMS.validate_json, body)
        if not items:
            return JSONResponse({"mentions": []})
        if batcher.state != READY:
            raise batcher.not_ready()
        try:
            await asyncio.wrap_future(batcher.normalizer_ready())
        except Exception as exc:  # noqa: BLE001 - this request fails; the next one retries
            raise RequestError(503, f"the normalizer failed to load: {exc}") from None
        found = await run(Job(NORMALIZE, [(i.text, i.type, i.species) for i in items]),
                          request)
        return JSONResponse({"mentions": [
            {"text": m.text, "type": m.type, "concept_id": m.concept_id,
             "concept_name": m.concept_name, "species": m.species,
             "species_name": m.species_name, "link_score": m.link_score,
             "confidence": m.confidence} for m in found]})

    async def page_answer(request: Request, text: str, explain: bool) -> HTMLResponse:
        name_of = partial(concept_name_of, batcher) if batcher.state == READY else None
        if not text.strip():
            return HTMLResponse(page([], name_of, text, explain))
        try:
            [doc] = await run(Job(ANNOTATE, text_documents([(TEXT_PLAIN_ID, text)]),
                                  explain), request)
        except RequestError as exc:
            return HTMLResponse(page([], name_of, text, explain, exc.message),
                                status_code=exc.status, headers=exc.headers)
        return HTMLResponse(await run_in_threadpool(page, [doc], name_of, text, explain))

    @app.get("/", response_class=HTMLResponse, summary="The paste-text page")
    async def home(request: Request, text: str = "", explain: bool = False) -> HTMLResponse:
        """A page to paste text into; with ``?text=...``, its mentions highlighted."""
        return await page_answer(request, text, explain)

    @app.post("/", response_class=HTMLResponse, include_in_schema=False)
    async def home_form(request: Request) -> HTMLResponse:
        text, explain = form_fields(await request.body())
        return await page_answer(request, text, explain)

    return app


def concept_name_of(batcher: Batcher, concept_id: str) -> str | None:
    """The preferred name of a concept of the served KB."""
    from e2e_linker.api import concept_name_in

    return concept_name_in(batcher.linker.kb, concept_id)


def app_from_environment() -> FastAPI:
    """The application of one ``--workers N`` process, from the options the command put in
    the environment (``uvicorn --factory``). A worker whose model fails to load asks the
    supervising process to stop, rather than being restarted into the same failure."""
    import os
    import signal
    import sys

    from e2e_linker.serve.config import CONFIG_ENV

    def failed(exc: BaseException) -> None:
        print(f"error: {one_line(str(exc))}", file=sys.stderr, flush=True)
        os.kill(os.getppid(), signal.SIGTERM)

    return create_app(ServeConfig.from_json(os.environ[CONFIG_ENV]), on_failed=failed)
