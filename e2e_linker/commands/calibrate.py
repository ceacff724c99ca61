"""`linker calibrate MODEL_DIR CORPUS...`: the activation statistics `linker annotate`
needs (`--precision int8`), measured on real documents and written into the model directory (see
e2e_linker.encoder.quantization)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("calibrate")
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("corpora", nargs=-1, required=True)
@click.option("--max-docs", type=int, default=50, show_default=True,
              help="Documents read from the corpora (in order); training documents, not test.")
def command(model_dir: str, corpora: tuple[str, ...], max_docs: int) -> None:
    """Measure MODEL_DIR's mention-encoder activations on CORPORA (files, directories or
    dataset splits such as bc5cdr:train) and store them for --precision int8."""
    from data_tools.registry import load_corpus
    from e2e_linker.collective.calibration import activation_absmax
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import STATS_FILE, save_stats
    from e2e_linker.errors import UserError
    from e2e_linker.jobs.output_checks import check_output_target

    # before the corpora are read and the model loads: the statistics file can be written
    check_output_target(corpora, Path(model_dir) / STATS_FILE, directory=False,
                        room_for_inputs=False, label="the statistics file")
    docs = []
    for spec in corpora:
        docs += load_corpus(spec, max_docs - len(docs))
        if len(docs) >= max_docs:
            break
    if not docs:
        raise UserError(f"no documents in {', '.join(corpora)}")
    model = CollectiveLinker.load(model_dir)
    path = save_stats(activation_absmax(model, docs), model_dir)
    click.echo(f"activation statistics of {len(docs)} documents -> {path}", err=True)
