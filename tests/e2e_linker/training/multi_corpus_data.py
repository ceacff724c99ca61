"""Two tiny corpora that annotate different types, for the multi-corpus trainer tests.

``chemdis``: the synthetic corpus (Chemical and Disease annotated). ``genes``: the same kind of
text annotated as a gene corpus would be: its chemical names play genes (``GeneMention``,
mapped to Gene), its disease names are ``FamilyName`` annotations (mapped to null: ignore
spans), and nothing else is annotated.
"""

from __future__ import annotations

from e2e_linker.collective.model import LinkerConfig
from tests.helpers.synthetic import synthetic_docs

TYPES = ["Chemical", "Disease", "Gene"]
GENE_MAP = {"GeneMention": "Gene", "FamilyName": None}


def gene_docs(n: int, seed: int):
    docs = synthetic_docs(n, seed)
    for doc in docs:
        for ann in doc.annotations:
            ann.type = "GeneMention" if ann.type == "Chemical" else "FamilyName"
    return docs


def corpora(train_docs: int = 8, seed: int = 3) -> tuple[dict, dict]:
    """Training and dev documents keyed by corpus name (as the trainer takes them)."""
    train = {"chemdis": synthetic_docs(train_docs), "genes": gene_docs(train_docs, seed)}
    dev = {"chemdis_dev": synthetic_docs(2, 1), "genes_dev": gene_docs(2, seed + 1)}
    return train, dev


def corpus_options(gene_weight: float = 0.5) -> dict:
    """The ``train`` and ``dev`` config entries of the two corpora."""
    return {
        "train": [{"corpus": "chemdis", "types": ["Chemical", "Disease"]},
                  {"corpus": "genes", "types": ["Gene"], "type_map": GENE_MAP,
                   "weight": gene_weight}],
        "dev": [{"corpus": "chemdis_dev", "types": ["Chemical", "Disease"]},
                {"corpus": "genes_dev", "types": ["Gene"], "type_map": GENE_MAP}],
    }


def model_config(encoder: str, **overrides) -> LinkerConfig:
    return LinkerConfig(**({"encoder": encoder, "max_length": 64, "kb": "synthetic",
                            "types": list(TYPES)} | overrides))
