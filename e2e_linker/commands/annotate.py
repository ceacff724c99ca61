"""`linker annotate INPUT... -o OUTPUT`: find and link every mention in whole documents."""

from __future__ import annotations

import click

from e2e_linker.annotate import MODES


@click.command("annotate")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file (format from --format or its extension).")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory (default: the embedded default model).")
@click.option("--kb", default=None, help="KB spec to link against (default: the model's).")
@click.option("--format", "fmt", type=click.Choice(["bioc", "biocjson", "pubtator"]), default=None)
@click.option("--threshold", type=float, default=None, help="Mention threshold γ (default: tuned).")
@click.option("--batch-size", type=int, default=16, show_default=True, help="Chunks per batch.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--mode", type=click.Choice(MODES), default="collective", show_default=True,
              help="collective: one pass per chunk; per-mention: the paper's baseline.")
@click.option("--replace", is_flag=True, help="Drop the input's existing annotations.")
@click.option("--cache-dir", default=None, help="Where KB vectors are cached.")
def command(inputs: tuple[str, ...], output: str, model_dir: str | None, kb: str | None,
            fmt: str | None, threshold: float | None, batch_size: int, device: str | None,
            mode: str, replace: bool, cache_dir: str | None) -> None:
    """Annotate INPUT files (PubTator, BioC XML, BioC JSON; or directories of them)."""
    import itertools

    from tqdm.auto import tqdm

    from data_tools.formats import open_writer, read_collection_info, read_documents
    from e2e_linker.pipeline import load_annotator

    annotator = load_annotator(model_dir, kb=kb, device=device, threshold=threshold,
                               batch_size=batch_size, mode=mode, cache_dir=cache_dir)
    docs = itertools.chain.from_iterable(read_documents(p) for p in inputs)
    info = read_collection_info(inputs[0])
    with open_writer(output, fmt, collection_info=info) as writer:
        bar = tqdm(desc="annotating", unit="doc")
        for doc in annotator.annotate_stream(docs, replace=replace):
            writer.write(doc)
            bar.update(1)
        bar.close()
    stats = annotator.stats
    click.echo(f"annotated {stats['documents']} documents, {stats['mentions']} mentions "
               f"-> {output}", err=True)
