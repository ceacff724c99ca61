"""A KB with one gene symbol in two species (human and mouse BRCA1, IL6), the species, a MeSH
chemical and diseases, and a tiny model directory that links genes and species by name only
(``lexical_types``), as the default model does: the doors of ``normalize`` are tested on them
(genes against the annotate model's KB, the species order, no match)."""

from __future__ import annotations

from pathlib import Path

from data_tools.kb import KB, Concept

HUMAN, MOUSE = "NCBITaxon:9606", "NCBITaxon:10090"


def gene_kb() -> KB:
    """Human and mouse BRCA1 and IL6 (NCBI Gene), human, mouse and rat (NCBI Taxonomy),
    tamoxifen (a MeSH chemical), breast cancer and inflammation (MeSH diseases)."""
    return KB([Concept("672", "BRCA1", ["breast cancer 1"], "Gene", "NCBI Gene", taxon="9606"),
               Concept("12189", "Brca1", [], "Gene", "NCBI Gene", taxon="10090"),
               Concept("3569", "IL6", ["IL-6", "interleukin 6"], "Gene", "NCBI Gene",
                       taxon="9606"),
               Concept("16193", "Il6", ["IL-6"], "Gene", "NCBI Gene", taxon="10090"),
               Concept(HUMAN, "Homo sapiens", ["human"], "Species", "NCBI Taxonomy"),
               Concept(MOUSE, "Mus musculus", ["mouse", "mice"], "Species", "NCBI Taxonomy"),
               Concept("NCBITaxon:10116", "Rattus norvegicus", ["rat"], "Species",
                       "NCBI Taxonomy"),
               Concept("D013629", "Tamoxifen", [], "Chemical", "MeSH"),
               Concept("D001943", "Breast Neoplasms", ["breast cancer"], "Disease", "MeSH"),
               Concept("D007249", "Inflammation", [], "Disease", "MeSH")])


def gene_linker_dir(root: Path) -> tuple[Path, str]:
    """``(model directory, KB spec)``: a tiny random linker (as :mod:`tests.helpers.tiny_linker`
    builds one) predicting four types, Gene and Species linked by name only, over
    :func:`gene_kb` saved under ``root``."""
    from e2e_linker.collective.model import CollectiveLinker, LinkerConfig
    from e2e_linker.collective.model_kb import save_model_kb
    from tests.helpers.tiny import tiny_encoder_dir

    root.mkdir(parents=True, exist_ok=True)
    path = root / "genes.kb"
    kb = gene_kb()
    kb.save(path)
    spec = f"kb:{path}"
    tiny = tiny_encoder_dir(root / "tiny")
    config = LinkerConfig(encoder=str(tiny), max_length=64, shared_encoder=False,
                          entity_encoder=str(tiny), freeze_entity_encoder=True,
                          entity_pooling="mean", kb=spec, threshold=0.0,
                          types=["Chemical", "Disease", "Gene", "Species"],
                          lexical_types=["Gene", "Species"])
    directory = root / "model"
    CollectiveLinker.from_encoder(config).save(
        directory, kb_manifest=save_model_kb(directory, spec, None, kb))
    return directory, spec


def gene_linker(root: Path):
    """A :class:`~e2e_linker.api.Linker` over :func:`gene_linker_dir` in ``root`` (exact
    search, its own cache, a tiny normalizer): what the normalize tests of the API and of
    :mod:`e2e_linker.normalizer.given_mentions` load."""
    from e2e_linker.api import Linker
    from tests.helpers.tiny import tiny_encoder_dir

    directory, spec = gene_linker_dir(root)
    return Linker.load(directory, kb=spec, cache_dir=str(root / "cache"), index_kind="exact",
                       normalizer_model=str(tiny_encoder_dir(root / "norm")))
