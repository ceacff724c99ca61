"""`linker merge OUTDIR -o FILE`: the shards of a finished `linker annotate -o OUTDIR` run as
one file, byte for byte what a one-file run would have written (see e2e_linker.jobs.corpus_run)."""

from __future__ import annotations

import click


@click.command("merge")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Output file (format from --format or its extension), outside DIRECTORY.")
@click.option("--format", "fmt", type=click.Choice(["bioc", "biocjson", "pubtator"]), default=None)
def command(directory: str, output: str, fmt: str | None) -> None:
    """Merge the shard directory DIRECTORY into one file, in input order."""
    from e2e_linker.jobs.corpus_run import merge_shards
    from e2e_linker.jobs.output_checks import check_output_target

    # never a shard (nor anything else) of the directory being merged, never a FIFO or device
    check_output_target([directory], output, directory=False)
    count = merge_shards(directory, output, fmt)
    click.echo(f"wrote {count} documents -> {output}", err=True)
