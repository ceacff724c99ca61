"""The collective dual encoder: one encoder pass per chunk finds and embeds every mention.

Mention side: token states from the mention encoder → span scorer (or BIO tagger) → kept spans
mean-pooled into span vectors. Entity side: [CLS] of each concept name from the entity encoder
(the same weights by default, or a separate copy). Linking is a dot product between the two, done
against a cached index of all KB names (see e2e_linker.kb_search.entity_index), never per mention.

A checkpoint is a directory::

    linker_config.json   LinkerConfig (architecture, types, threshold, KB spec)
    encoder/             HF folder of the mention encoder (config, model.safetensors, tokenizer)
    entity_encoder/      only when the entity encoder is not shared
    heads.safetensors    span scorer / BIO tagger / type classifier
    kb_manifest.json     which KB the model was trained and tuned with, and its content hash
    normalizer.json      how `linker normalize` uses this encoder for text-only mentions
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
from torch import nn

from e2e_linker.collective.model_dir import (
    CONFIG_FILE,
    HEADS_FILE,
    MANIFEST_FILE,
    NORMALIZER_SETTINGS_FILE,
    load_stats,
    read_json_object,
)
from e2e_linker.collective.span_scorer import (
    BioTagger,
    SpanScorer,
    decode_bio,
    span_validity,
    span_vectors,
)
from e2e_linker.encoder.precision import autocast, resolve_precision
from e2e_linker.encoder.text_encoder import TextEncoder
from e2e_linker.errors import UserError


@dataclass
class LinkerConfig:
    """Everything needed to rebuild the model and run it as it was tuned."""

    encoder: str = "all-MiniLM-L6-v2"
    shared_encoder: bool = True
    #: entity tower when not shared: a model name/dir; None means a copy of ``encoder``
    entity_encoder: str | None = None
    #: a frozen entity tower is not trained and not saved when it is a named/packaged model,
    #: so its KB vectors are computed once and cached (the CPU-friendly default)
    freeze_entity_encoder: bool = False
    entity_pooling: str = "cls"
    mention_head: str = "exhaustive"  # or "bio"
    max_span_len: int = 10
    max_length: int = 512
    chunk_overlap: int = 32
    name_max_length: int = 32
    types: list[str] = field(default_factory=lambda: ["Chemical", "Disease"])
    threshold: float = 0.5
    kb: str = "bc5cdr"
    exact_match_sieve: bool = True
    #: a short form ("TLE") takes the concept linked for its in-document long form
    resolve_abbreviations: bool = True
    #: a detected span that no lexical step links (exact name, short form, sieve stack) is
    #: kept only with a mention score of at least this; None or 0: every span is kept, above
    #: 1: none (chosen on dev: docs/decisions/0003-lexical-gate.md)
    lexical_gate: float | None = None
    #: a candidate scored above this (below ``threshold``) is kept when its text was detected
    #: above ``threshold`` elsewhere in the document; None: off (docs/decisions/0005-propagation.md)
    propagation_threshold: float | None = None
    #: a candidate scored above this (below ``threshold``) is kept when its text is an exact
    #: KB name — KB dictionary matches as candidate spans; None: off (docs/decisions/
    #: 0006-dictionary.md: recall and precision traded evenly on dev, so off by default)
    dictionary_threshold: float | None = None
    #: every occurrence of a short form defined in the document whose long form is a kept
    #: span is tagged like it ("phenobarbital (PB) ... PB")
    short_forms: bool = False
    #: concepts of these types are linked by their names only (exact name, sieve stack, short
    #: forms; the species rule orders a name's genes), never by dense search, and their KB
    #: names are not encoded: a gene KB's 850k symbols and aliases would more than double
    #: the encode and the packed index for names a frozen general-English tower tells apart
    #: poorly (docs/decisions/0027-genes-linked-by-name.md)
    lexical_types: list[str] = field(default_factory=list)
    #: the annotation guidelines the model was trained under, each read as a tag token after
    #: [CLS] (:mod:`e2e_linker.collective.guidelines`); empty: no tag, chunks as before
    guidelines: list[str] = field(default_factory=list)
    #: the guideline annotate tags text with when the caller names none
    default_guideline: str | None = None

    def __post_init__(self) -> None:
        if len(set(self.guidelines)) != len(self.guidelines):
            raise UserError(f"guidelines lists a name twice: {self.guidelines}")
        if self.default_guideline is not None and self.default_guideline not in self.guidelines:
            raise UserError(f"default_guideline {self.default_guideline!r} is not one of "
                            f"guidelines ({', '.join(self.guidelines) or 'none'})")

    @classmethod
    def from_dict(cls, data: dict, source: str | os.PathLike | None = None) -> LinkerConfig:
        """The config a ``linker_config.json`` holds; a key it does not know, or a value of
        the wrong kind (``"types": 5``, ``"threshold": "x"``), is a :class:`UserError` naming
        ``source`` and the key, not an ``AttributeError`` at load or a ``TypeError`` mid-run
        (issue 47, case 10)."""
        where = f"{source}: " if source is not None else ""
        if not isinstance(data, dict):
            raise UserError(f"{where}expected a JSON object ({{...}}), found "
                            f"{type(data).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise UserError(f"{where}unknown model config keys: {', '.join(sorted(unknown))}")
        for key, value in data.items():
            if not _same_kind(value, str(known[key].type)):
                raise UserError(f"{where}{key} is {value!r}; expected "
                                f"{_kind_name(str(known[key].type))}")
        try:
            return cls(**data)
        except UserError as exc:  # a check between keys (the guidelines): name the file too
            if not where:
                raise
            raise UserError(f"{where}{exc}") from None


def _kind(annotation: str) -> tuple[str, bool]:
    """A field's annotation (a string: ``from __future__ import annotations``) as its base
    type's name and whether it takes None."""
    parts = [p.strip() for p in annotation.split("|")]
    return next((p for p in parts if p != "None"), "None"), "None" in parts


def _same_kind(value: object, annotation: str) -> bool:
    """Whether a config value fits the field's annotation (an int is a float too)."""
    base, nullable = _kind(annotation)
    if value is None:
        return nullable
    if base == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if base == "float":
        return isinstance(value, (int, float))
    if base == "int":
        return isinstance(value, int)
    if base == "str":
        return isinstance(value, str)
    if base == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True  # a kind this check does not know: the constructor decides


def _kind_name(annotation: str) -> str:
    base, nullable = _kind(annotation)
    name = {"bool": "true or false", "int": "an integer", "float": "a number",
            "str": "a string", "list[str]": "a list of strings"}.get(base, base)
    return f"{name} or null" if nullable else name


class CollectiveLinker(nn.Module):
    """Mention encoder + mention head + type head, and the entity encoder for names."""

    def __init__(self, config: LinkerConfig, encoder: TextEncoder,
                 entity_encoder: TextEncoder | None = None):
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.entity_encoder = entity_encoder if entity_encoder is not None else encoder
        #: the directory it was loaded from (None: built in memory); its pipeline.toml
        #: declares the steps annotate runs
        self.directory: Path | None = None
        if config.shared_encoder and entity_encoder is not None and entity_encoder is not encoder:
            raise ValueError("shared_encoder=True but a separate entity encoder was given")
        hidden = encoder.hidden_size
        if config.mention_head == "exhaustive":
            self.span_scorer: nn.Module = SpanScorer(hidden)
        elif config.mention_head == "bio":
            self.span_scorer = BioTagger(hidden)
        else:
            raise UserError(f"mention_head must be 'exhaustive' or 'bio', not {config.mention_head!r}")
        self.type_head = nn.Linear(hidden, max(1, len(config.types)))
        self.quantized = False
        #: per-input-channel activation absmax of the mention encoder's linear layers, read
        #: from the model directory (None if it has none); what --quantize scales by
        self.activation_stats: dict[str, torch.Tensor] | None = None
        #: "fp32" or "bf16": the mention encoder's forward in eval mode (see set_precision)
        self.precision = "fp32"

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_encoder(cls, config: LinkerConfig) -> CollectiveLinker:
        """A fresh model on top of a pretrained encoder (heads randomly initialised)."""
        encoder = TextEncoder.from_pretrained(config.encoder, pooling=config.entity_pooling,
                                              max_length=config.name_max_length)
        entity = None
        if not config.shared_encoder:
            entity = TextEncoder.from_pretrained(config.entity_encoder or config.encoder,
                                                 pooling=config.entity_pooling,
                                                 max_length=config.name_max_length)
        model = cls(config, encoder, entity)
        model.apply_freeze()
        return model

    def apply_freeze(self) -> None:
        """Stop gradients into a frozen entity tower (it then stays in eval mode)."""
        if self.config.freeze_entity_encoder:
            if self.config.shared_encoder:
                raise UserError("freeze_entity_encoder needs shared_encoder: false")
            for p in self.entity_encoder.parameters():
                p.requires_grad_(False)

    def train(self, mode: bool = True) -> CollectiveLinker:
        super().train(mode)
        if self.config.freeze_entity_encoder and self.entity_encoder is not self.encoder:
            self.entity_encoder.eval()
        return self

    @property
    def saves_entity_encoder(self) -> bool:
        """A frozen tower loaded from a name (not a run directory) is re-loaded, not copied."""
        return not self.config.shared_encoder and not (
            self.config.freeze_entity_encoder and self.config.entity_encoder)

    @property
    def tokenizer(self):
        return self.encoder.tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # ---- forward pieces -----------------------------------------------------------------
    def token_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Token states (B, T, H), always fp32; in eval mode the forward runs under
        :attr:`precision` (training keeps its own precision policy)."""
        if self.training or self.precision == "fp32":
            return self.encoder.token_states(batch["input_ids"], batch["attention_mask"])
        with autocast(self.precision, self.device):
            states = self.encoder.token_states(batch["input_ids"], batch["attention_mask"])
        return states.float()

    def set_precision(self, precision: str) -> str:
        """Run the mention encoder's inference forward in ``precision`` (``auto``, ``fp32``,
        ``bf16``; see :mod:`e2e_linker.encoder.precision`) and return the one resolved for this device.

        The entity tower is not affected: KB name vectors are cached under its weights and
        must not depend on the precision a run happens to use.
        """
        if precision == "auto" and self.quantized:
            precision = "fp32"  # int8 linear layers have no bf16 path
        self.precision = resolve_precision(precision, self.device)
        if self.precision == "bf16" and self.quantized:
            raise UserError("--precision bf16 and --quantize exclude each other")
        return self.precision

    def span_logits(self, states: torch.Tensor, batch: dict[str, torch.Tensor],
                    owned_only: bool = True, max_span_len: int | None = None) -> torch.Tensor:
        """Mention logits (B, T, L) for the exhaustive head; invalid spans get -1e4. L is
        ``max_span_len`` (default: the config's, the length the model was trained with)."""
        valid = span_validity(
            batch["attention_mask"], batch["word_start"], batch["word_end"], batch["segment"],
            batch["owned"] if owned_only else None, max_span_len or self.config.max_span_len,
        )
        return self.span_scorer(states, valid)

    def candidate_spans(self, states: torch.Tensor, batch: dict[str, torch.Tensor],
                        threshold: float, max_span_len: int | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """The batch's spans of at most ``max_span_len`` tokens (default: the config's)
        scored above ``threshold`` by this model's mention head, as ``(batch row, first token,
        last token, probability)`` tensors (None: no span).

        Why here: the exhaustive scorer and the BIO tagger decode differently (a sigmoid per
        span vs tags decoded into spans), and only the model knows which head it has; the
        annotator's detection is the same for both after this."""
        max_span_len = max_span_len or self.config.max_span_len
        if self.config.mention_head == "bio":
            probs = torch.softmax(self.span_scorer(states), -1)
            valid_tok = batch["owned"] & batch["attention_mask"].bool()
            found = decode_bio(probs, valid_tok, batch["word_start"], max_span_len,
                               threshold)
            if not found:
                return None
            device = states.device
            return (torch.tensor([f[0] for f in found], device=device),
                    torch.tensor([f[1] for f in found], device=device),
                    torch.tensor([f[2] for f in found], device=device),
                    torch.tensor([f[3] for f in found]))
        probs = torch.sigmoid(self.span_logits(states, batch, max_span_len=max_span_len))
        b, i, w = torch.nonzero(probs > threshold, as_tuple=True)
        if len(b) == 0:
            return None
        return b, i, i + w, probs[b, i, w].cpu()

    def span_vectors(self, states: torch.Tensor, b: torch.Tensor, i: torch.Tensor,
                     j: torch.Tensor) -> torch.Tensor:
        """Mean-pooled token states of spans ``(batch row b, first token i, last token j)``:
        the mention vectors that are linked against the KB's name vectors."""
        return span_vectors(states, b, i, j)

    def type_logits(self, span_vecs: torch.Tensor) -> torch.Tensor:
        """Scores of each configured entity type for each span vector.

        Computed in float64 and returned in the vectors' dtype: a span's scores must not
        depend on how many spans share its batch (docs/decisions/0034-padded-length-batches.md), and float32
        kernels for one row, a few rows and many round the last bits differently on some
        CPUs (two rows against 64 did on this project's machine); float64 sums of 384 terms
        agree to far below float32's last bit, so the rounding back gives the same float32."""
        head = self.type_head
        logits = torch.nn.functional.linear(span_vecs.double(), head.weight.double(),
                                            head.bias.double())
        return logits.to(span_vecs.dtype)

    def quantize_mention_encoder(self) -> None:
        """int8 inference of the mention encoder's linear layers (CPU): SmoothQuant scaling
        from the model directory's activation statistics, then per-channel dynamic int8
        (see :mod:`e2e_linker.encoder.quantization`, which says why plain dynamic int8 is not used).

        Why only the mention side: KB name vectors are cached under a hash of the entity
        encoder's weights, so they must come from the unquantized weights; with a shared
        encoder, build the entity index *before* calling this.
        """
        from e2e_linker.collective.model_dir import STATS_FILE
        from e2e_linker.encoder.quantization import (
            DEFAULT_ALPHA,
            quantize_int8,
            smooth,
        )

        if self.device.type != "cpu":
            raise UserError("int8 quantization runs on the CPU only")
        if self.quantized:
            return
        if not self.activation_stats:
            raise UserError(f"--quantize needs the model's activation statistics ({STATS_FILE} "
                            "in its directory): write them with `linker calibrate MODEL_DIR "
                            "CORPUS`")
        smooth(self.encoder.model, self.activation_stats, DEFAULT_ALPHA)
        self.encoder.model = quantize_int8(self.encoder.model)
        self.quantized = True

    def embed_names(self, names: list[str]) -> torch.Tensor:
        """[CLS] vectors of concept names, with gradients (training)."""
        return self.entity_encoder.embed_texts(names).float()

    # ---- persistence --------------------------------------------------------------------
    def heads_state(self) -> dict[str, torch.Tensor]:
        """The span scorer's and type head's weights (fp32, prefixed), as saved in the
        model directory's heads file."""
        state = {}
        for prefix, module in (("span_scorer", self.span_scorer), ("type_head", self.type_head)):
            for key, value in module.state_dict().items():
                state[f"{prefix}.{key}"] = value.detach().float().cpu().contiguous()
        return state

    def save(self, directory: str | os.PathLike, kb_manifest: dict | None = None,
             half: bool = False) -> None:
        """Write the checkpoint directory; ``half`` stores encoder weights as fp16."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        encoders = [("encoder", self.encoder)]
        if self.saves_entity_encoder:
            encoders.append(("entity_encoder", self.entity_encoder))
        for name, enc in encoders:
            if half:
                original = enc.model.dtype
                enc.model.half()
                enc.save(directory / name)
                enc.model.to(original)
            else:
                enc.save(directory / name)
        save_file(self.heads_state(), str(directory / HEADS_FILE))
        (directory / CONFIG_FILE).write_text(json.dumps(asdict(self.config), indent=2) + "\n")
        if kb_manifest is not None:
            (directory / MANIFEST_FILE).write_text(json.dumps(kb_manifest, indent=2) + "\n")
        (directory / NORMALIZER_SETTINGS_FILE).write_text(json.dumps({
            "pooling": self.config.entity_pooling,
            "max_length": self.config.name_max_length,
            "kb": self.config.kb,
            "kb_hash": (kb_manifest or {}).get("kb_hash"),
        }, indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | os.PathLike, device: str | torch.device = "cpu") -> CollectiveLinker:
        """Load a checkpoint directory (safetensors only; pickle files are refused)."""
        from safetensors.torch import load_file

        from e2e_linker.kb_search.shipped import require_shipped_tree

        directory = Path(directory)
        config_path = directory / CONFIG_FILE
        if not config_path.is_file():
            raise UserError(f"{directory}: not a linker model directory (no {CONFIG_FILE})")
        pickles = sorted(p.name for p in directory.rglob("*") if p.suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"))
        if pickles:
            raise UserError(f"{directory}: refusing pickle files {', '.join(pickles)}; use safetensors")
        # the package's own model: every file checked against its manifest (issue 47)
        require_shipped_tree(directory, skip=("normalizer",))
        config = LinkerConfig.from_dict(read_json_object(config_path), config_path)
        encoder = TextEncoder.from_pretrained(directory / "encoder", pooling=config.entity_pooling,
                                              max_length=config.name_max_length)
        entity = None
        if not config.shared_encoder:
            source = directory / "entity_encoder"
            if not source.is_dir():
                source = config.entity_encoder or config.encoder
            entity = TextEncoder.from_pretrained(source, pooling=config.entity_pooling,
                                                 max_length=config.name_max_length)
        model = cls(config, encoder, entity)
        model.apply_freeze()
        heads_path = directory / HEADS_FILE
        heads = load_file(str(heads_path))
        for prefix, module in (("span_scorer", model.span_scorer), ("type_head", model.type_head)):
            sub = {k[len(prefix) + 1:]: v for k, v in heads.items() if k.startswith(prefix + ".")}
            try:
                module.load_state_dict(sub)
            except RuntimeError as exc:  # missing, unexpected or resized tensors
                detail = " ".join(str(exc).split())
                raise UserError(f"{heads_path}: its {prefix} tensors do not fit the model "
                                f"{CONFIG_FILE} describes ({detail[:300]})") from exc
        model.float()
        model.activation_stats = load_stats(directory)
        model.directory = directory
        return model.to(device).eval()


