"""A shard-directory corpus run split over the processes of a group (issue 7).

It is :func:`e2e_linker.jobs.corpus_run.run_to_directory` with the shards dealt out: process ``i``
of ``N`` writes shard ``k`` exactly when ``k % N == i``. Shard ``k`` depends only on the
manifest and the records of shard ``k`` (groups never cross a shard, so the annotator sees the
same batches whichever process runs it), hence ``linker merge`` of the directory gives the
bytes of a one-process run. Every process reads the whole numbered record stream (skipping
other processes' records costs parsing, not annotation) so every process checks document IDs
and knows the shard numbering without talking to the others.

Coordination, all through :class:`e2e_linker.jobs.distributed.World`: the main process alone writes
(or, on ``--resume``, checks) the manifest and removes stale temporary files before anyone
writes a shard; at the end every process reports success or its error, and only when all
succeeded does the main process write ``report.json`` from the shards' done records. Resume is
per shard, so a run can be resumed with a different number of processes, or by one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from data_tools.documents import Skipped
from data_tools.formats.detect import canonical_format
from data_tools.formats.source import CorpusSource
from e2e_linker.errors import UserError
from e2e_linker.jobs.collector import loaded_objects_frozen
from e2e_linker.jobs.corpus_run import (
    DEFAULT_GROUP_SIZE,
    DEFAULT_SHARD_SIZE,
    DIRECTORY_HINT,
    LAYOUT,
    REPORT,
    GroupTransform,
    Progress,
    RunReport,
    ShardDirectory,
    Transform,
    build_manifest,
    prepare_directory,
    reported_write_errors,
    shard_records,
    skipped_record,
    write_json,
    write_shard,
)
from e2e_linker.jobs.distributed import World


def owns(world: World, shard: int) -> bool:
    """Whether this process writes ``shard`` (round robin: shard k to process k mod N)."""
    return shard % world.size == world.rank


def run_to_directory_distributed(world: World, inputs: Sequence[str | os.PathLike],
                                 output: str | os.PathLike, transform: Transform | None = None,
                                 *, settings: dict | None = None, out_format: str = "bioc",
                                 in_format: str | None = None, on_error: str = "raise",
                                 shard_size: int = DEFAULT_SHARD_SIZE,
                                 group_size: int = DEFAULT_GROUP_SIZE, resume: bool = False,
                                 progress: bool = True) -> RunReport:
    """This process's share of a shard-directory run; the main process returns the whole
    run's report, the others their own part (documents and skips of their shards). A failed
    write (disk full, ...) is one line naming the file, on the process that met it."""
    if shard_size < 1 or group_size < 1:
        raise UserError("--shard-size and the group size must be at least 1")
    out_format = canonical_format(out_format)
    source = CorpusSource(inputs, in_format, on_error)
    with reported_write_errors(DIRECTORY_HINT):
        return _run_share(world, source, output, transform, settings or {}, out_format,
                          shard_size, group_size, resume, progress)


def _run_share(world: World, source: CorpusSource, output: str | os.PathLike,
               transform: Transform | None, settings: dict, out_format: str, shard_size: int,
               group_size: int, resume: bool, progress: bool) -> RunReport:
    on_error = source.on_error

    def prepare() -> dict:
        manifest = build_manifest(source, out_format, shard_size, group_size, settings)
        prepare_directory(output, manifest, resume)
        return manifest

    manifest = world.on_main(prepare)
    directory = ShardDirectory(output, out_format)

    own = RunReport()

    def work() -> tuple[int, int]:
        report = own
        desc = f"documents (process 1 of {world.size}, shards k % {world.size} == 0)"
        bar = Progress(progress and world.is_main, desc=desc)
        shards = 0
        try:
            with loaded_objects_frozen() as settle, \
                    GroupTransform(transform, on_error, settle) as batches:
                for shard, groups in shard_records(source, shard_size, group_size):
                    shards += 1
                    record = directory.done_record(shard) \
                        if resume and owns(world, shard) else None
                    if owns(world, shard) and record is None:
                        write_shard(directory, shard, groups, batches, manifest, report, bar)
                        continue
                    for _ in groups:  # read past it: the source still checks its document IDs
                        pass
                    if record is not None:
                        report.resumed_shards += 1
                        report.documents += record["documents"]
                        report.skipped += [Skipped(**s) for s in record["skipped"]]
        finally:
            bar.close()
        report.shards = shards
        return shards, report.resumed_shards

    results = world.check_all(work)  # (shard count, shards resumed) of every process
    if not world.is_main:
        return own
    report = RunReport(shards=results[0][0], resumed_shards=sum(r for _, r in results))
    for shard in range(report.shards):  # the whole run, in shard order, from the done records
        record = directory.done_record(shard)
        if record is None:
            raise UserError(f"{directory.root}: shard {shard} was not written; rerun with "
                            "--resume")
        report.documents += record["documents"]
        report.skipped += [Skipped(**s) for s in record["skipped"]]
    write_json(directory.root / REPORT, {
        "layout": LAYOUT, "shards": report.shards, "documents": report.documents,
        "skipped": [skipped_record(s) for s in report.skipped]})
    return report
