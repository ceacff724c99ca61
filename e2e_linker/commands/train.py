"""`linker train CONFIG.yaml`: train the collective dual encoder (see configs/bc5cdr.yaml)."""

from __future__ import annotations

import click


@click.command("train")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("--output-dir", default=None, help="Override the config's output_dir.")
@click.option("--epochs", type=int, default=None, help="Override the config's epochs.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--max-train-docs", type=int, default=None, help="Train on the first N documents.")
@click.option("--max-dev-docs", type=int, default=None, help="Validate on the first N documents.")
def command(config: str, output_dir: str | None, epochs: int | None, device: str | None,
            max_train_docs: int | None, max_dev_docs: int | None) -> None:
    """Train on the config's corpora, validate on dev each epoch, keep the best checkpoint."""
    from e2e_linker.training.collective import train_collective
    from e2e_linker.training.config import TrainConfig

    cfg = TrainConfig.from_yaml(config)
    for key, value in (("output_dir", output_dir), ("epochs", epochs), ("device", device),
                       ("max_train_docs", max_train_docs), ("max_dev_docs", max_dev_docs)):
        if value is not None:
            setattr(cfg, key, value)
    summary = train_collective(cfg)
    click.echo(f"best: {summary['best']}")
