"""The normalizer's model directory: what ``linker train-triplet`` and ``export-normalizer`` write
and ``linker normalize`` reads. This module alone knows its file names::

    encoder/          Hugging Face folder (config.json, model.safetensors, tokenizer files), or
    adapter/          a LoRA adapter over a base encoder (see :mod:`e2e_linker.encoder.adapter`)
    normalizer.json   {"pooling", "max_length", "kb", "kb_hash", "lowercase", "punctuation", ...}
    mentions.tsv      (optional) the training mentions, the default D pool at search time
    kb_index.safetensors  (optional) packed shortlist index of the KB texts under this encoder
                      (``linker kb pack --normalizer``)

Any plain Hugging Face folder or name also works as a model (mean pooling, the default text
settings, no recorded KB). Without ``--model`` the embedded default normalizer
(:data:`e2e_linker.defaults.DEFAULT_NORMALIZER_DIR`, an adapter over the packaged MiniLM) is
used. Weights are only ever read from safetensors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from e2e_linker.defaults import DEFAULT_NORMALIZER_DIR
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError

NORMALIZER_FILE = "normalizer.json"


ENCODER_DIR = "encoder"


#: a LoRA adapter over a base encoder (see :mod:`e2e_linker.encoder.adapter`), instead of ``encoder/``
ADAPTER_DIR = "adapter"


#: optional: the training mentions a model was trained with (``label<TAB>type<TAB>text``); used
#: as the D pool when ``linker normalize`` is given no ``--train-mentions``
MENTIONS_FILE = "mentions.tsv"


#: optional: the packed shortlist index of the model's KB texts (first runs encode only shortlists)
PACKED_INDEX_FILE = "kb_index.safetensors"


def packed_index_of(model: str | os.PathLike | None) -> Path | None:
    """The packed KB index of a normalizer model directory (None: not a directory or none)."""
    path = (Path(model) if model is not None else default_normalizer_dir()) / PACKED_INDEX_FILE
    return path if path.is_file() else None


@dataclass
class ModelSettings:
    """What ``normalizer.json`` records: how texts were encoded and which KB the model knows."""

    pooling: str = "mean"
    max_length: int = 32
    kb: str | None = None
    kb_hash: str | None = None
    lowercase: bool = True
    punctuation: bool = True
    #: the search mode to use by default with this model (None: :data:`DEFAULT_MODE`)
    search: str | None = None
    #: anything else recorded (training corpora, steps, ...), kept verbatim
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> ModelSettings:
        known = {f.name for f in fields(cls)} - {"extra"}
        settings = cls(**{k: v for k, v in data.items() if k in known})
        settings.extra = {k: v for k, v in data.items() if k not in known}
        return settings

    def to_dict(self) -> dict:
        data = asdict(self)
        extra = data.pop("extra")
        return {**data, **extra}


def default_normalizer_dir() -> Path:
    """The embedded default normalizer model (``e2e_linker/default_model/normalizer/``).

    Raises a :class:`UserError` naming the fix when the package was built without one.
    """
    if not ((DEFAULT_NORMALIZER_DIR / NORMALIZER_FILE).is_file()
            and ((DEFAULT_NORMALIZER_DIR / ADAPTER_DIR).is_dir()
                 or (DEFAULT_NORMALIZER_DIR / ENCODER_DIR).is_dir())):
        raise UserError(f"no embedded default normalizer at {DEFAULT_NORMALIZER_DIR} (needs "
                        f"{ADAPTER_DIR}/ or {ENCODER_DIR}/, and {NORMALIZER_FILE}); pass --model DIR "
                        "(a triplet model directory, a Hugging Face folder, or all-MiniLM-L6-v2)")
    return DEFAULT_NORMALIZER_DIR


def load_model(model: str | os.PathLike | None = None, device: str | None = None
               ) -> tuple[TextEncoder, ModelSettings]:
    """The encoder and settings of a model directory, a plain HF folder, or a model name.

    ``None`` means :func:`default_normalizer_dir`. A directory with an ``encoder/`` or ``adapter/``
    subfolder is a triplet model directory (its ``normalizer.json`` gives pooling and text settings);
    anything else goes to ``TextEncoder.from_pretrained`` with mean pooling. Weights are only
    ever read from safetensors.
    """
    path = Path(model) if model is not None else default_normalizer_dir()
    if (path / ADAPTER_DIR).is_dir() or (path / ENCODER_DIR).is_dir():
        settings_path = path / NORMALIZER_FILE
        data = {}
        if settings_path.is_file():
            try:
                data = json.loads(settings_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise UserError(f"{settings_path}: not valid JSON ({exc})") from exc
        settings = ModelSettings.from_dict(data)
        if (path / ADAPTER_DIR).is_dir():
            return load_adapter_model(path / ADAPTER_DIR, settings, device), settings
        source = str(path / ENCODER_DIR)
    else:
        if model is not None and not path.exists() and os.sep in str(model):
            raise UserError(f"{model}: no such model directory")
        settings = ModelSettings()
        source = str(model)
    encoder = encoder_from(source, settings, f"cannot load encoder from {source}")
    if device:
        encoder.to(device)
    return encoder.eval(), settings


def encoder_from(source: str | os.PathLike, settings: ModelSettings, failure: str
                 ) -> TextEncoder:
    """A Hugging Face encoder with the model's pooling and length; a load failure becomes a
    :class:`UserError` starting with ``failure``."""
    try:
        return TextEncoder.from_pretrained(source, pooling=settings.pooling,
                                           max_length=settings.max_length)
    except OSError as exc:
        raise UserError(f"{failure}: {exc}") from exc


def load_adapter_model(folder: Path, settings: ModelSettings, device: str | None
                        ) -> TextEncoder:
    """The adapter's base encoder with the adapter merged in."""
    from e2e_linker.encoder.adapter import apply_adapter, read_adapter_config
    from e2e_linker.encoder.text_encoder import resolve_encoder_path

    base = read_adapter_config(folder).get("base")
    if not base:
        raise UserError(f"{folder}: the adapter config names no base encoder "
                        "(base_model_name_or_path)")
    base_folder = resolve_encoder_path(base)
    encoder = encoder_from(base_folder, settings, f"cannot load the adapter's base encoder {base}")
    apply_adapter(encoder.model, folder, base_folder)
    if device:
        encoder.to(device)
    return encoder.eval()


def model_mentions_of(model: str | os.PathLike | None) -> list[tuple[str, str, str]] | None:
    """The saved training mentions of a model directory (``None`` for a model without any)."""
    if model is None:
        try:
            path = default_normalizer_dir()
        except UserError:
            return None
    else:
        path = Path(model)
    file = path / MENTIONS_FILE
    return read_mentions(file) if file.is_file() else None


def save_model(encoder: TextEncoder, directory: str | os.PathLike,
               settings: ModelSettings, adapter: dict | None = None) -> Path:
    """Write ``encoder/`` (safetensors) and ``normalizer.json``; returns the directory.

    With ``adapter`` (keys ``base``, ``base_folder``, ``rank``, ``alpha``) the encoder carries
    LoRA layers and only they are written, to ``adapter/`` (peft's format, fp16).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if adapter is not None:
        from e2e_linker.encoder.adapter import save_adapter

        save_adapter(encoder.model, directory / ADAPTER_DIR, adapter["base"],
                     adapter["base_folder"], adapter["rank"], adapter["alpha"])
    else:
        encoder.save(directory / ENCODER_DIR)
    settings.pooling = encoder.pooling
    settings.max_length = encoder.max_length
    (directory / NORMALIZER_FILE).write_text(json.dumps(settings.to_dict(), indent=2) + "\n",
                                            encoding="utf-8")
    return directory


def read_synonyms(path: str | os.PathLike) -> list[tuple[str, str]]:
    """``concept_id<TAB>name`` lines (blank lines and ``#`` comments skipped)."""
    from data_tools.documents import FormatError

    out = []
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0].strip() or not parts[1].strip():
                raise FormatError("expected 'concept_id<TAB>name'", path=str(path),
                                  where=f"line {lineno}")
            out.append((parts[0].strip(), parts[1].strip()))
    return out


def write_mentions(path: str | os.PathLike, triples: Iterable[tuple[str, str, str]]) -> int:
    """Save ``(text, label, type)`` triples as ``label<TAB>type<TAB>text`` lines (sorted)."""
    from e2e_linker.normalizer.pools import distinct_mentions

    rows = distinct_mentions(triples)
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for text, label, type_ in rows:
            handle.write(f"{label}\t{type_}\t{text}\n")
    return len(rows)


def read_mentions(path: str | os.PathLike) -> list[tuple[str, str, str]]:
    """``(text, label, type)`` triples from :func:`write_mentions`'s format."""
    from data_tools.documents import FormatError

    out = []
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 or not parts[0] or not parts[2]:
                raise FormatError("expected 'label<TAB>type<TAB>text'", path=str(path),
                                  where=f"line {lineno}")
            out.append((parts[2], parts[0], parts[1]))
    return out


def pack_normalizer_index(model: str | os.PathLike | None = None, cache_dir: str | None = None,
                  pq_bytes: int = 16, nlist: int | None = None,
                  output: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """Encode the model's ontology texts (or read them from the cache), build an IVF-PQ index
    over them and store it packed in the model directory, so that ``linker normalize`` on a new
    machine encodes only the texts its mentions shortlist (``linker kb pack --normalizer``)."""
    from e2e_linker.collective.model_kb import assemble_kb
    from e2e_linker.kb_search.cache import VectorStore
    from e2e_linker.kb_search.packed_index import pack_vectors
    from e2e_linker.lexical.text_forms import TextNormalizer
    from e2e_linker.normalizer.pools import ontology_pool

    directory = Path(model) if model is not None else default_normalizer_dir()
    encoder, settings = load_model(directory)
    if not settings.kb:
        raise UserError(f"{directory}: the model records no KB to pack")
    pool = ontology_pool(assemble_kb(settings.kb),
                         TextNormalizer(settings.lowercase, settings.punctuation))
    cache = VectorStore(cache_dir, encoder, unit=True, progress=progress)
    vectors = cache.matrix(pool.texts, label="encoding ontology names")
    return pack_vectors(vectors, pool.texts, cache.fingerprint, settings.kb,
                        Path(output) if output else directory / PACKED_INDEX_FILE, pq_bytes,
                        nlist, progress)
