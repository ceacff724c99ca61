"""A pipeline declaration: which steps run, in what order, with which parameters.

The model directory's ``pipeline.toml`` declares it (a list ``steps`` of registered step names,
then one table per step whose parameters differ from the step's defaults; for a model trained
with annotation-guideline tags, ``guideline = "NAME"``, the tag its text is read with:
:mod:`e2e_linker.collective.guidelines`); a model directory
without one gets the declaration its ``linker_config.json`` implies (:meth:`Pipeline.for_model`:
every step on by default, with the config's lexical gate, propagation, dictionary threshold and
short forms). ``--disable``, ``--enable`` and ``--set step.param=value`` change a run's copy
(:meth:`Pipeline.changed`), the one mechanism the command line, ``Linker.load``, ``linker serve``
and the evaluations share; ``linker pipeline show`` prints the result (:meth:`Pipeline.describe`).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_linker.errors import UserError
from e2e_linker.pipeline import annotation_steps, linking_steps, selection_steps
from e2e_linker.pipeline.batch import Batch
from e2e_linker.pipeline.step import STAGES, STEPS, Step, parse_value, registry_order

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport
    import tomli as tomllib

#: the file a model directory declares its pipeline in
PIPELINE_FILE = "pipeline.toml"
#: a named pipeline a model directory also ships (``--pipeline bc5cdr``: a benchmark's
#: guideline), ``pipeline.NAME.toml``
NAMED_PIPELINE = "pipeline.{}.toml"
_NAME = re.compile(r"[a-z0-9_]+")
#: the modules whose steps are registered (imported for their ``@register``)
STEP_MODULES = (selection_steps, linking_steps, annotation_steps)
#: registered steps a model directory without a ``pipeline.toml`` leaves off: each was
#: measured and lost on the dev table (docs/decisions/), is the config's to switch on, or
#: needs what not every model has (species_mentions: Species spans and species concepts;
#: learned_species: a fitted species_choice.json; gene_families: a fitted gene_families.json;
#: gene_false_alarms: a fitted gene_false_alarms.json;
#: species_usage, gene_product_genes, gene_appositions, gene_apposition_links, named_parts and
#: coordinated_genes: change the output of models made before them, so a model declares them;
#: kept_repeats: measured in docs/decisions/0054-kept-repeats.md)
OFF_UNLESS_DECLARED = ("dictionary", "long_forms", "undefined_short_forms", "gene_modifiers",
                       "species_mentions", "learned_species", "gene_families",
                       "gene_false_alarms",
                       "species_usage", "gene_product_genes", "gene_appositions",
                       "gene_apposition_links", "named_parts", "coordinated_genes",
                       "kept_repeats")


def param_types(cls: type[Step]) -> dict[str, Any]:
    """A step class's parameters and their types (the dataclass fields)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def make_step(name: str, params: Mapping[str, Any], where: str) -> Step:
    """The registered step ``name`` with ``params``; unknown names and parameters are one
    :class:`UserError` naming the accepted ones."""
    cls = STEPS.get(name)
    if cls is None:
        raise UserError(f"{where}: no step named {name!r} (steps: {', '.join(STEPS)})")
    accepted = param_types(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        said = ", ".join(accepted) if accepted else "none"
        raise UserError(f"{where}: step {name} has no parameter {', '.join(unknown)} "
                        f"(its parameters: {said})")
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: step {name}: {exc}") from exc


@dataclass(frozen=True)
class Pipeline:
    """The ordered steps of one declaration (and where it came from), and the annotation
    guideline the model reads the text under (None: the model's default)."""

    steps: tuple[Step, ...]
    source: str = "built in"
    guideline: str | None = None

    def __post_init__(self) -> None:
        names = [s.name for s in self.steps]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(f"{self.source}: step {', '.join(twice)} declared twice")
        missing = [n for n, cls in STEPS.items() if cls.required and n not in names]
        if missing:
            raise UserError(f"{self.source}: the pipeline needs the step "
                            f"{', '.join(missing)} (it cannot be left out)")
        stages = [STAGES.index(s.stage) for s in self.steps]
        if stages != sorted(stages):
            raise UserError(f"{self.source}: steps must run by stage ({', '.join(STAGES)}); "
                            f"the order {', '.join(names)} does not")

    # ---- reading -----------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str) -> Pipeline:
        """A declaration from its TOML content: ``steps`` (names, in order), a table of
        parameters for each step that needs one, and the ``guideline`` (a name)."""
        order = data.get("steps")
        if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
            raise UserError(f"{source}: 'steps' must be a list of step names")
        guideline = data.get("guideline")
        if guideline is not None and (not isinstance(guideline, str) or not guideline):
            raise UserError(f"{source}: 'guideline' must be the name of one of the model's "
                            "annotation guidelines")
        tables = {k: v for k, v in data.items() if k not in ("steps", "guideline")}
        stray = sorted(set(tables) - set(order))
        if stray:
            raise UserError(f"{source}: parameters for {', '.join(stray)}, which 'steps' does "
                            "not list")
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise UserError(f"{source}: [{name}] must be a table of parameters")
        return cls(tuple(make_step(n, tables.get(n, {}), source) for n in order), source,
                   guideline)

    @classmethod
    def from_file(cls, path: str | Path) -> Pipeline:
        """The declaration in a TOML file (one :class:`UserError` for a bad one)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UserError(f"{path}: cannot read the pipeline ({exc.strerror})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"{path}: not valid TOML ({exc})") from exc
        return cls.from_mapping(data, str(path))

    @classmethod
    def chosen(cls, spec: str | None, directory: str | Path | None, config) -> Pipeline:
        """The pipeline ``--pipeline spec`` names for the model in ``directory``: None, the
        model's own (:meth:`for_model`); a name, the model's ``pipeline.NAME.toml``
        (:func:`named_pipelines`); else a TOML file. One :class:`UserError` for a name the
        model does not ship, listing those it does."""
        if spec is None:
            return cls.for_model(directory, config)
        if _NAME.fullmatch(spec) and not Path(spec).is_file():
            found = Path(directory) / NAMED_PIPELINE.format(spec) if directory else None
            if found is None or not found.is_file():
                names = named_pipelines(directory)
                raise UserError(f"--pipeline {spec}: no such named pipeline in the model"
                                + (f" (it ships: {', '.join(names)}); " if names else "; ")
                                + "or give a TOML file")
            return cls.from_file(found)
        return cls.from_file(spec)

    @classmethod
    def for_model(cls, directory: str | Path | None, config) -> Pipeline:
        """The model directory's ``pipeline.toml``, or the declaration its config implies
        (``config``: a :class:`~e2e_linker.collective.model.LinkerConfig`) — every registered
        step but :data:`OFF_UNLESS_DECLARED`, in registry order, with the config's lexical
        gate, propagation and dictionary thresholds (None: off), short forms, exact-name
        sieve and abbreviation links."""
        if directory is not None and (Path(directory) / PIPELINE_FILE).is_file():
            return cls.from_file(Path(directory) / PIPELINE_FILE)
        on = {n: {} for n in STEPS if n not in OFF_UNLESS_DECLARED}
        for name, value in (("lexical_gate", config.lexical_gate),
                            ("propagation", config.propagation_threshold),
                            ("dictionary", config.dictionary_threshold)):
            if value is None:
                on.pop(name, None)
            else:
                key = "gate" if name == "lexical_gate" else "threshold"
                on[name] = {key: float(value)}
        for name, flag in (("short_forms", config.short_forms),
                           ("exact_name", config.exact_match_sieve),
                           ("abbreviation_links", config.resolve_abbreviations)):
            if not flag:
                on.pop(name)
        source = f"{directory or 'the model'}'s linker_config.json (no {PIPELINE_FILE})"
        return cls(tuple(make_step(n, on[n], source) for n in registry_order() if n in on),
                   source)

    @classmethod
    def every_step(cls) -> Pipeline:
        """Every registered step with its defaults, in registry order (what changes are
        checked against before a model is at hand: :func:`check_changes`)."""
        return cls(tuple(make_step(n, {}, "the registry") for n in registry_order()),
                   "every registered step")

    # ---- changing ----------------------------------------------------------------------------
    def changed(self, disable: Iterable[str] = (), enable: Iterable[str] = (),
                overrides: Iterable[str] = ()) -> Pipeline:
        """A copy with the ``disable`` steps left out, the ``enable`` steps added where the
        registry places them, and each ``step.param=value`` of ``overrides`` set (a registered
        step it names that the pipeline lacks is added first; an override that is a step's
        bare name adds that step with its defaults: the one way to switch on a step without
        parameters from the command line)."""
        steps = list(self.steps)
        for name in disable:
            if name not in STEPS:
                raise UserError(f"--disable {name}: no such step (steps: {', '.join(STEPS)})")
            if STEPS[name].required:
                raise UserError(f"--disable {name}: the pipeline cannot run without it")
            steps = [s for s in steps if s.name != name]
        for name in enable:
            if name not in STEPS:
                raise UserError(f"--enable {name}: no such step (steps: {', '.join(STEPS)})")
            add_step(steps, name, "--enable")
        for item in overrides:
            target, eq, text = item.partition("=")
            step_name, dot, param = target.strip().partition(".")
            if not eq and not dot and step_name in STEPS:  # --set STEP: added, its defaults
                add_step(steps, step_name, f"--set {item}")
                continue
            if not eq or not dot or not param:
                raise UserError(f"--set {item}: expected step.param=value, or a step name "
                                "to add it with its defaults")
            if step_name not in STEPS:
                raise UserError(f"--set {item}: no step named {step_name} "
                                f"(steps: {', '.join(STEPS)})")
            types = param_types(STEPS[step_name])
            if param not in types:
                said = ", ".join(types) if types else "none"
                raise UserError(f"--set {item}: step {step_name} has no parameter {param} "
                                f"(its parameters: {said})")
            where = add_step(steps, step_name, f"--set {item}")
            value = parse_value(step_name, param, types[param], text)
            steps[where] = make_step(step_name, {**steps[where].params(), param: value},
                                     f"--set {item}")
        return Pipeline(tuple(steps), self.source, self.guideline)

    def check_model_types(self, model_types: Sequence[str]) -> None:
        """Raise :class:`UserError` when a step's parameter names a type the model lacks
        (:meth:`Step.check_model_types`): called once a model is at hand."""
        for step in self.steps:
            step.check_model_types(model_types)

    # ---- asking ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """The step names, in order (``nlp.pipe_names``)."""
        return [s.name for s in self.steps]

    def has(self, name: str) -> bool:
        """Whether the step ``name`` is declared (a linker part: whether it is switched on)."""
        return any(s.name == name for s in self.steps)

    def get(self, name: str) -> Step | None:
        """The declared step ``name`` (None: not declared)."""
        return next((s for s in self.steps if s.name == name), None)

    def stage(self, stage: str) -> list[Step]:
        """The steps of one stage, in order."""
        return [s for s in self.steps if s.stage == stage]

    def selection_floor(self, keep: float) -> float:
        """The score candidates stay in the running down to: γ, or a rescue step's floor."""
        return min([keep, *(f for s in self.steps if s.rescues
                            and (f := s.floor(keep)) is not None)])

    def detection_floor(self, keep: float) -> float:
        """The score the model must score candidates down to: every step's floor and γ."""
        return min([keep, *(f for s in self.steps if (f := s.floor(keep)) is not None)])

    def rule_steps(self) -> list[str]:
        """The steps that can be switched off: an ablation's rows."""
        return [s.name for s in self.steps if not s.required]

    def describe(self) -> str:
        """The resolved order, a line a step: stage, name, parameters, what it does."""
        lines = [f"pipeline from {self.source}:"]
        if self.guideline is not None:
            lines.append(f"    text read under the annotation guideline {self.guideline}")
        for k, step in enumerate(self.steps, 1):
            params = " ".join(f"{n}={v}" for n, v in step.params().items())
            core = " (required)" if step.required else ""
            lines.append(f"{k:2d}. {step.stage:<8} {step.name:<22} {params}{core}")
            lines.append(f"    {step.summary}")
        return "\n".join(lines)

    # ---- running -----------------------------------------------------------------------------
    def run_stage(self, stage: str, batch: Batch) -> None:
        """Run one stage's steps on ``batch``, in order."""
        for step in self.stage(stage):
            step.run(batch)

    def to_toml(self) -> str:
        """The declaration as ``pipeline.toml`` text (parameters that differ from a step's
        defaults only)."""
        lines = [f"guideline = {toml_value(self.guideline)}", ""] \
            if self.guideline is not None else []
        lines += ["steps = ["] + [f'    "{n}",' for n in self.names] + ["]"]
        for step in self.steps:
            defaults = type(step)()
            changed = {n: v for n, v in step.params().items() if getattr(defaults, n) != v}
            if changed:
                lines += ["", f"[{step.name}]"] + [f"{n} = {toml_value(v)}"
                                                    for n, v in changed.items()]
        return "\n".join(lines) + "\n"


def named_pipelines(directory: str | Path | None) -> list[str]:
    """The names of the pipelines a model directory ships beside its own
    (``pipeline.NAME.toml``), sorted."""
    if directory is None or not Path(directory).is_dir():
        return []
    prefix, suffix = NAMED_PIPELINE.split("{}")
    return sorted(p.name[len(prefix):-len(suffix)] for p in Path(directory).iterdir()
                  if p.name.startswith(prefix) and p.name.endswith(suffix)
                  and _NAME.fullmatch(p.name[len(prefix):-len(suffix)]))


def check_changes(disable: Iterable[str] = (), enable: Iterable[str] = (),
                  overrides: Iterable[str] = ()) -> None:
    """Raise the :class:`UserError` that :meth:`Pipeline.changed` would for these changes, now
    (before minutes of loading): unknown steps or parameters, bad values, required steps."""
    Pipeline.every_step().changed(disable, enable, overrides)


def add_step(steps: list[Step], name: str, where: str) -> int:
    """The position of the step ``name`` in ``steps``, added with its defaults where the
    registry's order places it when it is not there yet."""
    found = next((k for k, s in enumerate(steps) if s.name == name), None)
    if found is not None:
        return found
    rank = {n: k for k, n in enumerate(registry_order())}
    at = next((k for k, s in enumerate(steps) if rank[s.name] > rank[name]), len(steps))
    steps.insert(at, make_step(name, {}, where))
    return at


def toml_value(value: Any) -> str:
    """A parameter value as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def step_names(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"a,b"`` (as ``--disable a,b`` writes it) or a list, as a tuple of names."""
    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    return tuple(n.strip() for n in items if n and n.strip())
