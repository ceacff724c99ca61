"""A complete tiny linker model directory (random 1-layer BERT + TSV KB) for CLI tests."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.synthetic import CHEMICALS, DISEASES
from tests.helpers.tiny import tiny_encoder_dir


def tiny_linker_dir(root: Path, threshold: float = 0.0) -> tuple[Path, Path]:
    """``(model directory, KB file)``; loads in about a second, annotates hundreds of
    documents per second, so CLI runs can be tested end to end on real corpora."""
    from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
    from e2e_linker.collective.model_kb import assemble_kb, save_model_kb

    root.mkdir(parents=True, exist_ok=True)
    kb_file = root / "kb.tsv"
    rows = [f"{cid}\t{names[0]}\t{'|'.join(names[1:])}\t{t}"
            for table, t in ((CHEMICALS, "Chemical"), (DISEASES, "Disease"))
            for cid, names in table.items()]
    kb_file.write_text("\n".join(rows) + "\n")
    spec = f"tsv:{kb_file}"
    tiny = tiny_encoder_dir(root / "tiny")
    config = LinkerConfig(encoder=str(tiny), max_length=64, shared_encoder=False,
                          entity_encoder=str(tiny), freeze_entity_encoder=True,
                          entity_pooling="mean", kb=spec, threshold=threshold)
    model = CollectiveLinker.from_encoder(config)
    out = root / "model"
    kb = assemble_kb(spec)
    model.save(out, kb_manifest=save_model_kb(out, spec, None, kb))
    return out, kb_file
