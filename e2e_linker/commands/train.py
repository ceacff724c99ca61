"""`linker train CONFIG.yaml`: train the collective dual encoder (see configs/bc5cdr.yaml).

Data-parallel with ``--num-processes N`` on one machine or under any launcher
(``accelerate launch -m e2e_linker train CONFIG.yaml``): see e2e_linker.training.collective.
"""

from __future__ import annotations

import click


@click.command("train")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("--output-dir", default=None, help="Override the config's output_dir.")
@click.option("--epochs", type=int, default=None, help="Override the config's epochs.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--max-train-docs", type=int, default=None, help="Train on the first N documents.")
@click.option("--max-dev-docs", type=int, default=None, help="Validate on the first N documents.")
@click.option("--num-processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Data-parallel processes on this machine (one GPU each, or CPU processes "
                   "with cores/N threads each); each batch is split between them.")
@click.option("--restart", is_flag=True,
              help="Discard the resumable state an interrupted run left in the output folder "
                   "and start over (by default the run continues from it).")
def command(config: str, output_dir: str | None, epochs: int | None, device: str | None,
            max_train_docs: int | None, max_dev_docs: int | None, num_processes: int,
            restart: bool) -> None:
    """Train on the config's corpora, validate on dev each epoch, keep the best checkpoint.

    The run saves its state every epoch and every checkpoint_minutes: run the same command
    again after an interruption and it continues where it stopped."""
    from e2e_linker.jobs import distributed

    if num_processes > 1 and not distributed.launched_distributed():
        args = distributed.render_argv(command, click.get_current_context().params,
                                       drop=("num_processes",))
        code = distributed.launch_local(["train", *args], num_processes)
        if code:
            raise SystemExit(code)  # the failing process has printed why
        return
    from e2e_linker.training.collective import CollectiveTrainer
    from e2e_linker.training.config import TrainConfig

    cfg = TrainConfig.from_yaml(config)
    for key, value in (("output_dir", output_dir), ("epochs", epochs), ("device", device),
                       ("max_train_docs", max_train_docs), ("max_dev_docs", max_dev_docs)):
        if value is not None:
            setattr(cfg, key, value)
    trainer = CollectiveTrainer(cfg, resume=not restart)
    summary = trainer.train()
    trainer.world.leave()
    if trainer.world.is_main:
        click.echo(f"best: {summary['best']}")
