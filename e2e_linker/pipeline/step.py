"""The step contract and the registry of named steps.

A step is a frozen dataclass whose fields are its parameters (their defaults are the one
place a default lives) with a name, a stage, a one-line summary and what it reads and writes
on the :class:`~e2e_linker.pipeline.batch.Batch`. ``@register`` adds it to :data:`STEPS` under
its name; a declaration (:mod:`~e2e_linker.pipeline.declaration`) names registered steps only.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from e2e_linker.errors import UserError
from e2e_linker.pipeline.batch import Batch

#: the stages, in the order they run: selection of spans from the scored candidates, the
#: linker's parts (switched on or off; :class:`~e2e_linker.collective.span_linking.SpanLinker`
#: runs them in its own fixed order), then the rules on linked annotations
STAGES = ("select", "link", "annotate")


@dataclass(frozen=True)
class Step:
    """One named step; subclasses set the class attributes and implement :meth:`run`."""

    #: the name a declaration, ``--disable`` and ``--set NAME.param=...`` use
    name: ClassVar[str] = ""
    stage: ClassVar[str] = "select"
    #: what the step does, in one line (``linker pipeline show``)
    summary: ClassVar[str] = ""
    #: the :class:`Batch` fields it reads and writes
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    #: a step the pipeline cannot run without (it cannot be disabled)
    required: ClassVar[bool] = False
    #: a step that keeps spans scored at most γ (down to its :meth:`floor`): candidates
    #: down to it stay in the running through ``score_floor``
    rescues: ClassVar[bool] = False

    def floor(self, keep: float) -> float | None:
        """The lowest mention score this step reads when γ is ``keep`` (None: only spans
        above γ): the model scores candidates down to the lowest floor of the pipeline."""
        return None

    def run(self, batch: Batch) -> None:
        """Change ``batch`` in place (a ``link`` stage step does nothing here: it switches a
        part of the linker, :meth:`linker_part`)."""

    def params(self) -> dict[str, Any]:
        """The parameters, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def check_model_types(self, model_types: Sequence[str]) -> None:
        """Raise :class:`UserError` when a parameter names a type the model has no type head
        for. Why here and not when the step is built: a declaration or ``--set`` is read
        before a model is at hand (``linker pipeline show``), and a misspelt type
        ("Chemcial") would otherwise match nothing without a word. Most steps name none."""


#: every registered step class, by name
STEPS: dict[str, type[Step]] = {}


def register(cls: type[Step]) -> type[Step]:
    """Class decorator: add a step class to :data:`STEPS` (a name may be registered once)."""
    if not cls.name or cls.stage not in STAGES:
        raise TypeError(f"{cls.__name__}: a step needs a name and one of the stages {STAGES}")
    if cls.name in STEPS and STEPS[cls.name] is not cls:
        raise TypeError(f"step name {cls.name!r} registered twice")
    STEPS[cls.name] = cls
    return cls


def registry_order() -> list[str]:
    """Every registered step's name, by stage and then in the order its module registers it:
    where a step a declaration lacks is placed when it is added."""
    return sorted(STEPS, key=lambda n: STAGES.index(STEPS[n].stage))


def parse_value(step: str, param: str, annotation: Any, text: str) -> Any:
    """``text`` (as ``--set step.param=text`` writes it) as a value of the parameter's type:
    ``none``/``null`` for an optional one, ``true``/``false`` (or on/off, yes/no, 1/0) for a
    flag, a number, or a string; a bad value is one :class:`UserError` naming the parameter."""
    kinds = typing.get_args(annotation) if isinstance(annotation, types.UnionType) \
        else (annotation,)
    lowered = text.strip().lower()
    if type(None) in kinds and lowered in ("none", "null"):
        return None
    for kind in kinds:
        if kind is bool:
            if lowered in ("true", "on", "yes", "1"):
                return True
            if lowered in ("false", "off", "no", "0"):
                return False
        elif kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                continue
        elif kind is str:
            return text
    raise UserError(f"--set {step}.{param}={text}: not a value of type "
                    f"{' or '.join(getattr(k, '__name__', str(k)) for k in kinds)}")
