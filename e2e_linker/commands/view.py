"""``linker view ANNOTATED -o page.html [--gold GOLD]``: one self-contained HTML page to look at
what the linker found (:mod:`e2e_linker.viewer.html_page`)."""

from __future__ import annotations

from collections.abc import Callable

import click


@click.command("view")
@click.argument("annotated", type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(),
              help="The HTML file to write (never ANNOTATED or GOLD).")
@click.option("--gold", default=None, type=click.Path(exists=True),
              help="Gold annotations of the same documents: shown side by side, with false "
                   "positives and negatives marked and counted as `linker score --strict` does.")
@click.option("--format", "fmt", default=None,
              help="Format of ANNOTATED: pubtator | bioc | biocjson (default: detected).")
@click.option("--gold-format", default=None, help="Format of GOLD (default: detected).")
@click.option("--kb", "kb_spec", default=None,
              help="KB for the concepts' preferred names (default: the model's, as annotate).")
@click.option("--no-names", is_flag=True, help="Do not load a KB; show concept IDs only.")
@click.option("--max-docs", type=click.IntRange(min=1), default=None,
              help="Show only the first N documents (and count only those).")
def command(annotated: str, output: str, gold: str | None, fmt: str | None,
            gold_format: str | None, kb_spec: str | None, no_names: bool,
            max_docs: int | None) -> None:
    """Write ANNOTATED (a file or directory: BioC XML/JSON, PubTator) as one HTML page, the
    mentions highlighted by type; hover a mention for its concepts."""
    from itertools import islice
    from pathlib import Path

    from data_tools.formats.atomic import atomic_output
    from data_tools.formats.source import CorpusSource
    from e2e_linker.jobs.output_checks import check_output_target
    from e2e_linker.viewer.html_page import render_page

    # before anything is read or a KB loads: -o is no input, no FIFO or device, writable
    check_output_target([annotated, *([gold] if gold else [])], output, directory=False)
    # read as `linker score` reads (duplicate document IDs are an error there too)
    documents = list(islice(CorpusSource([annotated], fmt).documents(), max_docs))
    reference = None
    if gold:
        reference = list(CorpusSource([gold], gold_format).documents())
        if max_docs is not None:  # the page and its counts cover the shown documents only
            shown = {d.id for d in documents}
            reference = [d for d in reference if d.id in shown]
    name_of = None if no_names else concept_names(kb_spec)
    page = render_page(documents, reference, name_of, title=Path(annotated).name)
    with atomic_output(output) as handle:
        handle.write(page)
    count = len(documents) + len({d.id for d in reference or ()} - {d.id for d in documents})
    click.echo(f"wrote {count} documents -> {output}", err=True)


def concept_names(spec: str | None) -> Callable[[str], str | None] | None:
    """A concept's preferred name from KB ``spec``, else from the default model's KB.

    Names are a convenience: when the default KB cannot be had (no shared data folder, a KB
    that differs from the model's), the page is written with IDs only and a warning. A KB the
    user named with ``--kb`` that fails is an error.
    """
    from functools import partial

    from e2e_linker.api import concept_name_in
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.collective.model_kb import assemble_kb, load_model_kb
    from e2e_linker.errors import UserError

    try:
        kb = assemble_kb(spec) if spec else load_model_kb(default_linker_dir())
    except UserError as exc:
        if spec:
            raise
        click.echo(f"warning: no concept names ({str(exc).splitlines()[0]}); showing IDs only",
                   err=True)
        return None
    return partial(concept_name_in, kb)
