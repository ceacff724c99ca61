"""The ``linker`` command line: a thin layer that parses options and calls the library.

Every command lives in its own module under :mod:`e2e_linker.commands`. Errors caused by the
input or by the user (malformed files, missing paths, bad options) are printed as one line on
stderr with exit code 2, never as a traceback; set ``E2E_LINKER_DEBUG=1`` to see the traceback.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

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


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (torch import is slow)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return importlib.import_module(f"e2e_linker.commands.{module}").command

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
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
def main() -> None:
    """End-to-end biomedical entity linking: annotate, normalize, convert and score corpora."""
    # before torch starts its threads: large buffers go back to the OS when freed, so a corpus
    # run's memory follows the batch, not the number of documents (e2e_linker/jobs/allocator.py)
    bound_heap()
