"""The JSON bodies of ``linker serve``: what ``POST /annotate`` and ``POST /normalize`` take
and give, as pydantic models (validation, and the OpenAPI schema the framework publishes).

Mentions are the records ``linker annotate --format jsonl`` writes
(:func:`data_tools.formats.mentions_jsonl.mention_records`), field for field, so a service
client and a pipeline reading the command's output read the same thing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: the document ID prefix of texts sent without IDs: ``text-1``, ``text-2``..., the IDs
#: ``linker annotate text.txt --lines`` gives the lines of a file named text.txt
TEXT_ID_PREFIX = "text"


class AnnotateRequest(BaseModel):
    """One text (``text``) or several (``texts``), optionally named (``ids``, one per text;
    default ``text-1``, ``text-2``...); ``explain`` adds why each mention got its concept;
    ``types`` keeps only mentions of those types (each one the service writes). Another
    field is refused, naming these."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, description="one text")
    texts: list[str] | None = Field(default=None, description="several texts")
    ids: list[str] | None = Field(default=None, description="a document ID per text")
    explain: bool = Field(default=False, description="add each mention's explanation: the "
                          "deciding step and the top 5 dense candidates")
    types: list[str] | None = Field(default=None, description="write only mentions of these "
                                    "types (default: every type the service writes)")

    @model_validator(mode="after")
    def _one_of_text_or_texts(self) -> AnnotateRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError("give either text or texts")
        count = 1 if self.texts is None else len(self.texts)
        if self.ids is not None:
            if len(self.ids) != count:
                raise ValueError(f"ids: {len(self.ids)} IDs for {count} texts")
            if any(not i.strip() for i in self.ids):
                raise ValueError("ids: an ID is empty")
            if len(set(self.ids)) != len(self.ids):
                raise ValueError("ids: the IDs are not unique")
        return self

    def items(self) -> list[tuple[str, str]]:
        """``(document ID, text)`` per text, in request order."""
        texts = [self.text] if self.texts is None else self.texts
        ids = self.ids or [f"{TEXT_ID_PREFIX}-{n}" for n in range(1, len(texts) + 1)]
        return list(zip(ids, texts, strict=True))


class Candidate(BaseModel):
    """One of the dense ranking's top concepts."""

    concept_id: str
    score: float | None


class Explanation(BaseModel):
    """Why a mention got its concept: the deciding ``step`` (``exact``, ``dense``,
    ``abbreviation``, a sieve step, ``text``), the ``long_form`` of a short form, and the
    dense ranking's top concepts."""

    step: str | None
    long_form: str | None = None
    candidates: list[Candidate]


class MentionRecord(BaseModel):
    """A mention as ``linker annotate --format jsonl`` writes it: ``concept_id`` namespaced
    (``MESH:D013629``, ``NCBIGene:672``), and for a gene its ``species`` (``NCBITaxon:9606``)
    and ``species_name``."""

    document: str
    start: int
    end: int
    text: str
    type: str
    concept_id: str | None
    concept_name: str | None = None
    species: str | None = Field(default=None, description="a gene's NCBI Taxonomy ID")
    species_name: str | None = Field(default=None, description="a gene's species")
    mention_score: float | None
    link_score: float | None
    confidence: float | None = Field(
        default=None, ge=0, le=1,
        description="how likely span, type and concept are all right (docs/results.md, "
                    "'One confidence'); filled for every mention the linker finds")
    explanation: Explanation | None = None


class AnnotatedDocument(BaseModel):
    """One text's mentions, in offset order."""

    id: str
    mentions: list[MentionRecord]


class AnnotateResponse(BaseModel):
    """The texts' mentions, in request order."""

    documents: list[AnnotatedDocument]


class NormalizeItem(BaseModel):
    """A mention found elsewhere: its text and (optionally) its type and, for a gene, its
    species (an NCBI Taxonomy ID such as ``10090`` or a name such as ``mouse``; default
    human)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    type: str | None = None
    species: str | None = None


class NormalizedMention(BaseModel):
    """A given mention with its concept (``concept_id`` null when nothing was linked: no
    match), namespaced, and a gene's species (``NCBITaxon:9606``, ``Homo sapiens``)."""

    text: str
    type: str
    concept_id: str | None
    concept_name: str | None
    species: str | None = None
    species_name: str | None = None
    link_score: float | None
    confidence: float | None = Field(
        default=None, ge=0, le=1,
        description="how likely the answer is right: its concept, or for no match that the "
                    "best candidate is wrong (docs/results.md, 'Confidence of a normalize "
                    "answer'); null only for an answer without a candidate (a gene no "
                    "name links)")


class NormalizeResponse(BaseModel):
    """The given mentions, linked, in request order."""

    mentions: list[NormalizedMention]


class ErrorResponse(BaseModel):
    """A refused request: one line saying why."""

    error: str
