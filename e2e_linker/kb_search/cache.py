"""The one on-disk cache of text vectors that ``linker annotate`` and ``linker normalize`` share.

Why a cache: encoding the ~700k names of the BC5CDR KB takes minutes on a CPU, and the result
only depends on the encoder's weights and the text. Everything lives under
:func:`default_cache_dir`, in folders keyed by :func:`encoder_fingerprint`:

* ``entity_vectors/<fingerprint>/`` — :class:`NameVectorCache`: raw fp16 vectors keyed by name
  text (``names.jsonl`` + ``vectors.npy``), appended to as new names appear, plus one matrix per
  KB name list (``kb/<hash>.npy``) that is memory-mapped on load. The collective model's entity
  tower reads it.
* ``normalizer_vectors/<fingerprint>/`` — :class:`VectorCache`: L2-normalised fp16 matrices,
  one per text list (``<hash>-<n>.npy``), written in resumable parts. The normalizer reads it,
  and seeds a new list from the name-keyed store when the fingerprints agree.

The two layouts differ in one respect that matters for output: the normalizer's rows are
normalised in fp32 before they are rounded to fp16, the entity tower's are rounded raw.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError

#: batches encoded between two updates of the progress bar
PROGRESS_BATCHES = 8
#: names encoded to estimate the time a KB encode will take (spread over the name lengths)
ESTIMATE_SAMPLE = 256


def default_cache_dir() -> Path:
    """``$E2E_LINKER_CACHE`` or ``~/.cache/e2e_linker``."""
    return Path(os.environ.get("E2E_LINKER_CACHE", Path.home() / ".cache" / "e2e_linker"))


def encoder_fingerprint(encoder: TextEncoder) -> str:
    """A hash of the encoder's weights, pooling and name length: what the vectors depend on."""
    digest = hashlib.sha256()
    digest.update(f"{encoder.pooling}|{encoder.max_length}".encode())
    for key, value in sorted(encoder.model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().to(torch.float16).cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def writable(folder: Path) -> Iterator[None]:
    """Turn a failure to write the cache (read-only, full, not a folder) into one clear line."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"cannot write the KB cache in {folder}: {exc.strerror or exc}; point "
                        "E2E_LINKER_CACHE (or --cache-dir) at a writable folder with room") from exc


@contextlib.contextmanager
def exclusive(folder: Path, what: str, progress: bool = True) -> Iterator[None]:
    """Hold ``folder/.lock`` while encoding or writing into ``folder``.

    Why: two runs that start on an empty cache at once must leave one valid cache, never a torn
    one; the second waits (saying so) and then finds the first one's vectors.
    """
    with writable(folder):
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".lock", "a+")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                print(f"waiting for another process {what} in {folder}", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


class NameVectorCache:
    """Vectors of name strings for one encoder, on disk, appended to as new names appear.

    Keyed by name text rather than by KB, so merging KBs, adding mined names or switching
    between KB versions only encodes the names not seen before. Encoding is checkpointed every
    ``checkpoint`` names, so an interrupted encode of a large KB resumes where it stopped.
    """

    def __init__(self, root: Path, encoder: TextEncoder, checkpoint: int = 32768,
                 fingerprint: str | None = None):
        self.folder = root / "entity_vectors" / (fingerprint or encoder_fingerprint(encoder))
        self.encoder = encoder
        self.checkpoint = checkpoint
        self.names_path = self.folder / "names.jsonl"
        self.vectors_path = self.folder / "vectors.npy"

    def load(self, attempts: int = 5) -> tuple[list[str], np.ndarray | None]:
        """The cached names and vectors; retried briefly while another process is writing."""
        for attempt in range(attempts):
            if not (self.names_path.is_file() and self.vectors_path.is_file()):
                return [], None
            with self.names_path.open(encoding="utf-8") as handle:
                names = [json.loads(line) for line in handle]
            vectors = np.load(self.vectors_path, mmap_mode="r")
            if len(vectors) == len(names):
                return names, vectors
            time.sleep(0.5 * (attempt + 1))  # the two files are replaced one after the other
        return [], None  # still torn: start over rather than misalign

    def store(self, names: list[str], vectors: np.ndarray) -> None:
        """Replace the store with ``names`` and their ``vectors`` (each file atomically)."""
        with writable(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp_vectors = self.folder / f"vectors.{os.getpid()}.tmp.npy"
            tmp_names = self.folder / f"names.{os.getpid()}.tmp.jsonl"
            np.save(tmp_vectors, vectors)
            with tmp_names.open("w", encoding="utf-8") as handle:
                for name in names:
                    handle.write(json.dumps(name) + "\n")
            os.replace(tmp_vectors, self.vectors_path)
            os.replace(tmp_names, self.names_path)
            encoder_json = self.folder / "encoder.json"
            if not encoder_json.is_file():
                config = getattr(self.encoder.model, "config", None)
                encoder_json.write_text(json.dumps({
                    "model": str(getattr(config, "name_or_path", "") or ""),
                    "pooling": self.encoder.pooling, "max_length": self.encoder.max_length,
                }, indent=2) + "\n")

    def estimate_seconds(self, missing: Sequence[str], batch_size: int = 256) -> float:
        """Seconds encoding ``missing`` will take here, from a timed sample of names spread
        over their lengths (the result is thrown away, so stored vectors do not change).

        The sample runs in eight length-sorted batches, as the real encode pads them, after an
        untimed warm-up call: one batch of every length padded to the longest, timed cold,
        overestimated the encode about twofold."""
        step = max(1, len(missing) // ESTIMATE_SAMPLE)
        sample = list(missing[::step][:ESTIMATE_SAMPLE])
        self.encoder.encode(sample[:8], batch_size=8, dtype=np.float16)
        start = time.perf_counter()
        self.encoder.encode(sample, batch_size=max(1, len(sample) // 8), dtype=np.float16)
        return (time.perf_counter() - start) * len(missing) / max(1, len(sample))

    def vectors_for(self, names: Sequence[str], batch_size: int = 256,
                    progress: bool = True) -> np.ndarray:
        """fp16 vectors for ``names`` in order, encoding (and caching) only unseen ones."""
        known, stored = self.load()
        row = {n: i for i, n in enumerate(known)}
        if any(n not in row for n in names):
            with exclusive(self.folder, "encodes KB names", progress):
                self._encode_missing(names, batch_size, progress)
            known, stored = self.load()
            row = {n: i for i, n in enumerate(known)}
        return np.asarray(stored[[row[n] for n in names]]) if names else np.zeros(
            (0, self.encoder.hidden_size), np.float16)

    def _encode_missing(self, names: Sequence[str], batch_size: int, progress: bool) -> None:
        """Encode and store the names the store lacks (called with the folder locked)."""
        from tqdm.auto import tqdm

        known, stored = self.load()  # another process may have added them while we waited
        row = {n: i for i, n in enumerate(known)}
        missing = sorted({n for n in names if n not in row}, key=len)
        if missing:
            if progress and len(missing) > 2 * ESTIMATE_SAMPLE:
                seconds = self.estimate_seconds(missing, batch_size)
                took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
                print(f"KB index: encoding {len(missing):,} names not cached yet "
                      f"(about {took} on this machine, once) into {self.folder}; "
                      f"an interrupted encode resumes from its last {self.checkpoint:,}-name "
                      "checkpoint", file=sys.stderr)
            parts = [np.asarray(stored)] if stored is not None else []
            done = list(known)
            bar = tqdm(total=len(missing), desc="encoding KB names", unit="name",
                       disable=not progress)
            # the bar moves every few batches, the store is written every checkpoint; pieces
            # are whole batches of the length-sorted list, so the batches (and vectors) are
            # the ones a single encode of the block would make
            piece = batch_size * PROGRESS_BATCHES
            for start in range(0, len(missing), self.checkpoint):
                block = missing[start:start + self.checkpoint]
                for at in range(0, len(block), piece):
                    parts.append(self.encoder.encode(block[at:at + piece],
                                                     batch_size=batch_size, dtype=np.float16))
                    bar.update(len(block[at:at + piece]))
                done.extend(block)
                self.store(done, np.concatenate(parts))
            bar.close()

    def kb_matrix(self, names: Sequence[str], batch_size: int = 256,
                  progress: bool = True, describe: dict | None = None
                  ) -> tuple[np.ndarray, Path]:
        """fp16 vectors of ``names`` in order, memory-mapped from a file of their own.

        Why a second file: the name cache is in first-seen order, so a KB's rows are scattered
        in it; gathering them costs a full read and an in-memory copy on every start. The
        per-KB matrix is written once (keyed by a hash of the name list) and then mapped, so a
        large KB costs page cache, not process memory, until rows are touched. ``describe``
        (e.g. the KB spec) is written beside it once, for ``linker kb info``.
        """
        digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16]
        path = self.folder / "kb" / f"{digest}.npy"
        if not path.is_file():
            matrix = self.vectors_for(names, batch_size=batch_size, progress=progress)
            with exclusive(self.folder, "writes a KB matrix", progress), writable(path.parent):
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.is_file():
                    tmp = path.with_name(f"{digest}.{os.getpid()}.tmp.npy")
                    np.save(tmp, matrix)
                    os.replace(tmp, path)
        info = path.with_suffix(".json")
        if describe is not None and not info.is_file():
            with writable(path.parent):
                info.write_text(json.dumps({**describe, "names": len(names)}, indent=2) + "\n")
        matrix = np.load(path, mmap_mode="r")
        if len(matrix) != len(names):
            raise ValueError(f"{path}: {len(matrix)} rows for {len(names)} names")
        return matrix, path


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def encode_unit(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256,
                progress: bool | str = False) -> np.ndarray:
    """L2-normalised float32 vectors of ``texts`` (queries: small, never cached)."""
    if not texts:
        return np.zeros((0, encoder.hidden_size), np.float32)
    return unit_rows(encoder.encode(list(texts), batch_size=batch_size, progress=progress))


def texts_hash(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:20]


class VectorCache:
    """Unit vectors (fp16) of text lists, on disk, keyed by (encoder hash, texts hash).

    ``vectors(texts)`` returns a read-only memory map. A miss encodes in parts of ``part_size``
    texts, each saved as soon as it is done, so an interrupted encode of a large KB resumes.
    Vectors already in ``linker annotate``'s name cache for the same encoder (same weights,
    pooling and length) are reused instead of re-encoded.
    """

    def __init__(self, encoder: TextEncoder, cache_dir: str | os.PathLike | None = None,
                 batch_size: int = 256, part_size: int = 16384, progress: bool = True,
                 seed_min: int = 1000):
        self.encoder = encoder
        self.root = Path(cache_dir) if cache_dir else default_cache_dir()
        self.fingerprint = encoder_fingerprint(encoder)
        self.folder = self.root / "normalizer_vectors" / self.fingerprint
        self.batch_size = batch_size
        self.part_size = part_size
        self.progress = progress
        #: only lists this long look into the name cache (reading it costs a second or two)
        self.seed_min = seed_min

    def name_store(self) -> NameVectorCache:
        """The name-keyed store of ``linker annotate`` for the same encoder."""
        return NameVectorCache(self.root, self.encoder, fingerprint=self.fingerprint)

    def path_for(self, texts: Sequence[str]) -> Path:
        return self.folder / f"{texts_hash(texts)}-{len(texts)}.npy"

    def _seed(self, texts: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """Rows found in ``linker annotate``'s name-keyed cache: (vectors or None, found mask)."""
        found = np.zeros(len(texts), bool)
        try:
            known, stored = self.name_store().load()
        except (OSError, ValueError):
            return None, found
        if stored is None:
            return None, found
        row = {name: i for i, name in enumerate(known)}
        hits = [(i, row[t]) for i, t in enumerate(texts) if t in row]
        hits += self._same_tokens(texts, row)
        if not hits:
            return None, found
        out = np.zeros((len(texts), stored.shape[1]), np.float16)
        mine = np.array([i for i, _ in hits])
        theirs = np.array([j for _, j in hits])
        order = np.argsort(theirs)  # read the memory map in order
        out[mine[order]] = unit_rows(stored[theirs[order]]).astype(np.float16)
        found[mine] = True
        return out, found

    def _same_tokens(self, texts: Sequence[str], row: dict[str, int]) -> list[tuple[int, int]]:
        """Cached names that differ from a text only in case *and* tokenize identically.

        An uncased tokenizer (MiniLM's) gives "Breast Neoplasms" and "breast neoplasms" the
        same token ids, hence the same vector; we accept a pair only after checking the ids.
        """
        lowered: dict[str, str] = {}
        for name in row:
            lowered.setdefault(name.lower(), name)
        pairs = [(i, lowered[t.lower()]) for i, t in enumerate(texts)
                 if t not in row and t.lower() in lowered]
        if not pairs:
            return []
        tokenizer = self.encoder.tokenizer
        limit = self.encoder.max_length

        def ids(batch: list[str]) -> list[list[int]]:
            return tokenizer(batch, truncation=True, max_length=limit)["input_ids"]

        out: list[tuple[int, int]] = []
        for start in range(0, len(pairs), 65536):
            block = pairs[start:start + 65536]
            mine = ids([texts[i] for i, _ in block])
            theirs = ids([name for _, name in block])
            out += [(i, row[name]) for (i, name), a, b in zip(block, mine, theirs, strict=True)
                    if a == b]
        return out

    def vectors(self, texts: Sequence[str], label: str = "encoding") -> np.ndarray:
        """fp16 unit vectors of ``texts`` in order, memory-mapped from the cache."""
        texts = list(texts)
        dim = self.encoder.hidden_size
        if not texts:
            return np.zeros((0, dim), np.float16)
        path = self.path_for(texts)
        if path.is_file():
            return np.load(path, mmap_mode="r")
        from tqdm.auto import tqdm

        seeded, found = (None, np.zeros(len(texts), bool))
        if len(texts) >= self.seed_min:
            seeded, found = self._seed(texts)
        parts_dir = path.with_suffix(".parts")
        parts_dir.mkdir(parents=True, exist_ok=True)
        todo = [i for i in range(len(texts)) if not found[i]]
        n_parts = (len(todo) + self.part_size - 1) // self.part_size
        bar = tqdm(total=len(todo), desc=label, unit="text", disable=not self.progress)
        for p in range(n_parts):
            part_path = parts_dir / f"{p:05d}.npy"
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            if not part_path.is_file():
                vecs = encode_unit(self.encoder, [texts[i] for i in chunk], self.batch_size)
                tmp = parts_dir / f"{p:05d}.tmp.npy"
                np.save(tmp, vecs.astype(np.float16))
                os.replace(tmp, part_path)
            bar.update(len(chunk))
        bar.close()
        out = seeded if seeded is not None else np.zeros((len(texts), dim), np.float16)
        for p in range(n_parts):
            chunk = todo[p * self.part_size:(p + 1) * self.part_size]
            out[chunk] = np.load(parts_dir / f"{p:05d}.npy")
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, out)
        os.replace(tmp, path)
        shutil.rmtree(parts_dir, ignore_errors=True)
        if len(todo) >= self.seed_min:
            self._remember([texts[i] for i in todo], out[todo])
        return np.load(path, mmap_mode="r")

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Add freshly encoded texts to the name-keyed cache, so that another list sharing
        most of them (the chemical KB, then the whole BC5CDR KB) encodes only the rest."""
        store = self.name_store()
        known, stored = store.load()
        seen = set(known)
        new = []
        for i, text in enumerate(texts):
            if text not in seen:
                seen.add(text)
                new.append(i)
        if not new:
            return
        rows = vectors[new].astype(np.float16)
        merged = np.concatenate([np.asarray(stored), rows]) if stored is not None else rows
        store.store(known + [texts[i] for i in new], merged)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def describe_cache(root: Path) -> list[dict]:
    """What a cache folder holds, one entry per encoder: its settings, how many names it has
    encoded, the KB matrices (with the KB each was built for, when recorded) and approximate
    indexes beside them, the normalizer's text lists, and the bytes on disk."""
    out: list[dict] = []
    for kind in ("entity_vectors", "normalizer_vectors"):
        for folder in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            if not folder.is_dir():
                continue
            entry: dict = {"store": kind, "fingerprint": folder.name,
                           "bytes": folder_bytes(folder), "kbs": [], "lists": []}
            settings = folder / "encoder.json"
            if settings.is_file():
                entry["encoder"] = json.loads(settings.read_text())
            names = folder / "names.jsonl"
            if names.is_file():
                with names.open(encoding="utf-8") as handle:
                    entry["names"] = sum(1 for _ in handle)
            for matrix in sorted((folder / "kb").glob("*.npy")) if (folder / "kb").is_dir() \
                    else []:
                if ".tmp" in matrix.name or matrix.name.endswith(".f32.npy"):
                    continue
                info = matrix.with_suffix(".json")
                record = json.loads(info.read_text()) if info.is_file() else {}
                rows = int(np.load(matrix, mmap_mode="r").shape[0])
                indexes = sorted(p.name.split(".", 1)[1].removesuffix(".faiss")
                                 for p in matrix.parent.glob(f"{matrix.stem}.*.faiss"))
                entry["kbs"].append({"file": matrix.name, "rows": rows,
                                     "kb": record.get("kb"), "model": record.get("model"),
                                     "indexes": indexes or ["exact"]})
            for matrix in sorted(folder.glob("*.npy")):
                if ".tmp" in matrix.name or matrix.name == "vectors.npy":
                    continue
                entry["lists"].append({"file": matrix.name,
                                       "rows": int(np.load(matrix, mmap_mode="r").shape[0])})
            out.append(entry)
    return out
