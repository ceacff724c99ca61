"""`linker export RUN_DIR OUT_DIR`: package a training run as a model directory to ship.

Weights are re-saved (fp16 with ``--half``, as the embedded default model is), and the KB
manifest is recomputed on this machine from the run's KB spec and mined-name corpora, so the
model's KB check passes wherever the same vocabulary files are installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

#: the run's training summary, copied into the export with the export's own record
SUMMARY_FILE = "training_summary.json"

@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path())
@click.option("--half/--no-half", default=True, show_default=True, help="Store weights as fp16.")
@click.option("--interpolate-with", type=click.Path(exists=True, file_okay=False), default=None,
              help="A model directory of the same architecture (typically the one the run "
                   "started from): the export is the point --run-share of the way from it to "
                   "the run, weight by weight.")
@click.option("--run-share", type=click.FloatRange(0.0, 1.0), default=1.0, show_default=True,
              help="With --interpolate-with: the run's share of every weight.")
@click.option("--kb", "kb_spec", default=None, metavar="SPEC",
              help="The KB the exported model links against (default: the run's training "
                   "config's kb), e.g. one that adds concepts of a name-only type.")
def command(run_dir: str, out_dir: str, half: bool, interpolate_with: str | None,
            run_share: float, kb_spec: str | None) -> None:
    """Copy the model in RUN_DIR to OUT_DIR with a fresh KB manifest (optionally interpolated
    with another model: --interpolate-with, --run-share)."""
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_kb import assemble_model_kb, save_model_kb
    from e2e_linker.jobs.output_checks import check_output_target

    # before the model loads: OUT_DIR is not RUN_DIR (its weights would be overwritten), nor
    # inside or around it, nor a file; it may hold an earlier export
    check_output_target([run_dir], out_dir, directory=True, room_for_inputs=False,
                        shards=False, label="OUT_DIR")
    run = Path(run_dir)
    model = CollectiveLinker.load(run)
    if interpolate_with is not None:
        from e2e_linker.training.warm_start import guideline_mismatch, interpolate

        start = CollectiveLinker.load(interpolate_with)
        mismatch = guideline_mismatch(model.config, start.config)
        if mismatch is not None:
            click.echo(f"warning: {mismatch}", err=True)
        mixed = interpolate(model, start, run_share)
        click.echo(f"interpolated: {run_share} of {run_dir}, {1 - run_share:g} of "
                   f"{interpolate_with} (type rows mixed: {', '.join(mixed)})", err=True)
    train_cfg = json.loads((run / "train_config.json").read_text())
    corpora = train_cfg.get("kb_corpus_names") or []
    spec = kb_spec or train_cfg["kb"]
    extra, kb = assemble_model_kb(spec, corpora)
    if kb_spec is not None:
        model.config.kb = kb_spec
    manifest = save_model_kb(out_dir, spec, extra, kb)
    manifest["corpus_names"] = corpora
    model.save(out_dir, kb_manifest=manifest, half=half)
    # the run's summary (an epoch kept by keep_epochs has it in the run folder above), with
    # how this export was made: a shipped model says where its weights came from
    summary_path = next((p for p in (run / SUMMARY_FILE, run.parent / SUMMARY_FILE)
                         if p.is_file()), None)
    summary = json.loads(summary_path.read_text()) if summary_path is not None else {}
    summary["export"] = {"run": str(run_dir), "interpolate_with": interpolate_with,
                         "run_share": run_share if interpolate_with is not None else 1.0,
                         "kb": spec, "half": half}
    (Path(out_dir) / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    size = sum(p.stat().st_size for p in Path(out_dir).rglob("*") if p.is_file())
    click.echo(f"exported to {out_dir} ({size / 2**20:.1f} MiB, KB {manifest['concepts']} "
               f"concepts / {manifest['names']} names)", err=True)
