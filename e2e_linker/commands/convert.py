"""`linker convert IN... OUT`: lossless conversion between PubTator, BioC XML and BioC JSON."""

from __future__ import annotations

import click


@click.command("convert")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True))
@click.argument("target", type=click.Path(writable=True))  # a directory: the guard's one line
@click.option("--from", "src_format", default=None, help="pubtator | bioc | biocjson (default: detected)")
@click.option("--to", "dst_format", default=None, help="pubtator | bioc | biocjson (default: from OUT's extension)")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise",
              show_default=True,
              help="raise: stop at the first bad document (one-line error, exit 2, no output); "
                   "skip: leave bad documents out and report each of them.")
def command(sources: tuple[str, ...], target: str, src_format: str | None,
            dst_format: str | None, on_error: str) -> None:
    """Convert SOURCES (files or directories) to TARGET; every document, passage, infon,
    annotation and relation is kept."""
    from e2e_linker.jobs.corpus_run import run_to_file
    from e2e_linker.jobs.output_checks import check_output_target

    check_output_target(sources, target, directory=False, label="TARGET")
    report = run_to_file(sources, target, None, out_format=dst_format, in_format=src_format,
                         on_error=on_error, progress=False)
    for line in report.lines(target):
        click.echo(line, err=True)
