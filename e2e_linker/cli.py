"""The ``linker`` command line: a thin layer that parses options and calls the library.

Every command lives in its own module under :mod:`e2e_linker.commands`. Errors caused by the
input or by the user (malformed files, missing paths, bad options, a mistyped option or
command) are printed as one line on stderr (``error: ...``) with exit code 2, never as a
traceback or click's three-line usage message; set ``E2E_LINKER_DEBUG=1`` to see the
traceback. A successful run is silent on stderr unless someone watches it (a terminal) or
``linker -v`` asks for the progress and KB index lines (:mod:`e2e_linker.console`).
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from e2e_linker.console import verbose_output
from e2e_linker.errors import EXPECTED_ERRORS
from e2e_linker.jobs.allocator import bound_heap

#: (command name, module under e2e_linker.commands); imported lazily so `linker --help` is fast.
COMMANDS: dict[str, str] = {
    "score": "score",
    "convert": "convert",
    "train": "train",
    "annotate": "annotate",
    "calibrate": "calibrate",
    "export": "export",
    "export-normalizer": "export_normalizer",
    "normalize": "normalize",
    "train-triplet": "train_triplet",
    "merge": "merge",
    "kb": "kb",
    "view": "view",
    "serve": "serve",
    "pipeline": "pipeline",
}

#: what click (8.2 and later) raises to show a group's help when it is given no command; 8.1
#: shows it without an error
NO_ARGS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def usage_error_line(exc: click.ClickException) -> str:
    """A click error (unknown option or command, bad or missing value) as one line: click's
    message, lower-cased like the project's other errors, and where help is."""
    message = " ".join(exc.format_message().split())
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message = f"{message.rstrip('.')}; see `{ctx.command_path} -h`"
    return f"error: {message}"


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (torch import is slow), and
    reports every error as one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return importlib.import_module(f"e2e_linker.commands.{module}").command

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra) -> click.Context:
        try:  # `linker --bad-option`: the group's own options
            return super().make_context(info_name, args, parent, **extra)
        except NO_ARGS_HELP:  # plain `linker`: the help, as before
            raise
        except click.ClickException as exc:
            click.echo(usage_error_line(exc), err=True)
            sys.exit(exc.exit_code)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except NO_ARGS_HELP:  # `linker kb`: its help, as before
            raise
        except click.ClickException as exc:  # an unknown command, a command's bad options
            click.echo(usage_error_line(exc), err=True)
            sys.exit(exc.exit_code)
        except EXPECTED_ERRORS as exc:
            if os.environ.get("E2E_LINKER_DEBUG"):
                raise
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            click.echo(f"error: {message}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:  # output files are atomic: nothing half-written remains
            click.echo("error: interrupted", err=True)
            sys.exit(130)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="e2e-linker")
@click.option("-v", "--verbose", is_flag=True,
              help="Show progress bars and KB index lines even when stderr is not a terminal "
                   "(on a terminal the progress shows anyway).")
@click.pass_context
def main(ctx: click.Context, verbose: bool = False) -> None:
    """End-to-end biomedical entity linking: annotate, normalize, convert and score corpora."""
    if verbose:  # through the environment, so processes the command starts inherit it
        ctx.with_resource(verbose_output())
    # before torch starts its threads: large buffers go back to the OS when freed, so a corpus
    # run's memory follows the batch, not the number of documents (e2e_linker/jobs/allocator.py)
    bound_heap()
