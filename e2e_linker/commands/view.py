"""``linker view ANNOTATED -o page.html [--gold GOLD]``: one self-contained HTML page to look at
what the linker found (:mod:`e2e_linker.viewer.html_page`)."""

from __future__ import annotations

import click


@click.command("view")
@click.argument("annotated", type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")
@click.option("--gold", default=None, type=click.Path(exists=True),
              help="Gold annotations of the same documents: shown side by side, with false "
                   "positives and negatives marked (strict match, as `linker score`).")
@click.option("--kb", "kb_spec", default=None,
              help="KB for the concepts' preferred names (default: the default model's KB).")
@click.option("--no-names", is_flag=True, help="Do not load a KB; show concept IDs only.")
@click.option("--max-docs", type=click.IntRange(min=1), default=None,
              help="Show only the first N documents.")
def command(annotated: str, output: str, gold: str | None, kb_spec: str | None, no_names: bool,
            max_docs: int | None) -> None:
    """Write ANNOTATED (BioC XML/JSON, PubTator) as one HTML page, mentions highlighted."""
    from itertools import islice
    from pathlib import Path

    from data_tools.formats import read_documents
    from data_tools.formats.atomic import atomic_output
    from e2e_linker.api import concept_name_in
    from e2e_linker.viewer.html_page import render_page

    documents = list(islice(read_documents(annotated), max_docs))
    reference = list(read_documents(gold)) if gold else None
    name_of = None
    if not no_names:
        kb = load_names_kb(kb_spec)
        name_of = lambda cid: concept_name_in(kb, cid)  # noqa: E731
    page = render_page(documents, reference, name_of, title=Path(annotated).name)
    with atomic_output(output) as handle:
        handle.write(page)
    click.echo(f"wrote {len(documents)} documents -> {output}", err=True)


def load_names_kb(spec: str | None):
    """The KB whose preferred names label the concepts: ``spec``, else the default model's."""
    from e2e_linker.collective.model_dir import default_model_dir
    from e2e_linker.collective.model_kb import assemble_kb, load_model_kb

    return assemble_kb(spec) if spec else load_model_kb(default_model_dir())
