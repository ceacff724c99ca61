"""`linker convert IN... OUT`: conversion between PubTator, BioC XML and BioC JSON that says
what the target format cannot hold instead of dropping it (issue 47, case 5)."""

from __future__ import annotations

import click

#: the loss table ``--help`` shows (click keeps a paragraph that starts with \b as written)
LOSSES = """\b
What is kept, and what is lost where:
  PubTator -> BioC XML / BioC JSON, BioC JSON -> BioC XML and back: everything
    (a text holding a control character other than tab and line breaks cannot be
    written as XML: that document is refused).
  BioC -> PubTator: PubTator holds a title at offset 0, an abstract at
    len(title) + 1, mentions (span, text, type, concept IDs, composite parts) and
    document relations of a type and two or three arguments. A document with more
    (document, passage or annotation infons, mention scores, discontinuous
    mentions, a third passage or other offsets, passage relations, relations with
    BioC nodes, tabs or line breaks in its text) is refused, naming what would be
    lost, unless --lossy: then that is dropped, the passages after the title are
    laid out at their offsets as the abstract and tabs and line breaks become
    spaces. Annotation and relation ids are never kept (BioC numbers them anew).
    IDs PubTator cannot write (a document ID holding '|', a tab or a line break; a
    concept ID holding '|' or '+') are refused, with --lossy too."""


@click.command("convert", epilog=LOSSES)
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True))
@click.argument("target", type=click.Path(writable=True))  # a directory: the guard's one line
@click.option("--from", "src_format", default=None, help="pubtator | bioc | biocjson (default: detected)")
@click.option("--to", "dst_format", default=None, help="pubtator | bioc | biocjson (default: from OUT's extension)")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise",
              show_default=True,
              help="raise: stop at the first bad document (one-line error, exit 2, no output); "
                   "skip: leave bad documents out and report each of them.")
@click.option("--lossy", is_flag=True,
              help="To PubTator: drop what it cannot hold (listed below) instead of refusing "
                   "the document.")
def command(sources: tuple[str, ...], target: str, src_format: str | None,
            dst_format: str | None, on_error: str, lossy: bool) -> None:
    """Convert SOURCES (files or directories) to TARGET. Every document, passage, infon,
    annotation and relation is kept, or the document is refused (exit 2, nothing written;
    skipped and reported with --on-error skip): see below."""
    from e2e_linker.jobs.corpus_run import run_to_file
    from e2e_linker.jobs.output_checks import check_output_target

    check_output_target(sources, target, directory=False, label="TARGET")
    report = run_to_file(sources, target, None, out_format=dst_format, in_format=src_format,
                         on_error=on_error, progress=False, lossy=lossy)
    for line in report.lines(target):
        click.echo(line, err=True)
