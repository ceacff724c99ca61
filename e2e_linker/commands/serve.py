"""``linker serve``: the linker as a local web service (:mod:`e2e_linker.serve`).

Why a service: ``linker annotate`` pays the model's start-up (about 20 s) on every call, so a
notebook, a curation tool or a pipeline in another language cannot use it interactively. The
server loads once and answers ``POST /annotate``, ``POST /normalize``, ``GET /health``,
``/ready``, ``/info`` and a paste-text page at ``/`` (docs/serving.md). It listens on
127.0.0.1 unless told otherwise: it has no authentication. Its port is bound before the
model loads, so a port in use is one line and exit code 2 at once.
"""

from __future__ import annotations

import click

from e2e_linker.kb_search.backends import SEARCH_KINDS
from e2e_linker.serve.config import (
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_BATCH_CHARS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_REQUEST_CHARS,
    DEFAULT_REQUEST_TIMEOUT_S,
    LOOPBACK,
)


@click.command("serve")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory (default: the embedded default model).")
@click.option("--kb", default=None, help="KB spec to link against (default: the model's).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but 127.0.0.1 exposes the service, which "
                   "has no authentication, to the network.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--max-batch", type=click.IntRange(min=1), default=32, show_default=True,
              help="Documents annotated in one call at most.")
@click.option("--max-wait-ms", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="How long a request waits for others to share its batch.")
@click.option("--max-request-bytes", type=click.IntRange(min=1),
              default=DEFAULT_MAX_REQUEST_BYTES, show_default=True,
              help="Largest request body (413 above; checked while reading).")
@click.option("--max-queue", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Documents waiting for the model at most (503 with Retry-After above).")
@click.option("--read-timeout", "read_timeout_s", type=click.FloatRange(min=0.001),
              default=60.0, show_default=True,
              help="Seconds a client may take to send its request body (408 after).")
@click.option("--max-request-chars", type=click.IntRange(min=1),
              default=DEFAULT_MAX_REQUEST_CHARS, show_default=True,
              help="Characters of text one request may hold, all its documents together "
                   "(413 above).")
@click.option("--request-timeout", "request_timeout_s", type=click.FloatRange(min=0.001),
              default=DEFAULT_REQUEST_TIMEOUT_S, show_default=True,
              help="Seconds a request may wait for and use the model, once its body "
                   "has been read (504 after; its remaining work is dropped).")
@click.option("--max-batch-chars", type=click.IntRange(min=1),
              default=DEFAULT_MAX_BATCH_CHARS, show_default=True,
              help="Characters annotated in one call at most: larger requests are cut into "
                   "pieces that take turns with other requests (a longer document is a call "
                   "of its own).")
@click.option("--header-timeout", "header_timeout_s", type=click.FloatRange(min=0.001),
              default=DEFAULT_HEADER_TIMEOUT_S, show_default=True,
              help="Seconds a connection may take to send its request headers, and may stay "
                   "idle between requests (closed after).")
@click.option("--allowed-hosts", default=None,
              help="Host names the Host header may give, comma-separated ('*': any; 400 "
                   "otherwise). Default: localhost, 127.0.0.1 and [::1] when listening on a "
                   "loopback address, any otherwise.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Server processes, each with its own copy of the model (memory × N).")
@click.option("--threads", type=click.IntRange(min=0), default=1, show_default=True,
              help="Torch threads of the model (0: one a core). Small calls on a busy CPU "
                   "are faster on one (docs/serving.md).")
@click.option("--threshold", type=float, default=None, help="Mention threshold γ (default: tuned).")
@click.option("--types", default=None,
              help="Answer only mentions of these types, comma-separated (default: all).")
@click.option("--pipeline", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A pipeline declaration (TOML) instead of the model's pipeline.toml.")
@click.option("--disable", default=None,
              help="Steps to leave out, comma-separated (`linker pipeline show` lists them).")
@click.option("--set", "overrides", multiple=True, metavar="STEP.PARAM=VALUE",
              help="Set a step's parameter (repeatable), as `linker annotate --set`.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--cache-dir", default=None, help="Where KB vectors are cached.")
@click.option("--index", "index_kind", type=click.Choice(SEARCH_KINDS), default="auto",
              show_default=True, help="KB search backend, as for linker annotate.")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
              help="Chunks per encoder forward, as for linker annotate (chunks are padded to "
                   "a multiple of 16 tokens and batched by padded length, so an answer never "
                   "depends on which requests shared its batch).")
@click.option("--normalizer-model", default=None,
              help="Model POST /normalize loads on its first call (default: the embedded "
                   "normalizer).")
@click.option("--access-log", is_flag=True, help="Log every request on stderr.")
def command(host: str, port: int, max_batch: int, max_wait_ms: float, max_request_bytes: int,
            max_queue: int, read_timeout_s: float, max_request_chars: int,
            request_timeout_s: float, max_batch_chars: int, header_timeout_s: float,
            allowed_hosts: str | None, workers: int, threads: int, access_log: bool,
            **options) -> None:
    """Serve the linker over HTTP: POST /annotate, POST /normalize, GET /health, /ready,
    /info, and a page at / to paste text into."""
    import os

    import uvicorn

    from e2e_linker.collective.settings import AnnotateSettings
    from e2e_linker.errors import UserError
    from e2e_linker.serve.config import CONFIG_ENV, ServeConfig
    from e2e_linker.serve.connections import listening_socket, uvicorn_options

    try:
        config = ServeConfig(host=host, port=port, max_batch=max_batch,
                             max_wait_ms=max_wait_ms, max_request_bytes=max_request_bytes,
                             max_queue=max_queue, read_timeout_s=read_timeout_s,
                             max_request_chars=max_request_chars,
                             request_timeout_s=request_timeout_s,
                             max_batch_chars=max_batch_chars,
                             header_timeout_s=header_timeout_s,
                             allowed_hosts=None if allowed_hosts is None else tuple(
                                 allowed_hosts.split(",")),
                             workers=workers, threads=threads or None,
                             settings=AnnotateSettings(**options))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if host not in LOOPBACK:
        click.echo(f"warning: listening on {host}: anyone who can reach this port can use the "
                   "service (it has no authentication)", err=True)
    sock = listening_socket(host, port)  # before anything loads: a port in use ends it here
    where = f"http://{host if ':' not in host else f'[{host}]'}:{port}/"
    log_level = "info" if access_log else "warning"
    if workers > 1:
        sock.close()  # uvicorn binds it again for its worker processes
        os.environ[CONFIG_ENV] = config.to_json()
        click.echo(f"linker serve: {where} with {workers} processes (loading the model in "
                   "each; GET /ready says when one is ready)", err=True)
        uvicorn.run("e2e_linker.serve.app:app_from_environment", factory=True, host=host,
                    port=port, workers=workers, log_level=log_level, access_log=access_log,
                    **uvicorn_options(header_timeout_s))
        return
    serve_one_process(config, sock, where, log_level, access_log)


def serve_one_process(config, sock, where: str, log_level: str, access_log: bool) -> None:
    """Run the server in this process on the bound socket ``sock`` until SIGTERM or SIGINT
    (in-flight requests are finished); a model that fails to load stops it with that error
    as one line."""
    import uvicorn

    from e2e_linker.errors import EXPECTED_ERRORS, UserError
    from e2e_linker.serve.app import create_app
    from e2e_linker.serve.connections import uvicorn_options

    failures: list[BaseException] = []
    server: uvicorn.Server | None = None

    def ready() -> None:
        seconds = app.state.batcher.load_seconds or 0.0
        click.echo(f"linker serve: ready ({seconds:.1f} s to load)", err=True)

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        if server is not None:
            server.should_exit = True

    app = create_app(config, on_ready=ready, on_failed=failed)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                           log_level=log_level, access_log=access_log,
                                           lifespan="on",
                                           **uvicorn_options(config.header_timeout_s)))
    click.echo(f"linker serve: {where} (loading the model; GET /ready says when it is "
               "loaded)", err=True)
    server.run(sockets=[sock])
    if failures:
        exc = failures[0]
        if isinstance(exc, EXPECTED_ERRORS):
            raise exc
        raise UserError(f"the model failed to load: {type(exc).__name__}: {exc}") from exc
    if not server.started:
        raise UserError(f"could not listen on {config.host}:{config.port} (see above)")
