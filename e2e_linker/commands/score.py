"""`linker score GOLD PRED...`: micro P/R/F1 with neleval's semantics (see e2e_linker.scoring)."""

from __future__ import annotations

import json

import click


@click.command("score")
@click.argument("gold", type=click.Path(exists=True, dir_okay=True))
@click.argument("pred", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True))
@click.option("--strict", "mode", flag_value="strict", default=True,
              help="Exact span and concept (neleval strong_all_match). Default.")
@click.option("--partial", "mode", flag_value="partial",
              help="Overlapping span and concept (neleval overlap-maxmax::span+kbid).")
@click.option("--mentions", "mode", flag_value="mentions",
              help="Exact span only (neleval strong_mention_match).")
@click.option("--accuracy", "mode", flag_value="accuracy",
              help="Acc@1 of a normalization run on gold spans.")
@click.option("--by-type", is_flag=True, help="Also score each annotation type separately.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of a table.")
@click.option("--gold-format", default=None, help="Format of GOLD (default: detected).")
@click.option("--pred-format", default=None, help="Format of PRED (default: detected).")
@click.option("--kb", default=None,
              help="KB spec (e.g. medic, bc5cdr): map alternative concept IDs to the KB's "
                   "primary IDs on both sides before comparing. Default: compare IDs as "
                   "written, as neleval does.")
def command(gold: str, pred: tuple[str, ...], mode: str, by_type: bool, as_json: bool,
            gold_format: str | None, pred_format: str | None, kb: str | None) -> None:
    """Score PRED against GOLD. Several PRED files (e.g. DNorm + tmChem) are merged by document.

    Why ``--kb``: gold corpora cite concepts by IDs that a KB lists as alternatives (NCBI
    disease writes OMIM IDs that MEDIC files under a MeSH primary ID), while a linker answers
    with primary IDs; compared as written such an answer counts as wrong.
    """
    from data_tools.formats.source import CorpusSource
    from e2e_linker.scoring import merge_predictions, score

    resolve = None
    if kb is not None:
        from e2e_linker.collective.model_kb import assemble_kb

        resolve = assemble_kb(kb).resolve

    # duplicate IDs inside one file are an error (they would be counted twice); the same ID
    # in several PRED files is the point of merging (DNorm + tmChem)
    gold_docs = list(CorpusSource([gold], gold_format).documents())
    pred_docs = merge_predictions(*(CorpusSource([p], pred_format).documents() for p in pred))
    report = score(gold_docs, pred_docs, mode=mode, by_type=by_type, resolve=resolve)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(report.format_table())
