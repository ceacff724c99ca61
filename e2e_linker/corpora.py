"""Resolve corpus specs used in configs and on the command line.

``bc5cdr:train`` names a split of a registered dataset (data_tools.datasets); anything else is a
path to a file or directory in a supported format.
"""

from __future__ import annotations

from pathlib import Path

from data_tools.documents import Document


def load_corpus(spec: str, limit: int | None = None) -> list[Document]:
    """All documents of a dataset split (``name:split``) or of a path, in order."""
    from data_tools.formats import read_documents

    if ":" in spec and not Path(spec).exists():
        from data_tools.datasets import get_dataset

        name, split = spec.split(":", 1)
        docs_iter = get_dataset(name, split).documents()
    else:
        docs_iter = read_documents(spec)
    docs: list[Document] = []
    for doc in docs_iter:
        docs.append(doc)
        if limit is not None and len(docs) >= limit:
            break
    return docs
