"""`linker annotate INPUT... -o OUTPUT`: find and link every mention in whole documents.

``-o out.xml`` writes one file atomically; ``-o OUTDIR`` (an existing directory, a path ending
in ``/``, or a name without a suffix) writes a resumable shard directory (see
:mod:`e2e_linker.jobs.corpus_run`), which ``--resume`` finishes after a crash. With several
processes, ``-o out.xml`` shards into ``out.xml.shards/`` beside the file and merges it at the
end (the same bytes as one process); after a crash, the same command with ``--resume``
finishes the shards and merges.

Several processes (``--num-processes N`` on one machine, or any launcher such as
``accelerate launch -m e2e_linker annotate``) share one shard directory, process ``i`` writing
the shards ``k`` with ``k % N == i`` (see :mod:`e2e_linker.jobs.distributed_run`).

Plain text: a ``.txt`` input that is not PubTator is one document (ID: the file name without
``.txt``), or one document per non-blank line with ``--lines`` (IDs ``<name>-<line>``). ``-``
as an input reads standard input (format sniffed, plain text when nothing else fits; ID
``stdin``); ``-o -`` writes standard output, in ``--format jsonl`` (one JSON object per
mention) unless another format is given, while progress and notes stay on stderr.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from e2e_linker.api import DEVICES
from e2e_linker.collective.settings import LINKINGS, AnnotateSettings
from e2e_linker.console import say
from e2e_linker.encoder.precision import PRECISIONS
from e2e_linker.kb_search.backends import SEARCH_KINDS

#: ``--precision int8``: the int8 mention encoder (``AnnotateSettings.quantize``)
INT8 = "int8"
#: ``--input-format``: auto (from each file's name, else its first bytes), or one format for
#: every input (:mod:`data_tools.formats.detect`'s names)
INPUT_FORMATS = ("auto", "bioc", "biocjson", "pubtator", "text", "text-lines")
#: the options ``linker annotate -h`` lists first (by parameter name); the rest are advanced
BASIC_OPTIONS = ("output", "model_dir", "kb", "fmt", "input_format", "types", "threshold",
                 "explain", "replace", "device")
#: the one example ``linker annotate -h`` ends with
EXAMPLE = 'echo "Tamoxifen induced hepatotoxicity." | linker annotate - -o -'


class AnnotateCommand(click.Command):
    """``linker annotate``'s help in two groups, the options most runs need and the advanced
    ones, then one example: twenty-odd options in one list hid the few a first run needs."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        groups: dict[bool, list[tuple[str, str]]] = {True: [], False: []}
        help_option = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                groups[param.name in BASIC_OPTIONS or param is help_option].append(record)
        for title, basic in (("Basic options", True), ("Advanced options", False)):
            with formatter.section(title):
                formatter.write_dl(groups[basic])

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Example"):
            formatter.write_text(f"\b\n{EXAMPLE}")
            formatter.write_text("(a sentence from standard input; one JSON object per mention "
                                 "on standard output)")


def model_fingerprint(model_dir: str | os.PathLike) -> str:
    """sha256 over every file of a model directory, so a resume never mixes two models."""
    root = Path(model_dir)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@click.command("annotate", cls=AnnotateCommand)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@click.option("-o", "--output", required=True, type=click.Path(allow_dash=True),
              help="Output file (format from --format or its extension), - for standard "
                   "output, or a directory of resumable shards (an existing directory or a name "
                   "without a suffix).")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory (default: the embedded default model).")
@click.option("--kb", default=None, help="KB spec to link against (default: the model's).")
@click.option("--format", "fmt", type=click.Choice(["bioc", "biocjson", "pubtator", "jsonl"]),
              default=None,
              help="Output format (default: from the file name; BioC XML for a directory; jsonl "
                   "for -o -). jsonl: one JSON object per mention.")
@click.option("--input-format", type=click.Choice(INPUT_FORMATS), default="auto",
              show_default=True,
              help="How the inputs are read: auto (from each file's name, else its first "
                   "bytes) or one format for all; text: a plain-text document per file; "
                   "text-lines: a document per non-blank line (IDs <file name>-<line number>).")
@click.option("--lines", is_flag=True, hidden=True, help="--input-format text-lines.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Mention threshold γ, from 0 to 1 (default: tuned).")
@click.option("--max-span-len", type=click.IntRange(min=1), default=None,
              help="Longest span scored, in word pieces (default: the model's; the shipped "
                   "model's is above the length it was trained with, chosen on dev).")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
              help="Chunks per batch.")
@click.option("--device", type=click.Choice(DEVICES), default=None,
              help="Where the model runs (default: cuda when a GPU is present, else cpu).")
@click.option("--linking", type=click.Choice(LINKINGS), default="collective", show_default=True,
              help="How detected spans are linked: collective span vectors, or text: the "
                   "normalizer's text encoder and sieves on each span's text.")
@click.option("--lexical-types", default=None,
              help="Link mentions of these types (comma-separated, e.g. Gene) by their names "
                   "only (exact names, sieves, short forms), never by dense search, and leave "
                   "their KB names unencoded (default: the model's; \"\" for none).")
@click.option("--types", default=None,
              help="Write only mentions of these types, comma-separated (e.g. "
                   "Chemical,Disease with a model that also finds genes; default: all).")
@click.option("--pipeline", default=None, metavar="NAME|FILE",
              help="A pipeline the model ships by name (bc5cdr: the BC5CDR guideline) or a "
                   "declaration (TOML) to run instead of the model's pipeline.toml "
                   "(`linker pipeline show` prints the model's).")
@click.option("--disable", default=None,
              help="Steps to leave out, comma-separated (e.g. lexical_gate,short_forms; "
                   "`linker pipeline show` lists them).")
@click.option("--set", "overrides", multiple=True, metavar="STEP.PARAM=VALUE",
              help="Set a step's parameter (repeatable), e.g. --set lexical_gate.gate=0.9; a "
                   "registered step the pipeline lacks is added (--set dictionary.threshold=0.5), "
                   "and --set STEP adds one with its defaults (--set composites).")
@click.option("--explain", is_flag=True,
              help="Say why each mention got its concept: the deciding step and the top 5 "
                   "dense candidates with scores (an explanation field in --format jsonl, "
                   "infons in BioC).")
@click.option("--replace", is_flag=True, help="Drop the input's existing annotations.")
@click.option("--cache-dir", default=None, help="Where KB vectors are cached.")
@click.option("--index", "index_kind", type=click.Choice(SEARCH_KINDS),
              default="auto", show_default=True,
              help="KB search: exact, or approximate with exact re-rank; packed: the model's "
                   "shipped shortlist index, encoding only shortlisted names (auto: packed while "
                   "the KB is not fully encoded, then by KB size and --kb-memory-budget).")
@click.option("--kb-memory-budget", "kb_memory_budget_mb",
              type=click.FloatRange(min=0, min_open=True), default=None,
              help="MB the KB index may hold in memory; drives --index auto.")
@click.option("--precision", type=click.Choice((*PRECISIONS, INT8)), default="fp32",
              show_default=True,
              help="Mention encoder forward: fp32, bf16 autocast, auto (bf16 on CUDA GPUs, fp32 "
                   "on CPUs, where bf16 was measured slower), or int8 (CPU; SmoothQuant-scaled "
                   "with the model's activation statistics, see `linker calibrate`: faster, at "
                   "a measured accuracy cost).")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise",
              show_default=True,
              help="raise: stop at the first bad document (one-line error, exit 2, no output); "
                   "skip: leave bad documents out and report each of them.")
@click.option("--shard-size", type=click.IntRange(min=1), default=None,
              help="Documents per output shard (default 1024); also where batches are cut.")
@click.option("--resume", is_flag=True,
              help="Finish a shard-directory run that was interrupted, keeping its done shards.")
@click.option("--num-processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes on this machine sharing the run (one GPU each, or CPU processes "
                   "with cores/N threads each); with -o FILE the shards go to FILE.shards/ and "
                   "are merged into FILE at the end.")
def command(inputs: tuple[str, ...], output: str, fmt: str | None, replace: bool,
            on_error: str, shard_size: int | None, resume: bool, num_processes: int,
            input_format: str = "auto", lines: bool = False, **options) -> None:
    """Annotate INPUT files (PubTator, BioC XML, BioC JSON, plain text; directories of them;
    - for standard input)."""
    from e2e_linker.errors import UserError

    if lines and input_format not in ("auto", "text-lines"):
        raise UserError(f"--lines is --input-format text-lines, not {input_format}: give one "
                        "of them")
    in_format = "text-lines" if lines else None if input_format == "auto" else input_format
    fmt = MENTIONS if fmt == "jsonl" else fmt
    to_stdout = output == "-"
    if to_stdout or "-" in inputs:
        if num_processes > 1:
            raise UserError("standard input or output (-) takes one process; drop "
                            "--num-processes")
        if resume:
            raise UserError("--resume needs files, not standard input or output (-)")
    if to_stdout:
        fmt = fmt or MENTIONS
    if fmt == MENTIONS and not to_stdout and (num_processes > 1
                                              or _is_directory_target(output)):
        raise UserError("--format jsonl writes one file (or -) from one process, not a shard "
                        "directory")
    from e2e_linker.jobs.output_checks import check_output_target  # before the model loads
    check_output_target(inputs, output)  # -o: not an input, a writable directory with room
    settings = AnnotateSettings(**settings_options(options))
    with _stdin_as_file(inputs) as paths:
        _annotate(paths, output, fmt, replace, on_error, shard_size, resume, num_processes,
                  in_format, "--lines" if lines else "--input-format text-lines", settings)


def settings_options(options: dict) -> dict:
    """The command's options as :class:`AnnotateSettings` fields (``--precision int8`` is
    ``quantize`` with an fp32 forward for what is not quantized)."""
    if options.get("precision") == INT8:
        return {**options, "precision": "fp32", "quantize": True}
    return options


#: ``linker annotate``'s canonical name for ``--format jsonl`` (one JSON object per mention)
MENTIONS = "mentions"


def _is_directory_target(output: str) -> bool:
    from e2e_linker.jobs import corpus_run

    return corpus_run.is_directory_target(output)


#: how messages name standard input (``-``), whose temporary copy the run reads
STDIN_NAME = "- (standard input)"


@contextmanager
def _stdin_as_file(inputs: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """``inputs`` with ``-`` replaced by a temporary copy of standard input, so that it is read
    (twice: checked, then annotated) and detected like any file. Its name is ``stdin`` plus the
    suffix of the format its first bytes show, ``stdin.txt`` (plain text) when none does.
    Messages name it ``- (standard input)``, never the temporary path (issue 47, case 10)."""
    if "-" not in inputs:
        yield inputs
        return
    from data_tools.documents import FormatError, shown_as
    from data_tools.formats.detect import detect_format

    folder = Path(tempfile.mkdtemp(prefix="linker-stdin-"))
    try:
        path = folder / "stdin"
        with open(path, "wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        try:
            suffix = {"bioc": ".xml", "biocjson": ".json", "pubtator": ".pubtator"}[
                detect_format(path)]
        except FormatError:
            suffix = ".txt"
        path = path.rename(path.with_suffix(suffix))
        try:
            with shown_as(path, STDIN_NAME):
                yield tuple(str(path) if item == "-" else item for item in inputs)
        except Exception as exc:  # a one-line message built from the path: name stdin there too
            from e2e_linker.errors import EXPECTED_ERRORS, UserError

            if (not isinstance(exc, EXPECTED_ERRORS) or isinstance(exc, FormatError)
                    or str(path) not in str(exc)):
                raise
            raise UserError(str(exc).replace(str(path), STDIN_NAME)) from exc
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _annotate(inputs: tuple[str, ...], output: str, fmt: str | None, replace: bool,
              on_error: str, shard_size: int | None, resume: bool, num_processes: int,
              in_format: str | None, lines_option: str, settings: AnnotateSettings) -> None:
    from data_tools.formats.detect import detect_format, expand_inputs
    from e2e_linker.api import Linker
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.errors import UserError
    from e2e_linker.jobs import corpus_run, distributed
    from e2e_linker.jobs.model_guard import loading_model

    if in_format == "text-lines":  # a BioC or PubTator file read as lines is a mistake
        for path in expand_inputs(inputs):
            found = sniffed_format(path)
            if found not in (None, "text"):
                raise UserError(f"{path}: {lines_option} reads plain text, and this file is "
                                f"{found}")
    to_directory = output != "-" and corpus_run.is_directory_target(output)
    several = num_processes > 1 or distributed.launched_distributed()
    merge_into = None  # a one-file target written through a shard directory beside it
    if not to_directory and (several or (resume and shard_directory_for(output).is_dir())):
        merge_into, fmt = output, fmt or detect_format(output, for_writing=True)
        # the trailing separator makes it a directory target for the worker processes too
        output, to_directory = f"{shard_directory_for(output)}{os.sep}", True
    if resume and not to_directory:
        raise UserError(f"--resume needs -o to be a shard directory, not the file {output} "
                        f"(nor a file whose shard directory {shard_directory_for(output)} is left "
                        "from an interrupted run with several processes)")
    if to_directory and not distributed.launched_distributed():
        corpus_run.check_run_directory(output, resume)  # before the model loads (issue 47)
    if num_processes > 1 and not distributed.launched_distributed():
        params = {**click.get_current_context().params, "output": output,
                  "fmt": "jsonl" if fmt == MENTIONS else fmt}
        args = distributed.render_argv(command, params, drop=("num_processes",))
        code = distributed.launch_local(["annotate", *args], num_processes)
        if code:
            raise SystemExit(code)  # the failing process has printed why; --resume finishes
        if merge_into is not None:
            merge_into_file(output, merge_into, fmt)
        return
    world = distributed.init_world(settings.device)
    out_format = fmt or ("bioc" if to_directory else detect_format(output, for_writing=True))
    if on_error == "raise":  # a bad document fails in seconds, not after the model and hours
        world.on_main(lambda: corpus_run.check_inputs(inputs, out_format, in_format,
                                                      progress=world.is_main))
    # the main process encodes and caches the KB vectors; the others then memory-map them
    with world.main_process_first(), loading_model(settings.model_dir):
        annotator = Linker.load(settings=settings).annotator

    from e2e_linker.collective.annotator import GroupAnnotation

    # each annotation carries its record (namespaced IDs, name, species) in every format;
    # the engine scores one group ahead (e2e_linker/jobs/lookahead.py)
    transform = GroupAnnotation(annotator, replace)

    size = shard_size or corpus_run.DEFAULT_SHARD_SIZE
    if to_directory:
        model_path = Path(settings.model_dir) if settings.model_dir else default_linker_dir()
        settings_record = run_settings(annotator.settings)
        settings_record.update(model=str(model_path.resolve()),
                               model_sha256=model_fingerprint(model_path), replace=replace,
                               precision=annotator.model.precision,
                               quantize=annotator.quantized)
        if world.distributed:
            from e2e_linker.jobs.distributed_run import run_to_directory_distributed

            report = run_to_directory_distributed(
                world, inputs, output, transform, settings=settings_record, out_format=out_format,
                in_format=in_format, on_error=on_error, shard_size=size, resume=resume)
        else:
            report = corpus_run.run_to_directory(
                inputs, output, transform, settings=settings_record, out_format=out_format,
                in_format=in_format, on_error=on_error, shard_size=size, resume=resume)
    else:
        report = corpus_run.run_to_file(inputs, output, transform, out_format=fmt,
                                        in_format=in_format, on_error=on_error,
                                        shard_size=size)
    mentions = sum(world.all_gather(annotator.stats["mentions"]))
    world.leave()
    if world.is_main:
        *skipped, summary = report.lines(output)
        for line in skipped:  # always: documents left out of the output
            click.echo(line, err=True)
        # a plain success is silent unless watched (e2e_linker/console.py); a run that left
        # documents out, or kept the shards of an interrupted one, always says so
        if report.skipped or report.resumed_shards:
            click.echo(summary, err=True)
        else:
            say(summary)
        say(f"{mentions} mentions found in this run")
        if merge_into is not None:
            merge_into_file(output, merge_into, fmt)


def sniffed_format(path: str | os.PathLike) -> str | None:
    """The format ``path``'s name or first bytes show; None when neither tells."""
    from data_tools.documents import FormatError
    from data_tools.formats.detect import detect_format

    try:
        return detect_format(path)
    except FormatError:
        return None


def run_settings(settings: AnnotateSettings) -> dict:
    """What a shard directory's manifest records of the (resolved) settings: everything that
    can change the output, so ``--resume`` never mixes two settings; where the cache lives
    does not."""
    import json
    from dataclasses import asdict

    record = asdict(settings)
    del record["cache_dir"], record["model_dir"]
    # as the manifest's JSON holds it (a tuple of types reads back as a list), so that a
    # resumed run compares like with like
    return json.loads(json.dumps(record))


def shard_directory_for(output: str | os.PathLike) -> Path:
    """Where a one-file run with several processes keeps its shards: beside the file, so an
    interrupted run is finished by the same command with ``--resume``."""
    return Path(f"{output}.shards")


def merge_into_file(directory: str, output: str, fmt: str | None) -> None:
    """Merge a finished shard directory into ``output`` (the bytes one process would have
    written) and remove the directory."""
    import shutil

    from e2e_linker.jobs.corpus_run import merge_shards

    count = merge_shards(directory, output, fmt)
    shutil.rmtree(directory)
    say(f"merged {count} documents -> {output}")
