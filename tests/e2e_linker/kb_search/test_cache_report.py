"""What a cache folder holds, as ``linker kb info`` reports it (``describe_cache``)."""

from __future__ import annotations

import numpy as np

from e2e_linker.kb_search.cache import VectorStore
from e2e_linker.kb_search.cache_report import describe_cache

TEXTS = ["aspirin", "renal failure", "headache", "nausea", "cisplatin"]


def test_describe_lists_a_partial_list_once_with_its_fill(tiny_encoder, tmp_path):
    store = VectorStore(tmp_path, tiny_encoder, progress=False)
    store.partial(TEXTS).rows(np.array([0, 2]))
    (entry,) = describe_cache(tmp_path)
    (kb,) = entry["kbs"]
    assert (kb["state"], kb["encoded"], kb["rows"], kb["filled"]) == ("partial", 2, 5, 0.4)
    assert kb["file"] == store.list_path(TEXTS).name and kb["indexes"] == ["packed"]
    store.partial(TEXTS).have_path.write_bytes(b"")
    (kb,) = describe_cache(tmp_path)[0]["kbs"]
    assert kb["state"] == "damaged" and kb["rows"] is None
