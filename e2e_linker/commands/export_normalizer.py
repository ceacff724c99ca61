"""`linker export-normalizer RUN_DIR OUT_DIR`: package a triplet run as a normalizer to ship.

The run's weights (a LoRA adapter, or a full encoder re-saved in fp16) are copied; the KB the
model will search is recorded with its content hash (it may be larger than the KB it was trained
on: the embedded default trains on MEDIC + MeSH descriptors and searches the full BC5CDR KB with
the supplementary chemical records); and the D pool (``mentions.tsv``) is rebuilt from the
given corpora, so the shipped model can use all labelled data at search time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click


@click.command("export-normalizer")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--kb", "kb_spec", default=None,
              help="KB spec the model searches by default (default: the run's).")
@click.option("--mentions", "corpora", multiple=True,
              help="Corpus (bc5cdr:train, ncbi_disease:dev, a path) for the D pool; repeatable. "
                   "Default: keep the run's mentions.tsv.")
@click.option("--search", "mode", default=None, help="Default search mode to record.")
def command(run_dir: str, out_dir: str, kb_spec: str | None, corpora: tuple[str, ...],
            mode: str | None) -> None:
    """Copy the normalizer in RUN_DIR to OUT_DIR with its KB and D pool."""
    import torch

    from data_tools.registry import load_corpus
    from e2e_linker.collective.model_kb import assemble_kb
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.concept_search import MODES
    from e2e_linker.lexical.text_forms import TextNormalizer
    from e2e_linker.normalizer.normalizer_dir import (
        ADAPTER_DIR,
        ENCODER_DIR,
        MENTIONS_FILE,
        NORMALIZER_FILE,
        ModelSettings,
        load_model,
        write_mentions,
    )
    from e2e_linker.normalizer.pools import training_triples

    run, out = Path(run_dir), Path(out_dir)
    if not (run / NORMALIZER_FILE).is_file():
        raise UserError(f"{run}: no {NORMALIZER_FILE}; not a train-triplet output")
    if mode is not None and mode not in MODES:
        raise UserError(f"--search {mode}: not one of {', '.join(MODES)}")
    settings = ModelSettings.from_dict(json.loads((run / NORMALIZER_FILE).read_text()))
    out.mkdir(parents=True, exist_ok=True)
    if (run / ADAPTER_DIR).is_dir():
        shutil.copytree(run / ADAPTER_DIR, out / ADAPTER_DIR, dirs_exist_ok=True)
    else:
        encoder, _ = load_model(run)
        encoder.model.to(torch.float16)
        encoder.save(out / ENCODER_DIR)
    spec = kb_spec or settings.kb
    if not spec:
        raise UserError("the run records no KB; pass --kb")
    kb = assemble_kb(spec)
    if spec != settings.kb:
        settings.extra["trained_kb"] = settings.kb
    settings.kb, settings.kb_hash = spec, kb.content_hash()
    if mode:
        settings.search = mode
    if corpora:
        docs = [d for corpus in corpora for d in load_corpus(corpus)]
        raw = TextNormalizer(lowercase=False, punctuation=False)
        n = write_mentions(out / MENTIONS_FILE, training_triples(docs, raw, kb, True))
        settings.extra.update(mentions=MENTIONS_FILE, mentions_from=list(corpora))
        click.echo(f"{n} distinct training mentions from {', '.join(corpora)}", err=True)
    elif (run / MENTIONS_FILE).is_file():
        shutil.copy2(run / MENTIONS_FILE, out / MENTIONS_FILE)
    (out / NORMALIZER_FILE).write_text(json.dumps(settings.to_dict(), indent=2) + "\n",
                                       encoding="utf-8")
    if (run / "train_history.json").is_file():
        summary = json.loads((run / "train_history.json").read_text())["summary"]
        (out / "training_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    click.echo(f"exported to {out} ({size / 2**20:.1f} MiB; KB {spec}: {len(kb)} concepts)",
               err=True)
