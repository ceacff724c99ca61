"""`linker convert IN OUT`: lossless conversion between PubTator, BioC XML and BioC JSON."""

from __future__ import annotations

import click


@click.command("convert")
@click.argument("source", type=click.Path(exists=True, dir_okay=True))
@click.argument("target", type=click.Path(dir_okay=False, writable=True))
@click.option("--from", "src_format", default=None, help="pubtator | bioc | biocjson (default: detected)")
@click.option("--to", "dst_format", default=None, help="pubtator | bioc | biocjson (default: from OUT's extension)")
def command(source: str, target: str, src_format: str | None, dst_format: str | None) -> None:
    """Convert SOURCE to TARGET; every document, passage, infon, annotation and relation is kept."""
    from data_tools.formats import read_collection_info, read_documents, write_documents

    info = read_collection_info(source, src_format)
    count = write_documents(read_documents(source, src_format), target, dst_format,
                            collection_info=info)
    click.echo(f"wrote {count} documents to {target}", err=True)
