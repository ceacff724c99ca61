"""`linker export RUN_DIR OUT_DIR`: package a training run as a model directory to ship.

Weights are re-saved (fp16 with ``--half``, as the embedded default model is), and the KB
manifest is recomputed on this machine from the run's KB spec and mined-name corpora, so the
model's KB check passes wherever the same vocabulary files are installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path())
@click.option("--half/--no-half", default=True, show_default=True, help="Store weights as fp16.")
def command(run_dir: str, out_dir: str, half: bool) -> None:
    """Copy the model in RUN_DIR to OUT_DIR with a fresh KB manifest."""
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_kb import assemble_kb, mined_names, save_model_kb
    from e2e_linker.jobs.output_checks import check_output_target

    # before the model loads: OUT_DIR is not RUN_DIR (its weights would be overwritten), nor
    # inside or around it, nor a file; it may hold an earlier export
    check_output_target([run_dir], out_dir, directory=True, room_for_inputs=False,
                        shards=False, label="OUT_DIR")
    run = Path(run_dir)
    model = CollectiveLinker.load(run)
    train_cfg = json.loads((run / "train_config.json").read_text())
    corpora = train_cfg.get("kb_corpus_names") or []
    extra = mined_names(corpora) if corpora else None
    kb = assemble_kb(train_cfg["kb"], extra)
    manifest = save_model_kb(out_dir, train_cfg["kb"], extra, kb)
    manifest["corpus_names"] = corpora
    model.save(out_dir, kb_manifest=manifest, half=half)
    for name in ("training_summary.json",):
        if (run / name).is_file():
            (Path(out_dir) / name).write_text((run / name).read_text())
    size = sum(p.stat().st_size for p in Path(out_dir).rglob("*") if p.is_file())
    click.echo(f"exported to {out_dir} ({size / 2**20:.1f} MiB, KB {manifest['concepts']} "
               f"concepts / {manifest['names']} names)", err=True)
