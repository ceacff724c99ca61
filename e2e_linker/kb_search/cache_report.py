"""What a cache folder holds and whether every file of it checks out (``linker kb info``, with
``--verify``), read from the folder alone, without an encoder.

Why a module of its own: these functions read every store's folders (and the compiled KBs'),
not one :class:`~e2e_linker.kb_search.cache.VectorStore`; they sit apart from the store so a
report needs none of its encode paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from e2e_linker.kb_search.cache_folder import store_key
from e2e_linker.kb_search.integrity import (
    DAMAGED,
    OK,
    UNVERIFIED,
    DamagedFile,
    Verdict,
    check_file,
    npy_layout,
)
from e2e_linker.kb_search.packed_index import load_coverage
from e2e_linker.kb_search.partial_matrix import check_partial, partial_fill


def folder_bytes(folder: Path) -> int:
    """Bytes that the files under ``folder`` take on disk (a sparse partial matrix counts what
    it holds, not its length)."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            info = path.stat()
            blocks = getattr(info, "st_blocks", None)
            total += min(info.st_size, blocks * 512) if blocks is not None else info.st_size
    return total


def _read_json(path: Path) -> dict:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _list_paths(folder: Path) -> list[Path]:
    """The full-matrix paths of the text lists in ``folder``, each once whether the list is
    full, partial or both (its partial files name the same list)."""
    found: set[Path] = set()
    for path in folder.glob("*.npy") if folder.is_dir() else []:
        name = path.name
        if ".tmp" in name or name.startswith(".") or name.endswith(".f32.npy") or \
                name == "vectors.npy":
            continue
        for suffix in (".partial.npy", ".partial-have.npy", ".partial-sums.npy"):
            if name.endswith(suffix):
                name = name.removesuffix(suffix) + ".npy"
                break
        found.add(folder / name)
    return sorted(found)


def _describe_list(full: Path) -> dict:
    """A list's rows and state: ``full`` (every row), ``partial`` (``encoded`` of ``rows``,
    ``filled`` their ratio) or ``damaged`` (``linker kb info --verify`` says how)."""
    if full.is_file():
        try:
            rows = npy_layout(full).shape[0]
        except (DamagedFile, OSError):
            return {"rows": None, "state": DAMAGED, "encoded": None, "filled": None}
        return {"rows": rows, "state": "full", "encoded": rows, "filled": 1.0}
    fill = partial_fill(full)
    if fill is None:
        return {"rows": None, "state": DAMAGED, "encoded": None, "filled": None}
    present, rows = fill
    return {"rows": rows, "state": "partial", "encoded": present,
            "filled": round(present / rows, 4) if rows else 1.0}


def describe_cache(root: Path) -> list[dict]:
    """What a cache folder holds, one entry per encoder: its settings, how many names it has
    encoded, the KB matrices (with the KB each was built for, when recorded, how much of it is
    encoded and the approximate indexes beside them), the normalizer's text lists, and the
    bytes on disk. A list is listed once, full or partial; nothing here fails on a damaged
    file (it is listed as damaged). ``in_use``: the folder holds vectors of the encoder's
    batching scheme now (:func:`~e2e_linker.kb_search.cache_folder.store_key`); ``padded``: of
    the padded batches before it, which no version reads any more (a folder of neither may
    be a later version's)."""
    out: list[dict] = []
    for kind in ("entity_vectors", "normalizer_vectors"):
        for folder in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            if not folder.is_dir():
                continue
            fingerprint = folder.name.partition("-")[0]
            entry: dict = {"store": kind, "folder": folder.name, "fingerprint": fingerprint,
                           "in_use": folder.name == store_key(fingerprint),
                           "padded": folder.name == fingerprint,
                           "bytes": folder_bytes(folder), "kbs": [], "lists": []}
            settings = _read_json(folder / "encoder.json")
            if settings:
                entry["encoder"] = settings
            names = folder / "names.jsonl"
            if names.is_file():
                with names.open("rb") as handle:
                    entry["names"] = sum(1 for _ in handle)
            for matrix in _list_paths(folder / "kb"):
                record = _read_json(matrix.with_suffix(".json"))
                state = _describe_list(matrix)
                indexes = sorted(p.name.split(".", 1)[1].removesuffix(".faiss")
                                 for p in matrix.parent.glob(f"{matrix.stem}.*.faiss"))
                if state["state"] == "partial":
                    indexes = ["packed", *indexes]
                entry["kbs"].append({"file": matrix.name, "rows": state["rows"],
                                     "kb": record.get("kb"), "model": record.get("model"),
                                     "packed_index": record.get("packed_index"),
                                     "indexes": indexes or ["exact"], "state": state["state"],
                                     "encoded": state["encoded"], "filled": state["filled"]})
            for matrix in _list_paths(folder):
                record = _read_json(matrix.with_suffix(".json"))
                entry["lists"].append({"file": matrix.name, **_describe_list(matrix),
                                       "kb": record.get("kb"),
                                       "packed_index": record.get("packed_index")})
            out.append(entry)
    return out


def _verdict(root: Path, verdict: Verdict) -> dict:
    return {"file": str(verdict.path.relative_to(root)), "state": verdict.state,
            "why": verdict.why}


def verify_cache(root: Path) -> list[dict]:
    """Every file of a cache folder (vector store and compiled KBs) checked whole against its
    record, every byte now: one ``{file, state, why}`` per file, ``state`` ``ok``, ``damaged`` or ``unverified`` (no record: written before
    records existed, or an index built from a checked matrix), what ``linker kb info
    --verify`` reports. Reads the whole cache."""
    out: list[Verdict] = []
    for kind in ("entity_vectors", "normalizer_vectors"):
        for folder in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            if not folder.is_dir():
                continue
            names, vectors = folder / "names.jsonl", folder / "vectors.npy"
            table = [check_file(names, npy=False, full=True) if names.is_file() else None,
                     check_file(vectors, full=True, dtype=np.float16)
                     if vectors.is_file() else None]
            if all(v is not None and v.state != DAMAGED for v in table):
                with names.open("rb") as handle:
                    count = sum(1 for _ in handle)
                rows = npy_layout(vectors).shape[0]
                if rows != count:
                    table[1] = Verdict(vectors, DAMAGED, f"{rows:,} rows for the {count:,} "
                                                         "names of names.jsonl")
            out += [v for v in table if v is not None]
            for matrix in _list_paths(folder / "kb") + _list_paths(folder):
                if matrix.is_file():
                    out.append(check_file(matrix, full=True, dtype=np.float16))
                out += check_partial(matrix)
                for derived in sorted(matrix.parent.glob(f"{matrix.stem}.*.faiss")) + \
                        sorted(matrix.parent.glob(f"{matrix.stem}.f32.npy")):
                    out.append(Verdict(derived, UNVERIFIED, "no checksum record (built from "
                                                            "the matrix; delete it to have it "
                                                            "built again)"))
                rows = _describe_list(matrix)["rows"]
                for kept in sorted(matrix.parent.glob(f"{matrix.stem}.covered-by-*.safetensors")):
                    fits = rows is not None and load_coverage(kept, None, rows) is not None
                    out.append(Verdict(kept, OK, "") if fits else Verdict(
                        kept, DAMAGED, "not what the packed index holds of this list "
                                       "(worked out again at the next load)"))
            for part in sorted(folder.glob("*.parts/*.npy")):
                if ".tmp" not in part.name:
                    out.append(check_file(part, full=True, dtype=np.float16))
    from e2e_linker.compiled_kb.store import verify_compiled  # the KB's arrays: imported late

    out += verify_compiled(root)
    return [_verdict(root, v) for v in out]
