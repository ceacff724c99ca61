"""The declared pipeline of ``linker annotate``: every step after the model scores spans,
named, ordered and parametrised in one file.

Why a package of its own: the rules that turn scored candidates into annotations (selection
floors, the lexical gate, propagation, name extension, short forms, the type and drop rules
after linking) used to be wired through five methods in three files, switched by 20 options,
with defaults in three places. Here each is a registered :class:`~e2e_linker.pipeline.step.Step`
(:mod:`~e2e_linker.pipeline.selection_steps`, :mod:`~e2e_linker.pipeline.linking_steps`,
:mod:`~e2e_linker.pipeline.annotation_steps`), a model directory's ``pipeline.toml`` declares
which run and in what order (:mod:`~e2e_linker.pipeline.declaration`), and ``--disable`` /
``--set step.param=value`` change a run. docs/architecture.md, "How to add a step", shows
one added end to end.
"""
