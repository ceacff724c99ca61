"""`linker train-triplet CONFIG.yaml`: triplet-train a normalizer encoder (configs/triplet_*.yaml)."""

from __future__ import annotations

import click


@click.command("train-triplet")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("--output-dir", default=None, help="Override the config's output_dir.")
@click.option("--epochs", type=int, default=None, help="Override the config's epochs.")
@click.option("--max-steps", type=int, default=None, help="Stop after this many batches.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--num-threads", type=int, default=None, help="torch CPU threads.")
@click.option("--ontology-only", is_flag=True,
              help="Train:O: ignore the config's training corpora (KB names only).")
def command(config: str, output_dir: str | None, epochs: int | None, max_steps: int | None,
            device: str | None, num_threads: int | None, ontology_only: bool) -> None:
    """Train on the config's KB names (Train:O) and training mentions (Train:OD)."""
    from e2e_linker.training.triplet import TripletConfig, train_triplet

    cfg = TripletConfig.from_yaml(config)
    for key, value in (("output_dir", output_dir), ("epochs", epochs), ("max_steps", max_steps),
                       ("device", device), ("num_threads", num_threads)):
        if value is not None:
            setattr(cfg, key, value)
    if ontology_only:
        cfg.train = []
    summary = train_triplet(cfg)
    click.echo(f"{summary['steps']} steps, loss (mean of the first/last 20 batches) "
               f"{summary['first_loss']:.4f} -> {summary['last_loss']:.4f}; "
               f"model in {summary['output_dir']}", err=True)
