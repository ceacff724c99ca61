"""``linker pipeline show|steps``: the steps ``linker annotate`` runs, as a model declares them.

``show`` prints the resolved pipeline of a model directory (its ``pipeline.toml``, or the one
its config implies), after the same ``--pipeline``, ``--disable`` and ``--set`` that annotate
takes, a line a step with its parameters and what it does (``--toml``: as a declaration file
to edit and pass back with ``--pipeline``). ``steps`` lists every registered step, declared or
not. No model weights are loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.group("pipeline")
def command() -> None:
    """Show the declared steps annotate runs after the model scores spans."""


@command.command("show")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory (default: the embedded default model).")
@click.option("--pipeline", "pipeline_file", default=None, metavar="NAME|FILE",
              help="A pipeline the model ships by name (bc5cdr: the BC5CDR guideline) or a "
                   "declaration (TOML) instead of the model's pipeline.toml.")
@click.option("--disable", default=None, help="Steps to leave out, comma-separated.")
@click.option("--set", "overrides", multiple=True, metavar="STEP.PARAM=VALUE",
              help="Set a step's parameter (repeatable); --set STEP adds a step with its "
                   "defaults.")
@click.option("--toml", "as_toml", is_flag=True,
              help="Print the resolved pipeline as a declaration file.")
def show(model_dir: str | None, pipeline_file: str | None, disable: str | None,
         overrides: tuple[str, ...], as_toml: bool) -> None:
    """Print the resolved order of steps with their parameters."""
    from e2e_linker.collective.model import LinkerConfig
    from e2e_linker.collective.model_dir import CONFIG_FILE, default_linker_dir
    from e2e_linker.collective.settings import AnnotateSettings
    from e2e_linker.errors import UserError

    directory = Path(model_dir) if model_dir else default_linker_dir()
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise UserError(f"{directory}: not a linker model directory (no {CONFIG_FILE})")
    config = LinkerConfig.from_dict(json.loads(config_path.read_text(encoding="utf-8")))
    settings = AnnotateSettings(pipeline=pipeline_file, disable=disable, overrides=overrides)
    pipeline = settings.resolved_pipeline(config, directory)
    click.echo(pipeline.to_toml() if as_toml else pipeline.describe(), nl=not as_toml)
    if config.guidelines and not as_toml:  # what a declaration's `guideline` may name
        click.echo(f"the model's annotation guidelines: {', '.join(config.guidelines)} "
                   f"(default {config.default_guideline})")


@command.command("steps")
def steps() -> None:
    """List every registered step (stage, name, parameters with defaults, what it does)."""
    from e2e_linker.pipeline.declaration import Pipeline

    click.echo(Pipeline.every_step().describe().replace(
        "pipeline from every registered step:", "registered steps, with their defaults:"))
