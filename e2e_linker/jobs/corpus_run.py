"""Corpus runs that lose no document, survive SIGKILL and resume: the engine of ``annotate``.

A run reads a corpus as one numbered sequence of records (:class:`CorpusSource`: the input
files in order, a directory as its files in name order, every document or skipped document
taking one number) and pushes the documents through a transform (the annotator; ``None`` for
``convert``) in *groups* of at most ``group_size`` consecutive records that never cross a
*shard* boundary. Shard ``k`` is records ``[k·S, (k+1)·S)`` for the shard size ``S``. Because
groups are cut the same way whatever the output, the transform sees exactly the same batches
in every mode, so its output (floating point included) does not depend on the mode. A
two-phase transform (the annotator) is run one group ahead — the next group scored in a
worker thread while this one is finished — without changing the groups, their order or the
output (:mod:`e2e_linker.jobs.lookahead`).

Output goes to one file (``-o out.xml``: every shard streamed into one atomic writer) or to a
directory of shards (``-o OUTDIR``), laid out as::

    OUTDIR/manifest.json        what the run is: layout version, input files (path, size,
                                sha256) in reading order, input/output format, shard and group
                                size, on_error, collection info, the transform's settings
    OUTDIR/shards/00000.xml     shard 0 in the output format, a complete stand-alone file;
                                absent when every record of the shard was skipped
    OUTDIR/shards/00000.json    shard 0's done record: records, documents written, skipped
                                records, sha256 of the shard file, hash of the document IDs
    OUTDIR/report.json          written last: shard count, totals, every skipped record

Crash safety: each shard file is written to a temporary name and renamed (fsync first), and
its done record is written the same way *after* it, so a shard is complete exactly when its
record exists and the file's sha256 matches. ``--resume`` checks that the manifest is the same
(same inputs byte for byte, same settings; only ``on_error`` may change, so a run stopped by
a bad document can be finished with ``--on-error skip``), deletes stale temporary files, reads
past the records of complete shards (still checking their document IDs, so duplicates are
caught the same way) and redoes every other shard. Killing the run at any moment therefore
loses nothing and duplicates nothing. A shard ends after exactly ``S`` records, so finishing
shard ``k`` never reads shard ``k + 1`` (whose bad document must not abort shard ``k``).

Design for several processes (issue 7): shard ``k`` depends only on the manifest and the
records of shard ``k``, so N processes can share one OUTDIR, process ``i`` taking the shards
with ``k % N == i``, each reading the same numbered sequence and skipping other shards' records
(done records are per shard, so processes never write the same file). :func:`merge_shards`
then writes the shards' documents in shard order through one writer with the manifest's
collection info: the same bytes as a single-process run to one file, because writers are
deterministic functions of the document sequence and the batches were cut the same way.
That mode is :mod:`e2e_linker.jobs.distributed_run`: the main process writes the manifest (and
removes stale temporary files) before any process writes a shard, and ``report.json`` after
all of them finished.

A write that fails (disk full, quota, permissions: :class:`OutputError` from the atomic writer)
ends the run with one line naming the file and what to do (:func:`reported_write_errors`); the
same errors met while annotating stop the run instead of marking documents as skipped
(:func:`resource_error`). The ``-o`` checks made before a model loads are in
:mod:`e2e_linker.jobs.output_checks`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from data_tools.documents import Document, FormatError, Skipped, display_path
from data_tools.formats import open_writer, read_collection_info, read_documents
from data_tools.formats.atomic import (
    OutputError,
    atomic_output,
    output_error,
    remove_stale_temporaries,
)
from data_tools.formats.bioc_model import empty_info
from data_tools.formats.detect import canonical_format
from data_tools.formats.source import CorpusSource, Record
from e2e_linker.console import progress_bar, stderr_is_terminal
from e2e_linker.errors import DocumentFailed, UserError
from e2e_linker.jobs.allocator import release_freed_memory
from e2e_linker.jobs.collector import loaded_objects_frozen
from e2e_linker.jobs.host_pool import HostPool, host_workers
from e2e_linker.jobs.lookahead import Lookahead, PhasedTransform, overlap_wanted, read_ahead

LAYOUT = "e2e_linker-shards/1"
MANIFEST = "manifest.json"
REPORT = "report.json"
SHARDS = "shards"
DEFAULT_SHARD_SIZE = 1024
DEFAULT_GROUP_SIZE = 64
SUFFIXES = {"bioc": ".xml", "biocjson": ".json", "pubtator": ".txt"}

#: what a run does to each group of documents: same documents in, same order out
Transform = Callable[[list[Document]], list[Document]]

#: errors of the machine, not of a document: a full disk, a quota, a read-only file system
RESOURCE_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EROFS", "EFBIG", "EIO") if hasattr(errno, name))
#: what a failed write of a one-file run tells the user to do
FILE_HINT = "nothing was written; free some space or fix the path, then run again"
#: what a failed write of a shard-directory run tells the user to do
DIRECTORY_HINT = ("the finished shards are kept; free some space or fix the path, then rerun "
                  "with --resume")


@contextlib.contextmanager
def reported_write_errors(hint: str) -> Iterator[None]:
    """Turn a failed output write (:class:`OutputError`: disk full, permission denied, ...)
    into one line naming the file, with what to do (``hint``).

    Why: a full disk at the end of an hours-long run is the user's to fix, not a bug; it must
    read as one line and exit code 2, never as a traceback.
    """
    try:
        yield
    except OutputError as exc:
        raise UserError(f"{exc} ({hint})") from exc


def resource_error(exc: BaseException) -> UserError | None:
    """``exc`` as a one-line :class:`UserError` when the machine, not a document, caused it
    (see :data:`RESOURCE_ERRNOS`), else ``None``.

    Why: with ``--on-error skip``, a disk that fills up while the annotator writes its cache
    must stop the run, not turn every later document into a "skipped" one.
    """
    if isinstance(exc, OutputError):
        return UserError(str(exc))
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
        where = f" ({exc.filename})" if exc.filename else ""
        return UserError(f"the run stopped: {exc.strerror}{where}; free some space (or fix "
                         "the file system) and run again")
    return None


@dataclass
class RunReport:
    """What a run did; ``skipped`` lists every record that was not written, in order."""

    documents: int = 0
    shards: int = 0
    resumed_shards: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def lines(self, target: str | os.PathLike) -> list[str]:
        """What the CLI prints on stderr: one line per skipped record, then a summary."""
        resumed = f", {self.resumed_shards} shards already done" if self.resumed_shards else ""
        skipped = f", skipped {len(self.skipped)}" if self.skipped else ""
        return [f"skipped: {s.describe()}" for s in self.skipped] + [
            f"wrote {self.documents} documents{skipped}{resumed} -> {target}"]


def is_directory_target(output: str | os.PathLike) -> bool:
    """``-o`` names a shard directory when it is one, ends in ``/`` or has no suffix at all."""
    text = str(output)
    path = Path(text)
    return path.is_dir() or text.endswith(("/", os.sep)) or path.suffix == ""


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_hash(ids: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for doc_id in ids:
        digest.update(doc_id.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _collection_info(files: Sequence[Path], fmt: str | None) -> dict:
    """The first file's BioC collection info; a file too broken to tell gets none (the reader
    reports the problem itself, in its place in the sequence)."""
    if not files:
        return empty_info()
    try:
        return read_collection_info(files[0], fmt)
    except FormatError:
        return empty_info()


#: a document at least this long (characters) is announced while it is annotated: on a CPU
#: it takes minutes (a 300 KB passage: 5.6 min), and the documents bar does not move
LONG_DOCUMENT = 50_000
#: seconds between the "still annotating" lines of a long document
LONG_DOCUMENT_EVERY = 60.0


@contextlib.contextmanager
def long_document_notice(docs: Sequence[Document], every: float = LONG_DOCUMENT_EVERY
                         ) -> Iterator[None]:
    """While the block runs, name the longest document of ``docs`` on a terminal's stderr
    when it is long (:data:`LONG_DOCUMENT`), then say every ``every`` s that it is still
    being annotated, with the time spent.

    Why: a 300 KB passage took 5.6 min with nothing on the screen (issue 47, case 10); these
    lines go to stderr only when it is a terminal, so outputs and logs are unchanged.
    """
    longest = max(docs, key=lambda d: sum(len(p.text) for p in d.passages), default=None)
    size = sum(len(p.text) for p in longest.passages) if longest is not None else 0
    if longest is None or size < LONG_DOCUMENT or not stderr_is_terminal():
        yield
        return
    import sys
    import threading
    import time

    from tqdm.auto import tqdm

    tqdm.write(f"annotating document {longest.id}: {size:,} characters, a long one (minutes "
               "on a CPU)", file=sys.stderr)
    start = time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every):
            spent = int(time.monotonic() - start)
            tqdm.write(f"document {longest.id}: still annotating, {spent // 60}m{spent % 60:02d}s "
                       "so far", file=sys.stderr)

    ticker = threading.Thread(target=tick, daemon=True, name="long-document-notice")
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()


class GroupTransform:
    """Runs the transform over one group, isolating the document that makes it fail;
    ``settle`` is called after every group the transform ran on (the run's
    :func:`~e2e_linker.jobs.collector.loaded_objects_frozen`, which acts once).

    A :class:`~e2e_linker.jobs.lookahead.PhasedTransform` (the annotator) is run one group
    ahead when ``overlap`` (default: :func:`~e2e_linker.jobs.lookahead.overlap_wanted`): the
    run hands its groups through :meth:`in_order`, which begins the next group before this
    one is called. Use it as a context manager then: leaving the block ends the thread.

    With ``workers`` host workers (default: :func:`~e2e_linker.jobs.host_pool.workers_wanted`,
    none), the second phase of each group runs in one of that many forked processes
    (:mod:`e2e_linker.jobs.host_pool`) and groups are begun ``workers`` + 1 ahead; the
    results are still taken in order.
    """

    def __init__(self, transform: Transform | None, on_error: str,
                 settle: Callable[[], None] | None = None, overlap: bool | None = None,
                 workers: int | None = None):
        self.transform = transform
        self.on_error = on_error
        self.settle = settle
        #: how many host workers finish groups (0: this process)
        self.workers = host_workers(transform, workers)
        #: whether groups are begun ahead (:mod:`e2e_linker.jobs.lookahead`)
        self.overlap = isinstance(transform, PhasedTransform) and (
            self.workers > 0 or (overlap_wanted(getattr(transform, "overlap_by_default", True))
                                 if overlap is None else overlap))
        self.ahead = Lookahead()
        self.pool = HostPool(transform, self.workers) if self.workers else None

    def __enter__(self) -> GroupTransform:
        if self.pool is not None:
            self.pool.start()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.ahead.close(wait=exc_type is None)
        if self.pool is not None:
            self.pool.close(wait=exc_type is None)

    def in_order(self, groups: Iterable[list[Record]]) -> Iterator[list[Record]]:
        """``groups`` as the run calls this on them: with the overlap, each handed out after
        the next one (with host workers, the next ``workers`` + 1) was read and begun
        (:func:`~e2e_linker.jobs.lookahead.read_ahead`)."""
        if not self.overlap:
            return iter(groups)
        return read_ahead(groups, self.begin, self.workers + 1 if self.workers else 1)

    def begin(self, records: list[Record]) -> None:
        """Begin the group ``records`` (the next one called): its first phase here, the work
        that phase returns in the background; an error of either is raised when it is
        called."""
        docs = [r.item for r in records if isinstance(r.item, Document)]
        if not docs:
            return
        try:
            work = self.transform.begin(docs)
        except Exception as exc:  # noqa: BLE001  (raised by __call__, in its place)
            self.ahead.failed(records, exc)
            return
        self.ahead.start(records, functools.partial(_begun, docs, work, self.pool))

    def __call__(self, records: list[Record]) -> list[Document | Skipped]:
        docs = [r.item for r in records if isinstance(r.item, Document)]
        begun = self.ahead.take(records)
        if self.transform is None or not docs:
            out: list[Document | Skipped] = list(docs)
        else:
            try:
                with long_document_notice(docs):
                    if begun is None:
                        out = list(self.transform(docs))
                    else:  # the documents begin was given, with its work's result
                        docs, result = begun.result()
                        out = list(self.transform.finish(docs, result) if self.pool is None
                                   else self.pool.take(result))
            except UserError:
                raise
            except Exception as exc:
                if (error := resource_error(exc)) is not None:
                    raise error from exc
                out = [self._one(r) for r in records if isinstance(r.item, Document)]
        # the no-loss guarantee does not rest on the transform: same documents, same order
        got = [o.id if isinstance(o, Document) else None for o in out]
        if len(out) != len(docs) or any(
                g not in (None, d.id) for g, d in zip(got, docs, strict=True)):
            raise RuntimeError(f"the annotator returned documents {got[:5]}... for "
                               f"{[d.id for d in docs[:5]]}...: a document would be lost")
        results = iter(out)
        if self.transform is not None:
            release_freed_memory()
            if self.settle is not None:
                self.settle()
        return [r.item if isinstance(r.item, Skipped) else next(results) for r in records]

    def _one(self, record: Record) -> Document | Skipped:
        doc = record.item
        assert isinstance(doc, Document) and self.transform is not None
        try:
            return self.transform([doc])[0]
        except UserError:
            raise
        except Exception as exc:
            if (error := resource_error(exc)) is not None:
                raise error from exc
            message = f"annotating failed: {type(exc).__name__}: {exc}".splitlines()[0]
            if self.on_error == "raise":
                raise DocumentFailed(f"{display_path(record.path)}: document {doc.id}: "
                                     f"{message}") from exc
            return Skipped(str(record.path), f"document {doc.id}", message)


def _begun(docs: list[Document], work: Callable[[], object], pool: HostPool | None = None
           ) -> tuple[list[Document], object]:
    """``work``'s result with the documents it was begun for (run in the background); with a
    ``pool``, the future of the group finished from it in a host worker."""
    result = work()
    return docs, result if pool is None else pool.submit(docs, result)


def shard_records(records: Iterable[Record], shard_size: int,
                  group_size: int) -> Iterator[tuple[int, Iterator[list[Record]]]]:
    """``(shard number, its groups)``: groups are consecutive records, never across shards.

    A shard's first record is read only after the previous shard's groups were consumed, and
    a shard ends after exactly ``shard_size`` records, never by reading into the next one: an
    error in shard ``k + 1`` must not abort shard ``k`` before it is written.
    """
    records = iter(records)
    shard = 0
    while (first := next(records, None)) is not None:
        yield shard, _shard_groups(first, records, shard_size, group_size)
        shard += 1


def _shard_groups(first: Record, records: Iterator[Record], shard_size: int,
                  group_size: int) -> Iterator[list[Record]]:
    left = shard_size - 1
    group = [first]
    while True:
        want = min(group_size - len(group), left)
        more = list(itertools.islice(records, want))
        left -= len(more)
        group += more
        if group:
            yield group
        if left == 0 or len(more) < want:
            return
        group = []


class Progress:
    """A documents progress bar that can be switched off (other processes of a group)."""

    def __init__(self, enabled: bool, initial: int = 0, desc: str = "documents"):
        self.bar = None
        if enabled:  # and someone watches, or -v (e2e_linker/console.py)
            self.bar = progress_bar(desc=desc, unit="doc", initial=initial)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _write_group(writer, group: list[Record], items: list[Document | Skipped],
                 report: RunReport, on_error: str) -> list[str]:
    """Write a group's documents; one the output format cannot hold is skipped or raised,
    named by the input file it came from (``items`` are aligned with ``group``)."""
    written = []
    for record, item in zip(group, items, strict=True):
        if isinstance(item, Skipped):
            report.skipped.append(item)
            continue
        try:
            writer.write(item)
        except FormatError as exc:
            error = FormatError(f"{exc.message} (in the output {exc.path})",
                                path=str(record.path), where=f"document {item.id}")
            if on_error == "raise":
                raise error from None
            report.skipped.append(Skipped.from_error(error))
            continue
        written.append(item.id)
        report.documents += 1
    return written


class _Sink:
    """A binary/text handle that forgets what it is given (for :func:`check_inputs`)."""

    def write(self, data) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def check_inputs(inputs: Sequence[str | os.PathLike], out_format: str,
                 in_format: str | None = None, progress: bool = True) -> int:
    """Read every input document and render it in ``out_format`` without writing anything.

    Why: ``linker annotate`` stops at the first bad document, and loading a model (seconds to
    minutes) and annotating (hours on a big corpus) before meeting it would be wasted — in
    one-file mode all of it. This pass finds every problem the run would meet in the input
    (and every text the output format cannot hold) first, at reading speed, in bounded memory.
    Returns the number of documents.
    """
    from data_tools.formats.biocjson import BioCJSONWriter
    from data_tools.formats.biocxml import BioCXMLWriter
    from data_tools.formats.mentions_jsonl import MentionJSONLWriter
    from data_tools.formats.pubtator import PubTatorWriter

    out_format = canonical_format(out_format)
    sink = _Sink()
    writer = {"bioc": lambda: BioCXMLWriter(sink), "biocjson": lambda: BioCJSONWriter(sink),
              "pubtator": lambda: PubTatorWriter(sink),
              "mentions": lambda: MentionJSONLWriter(sink)}[out_format]()
    bar = Progress(progress, desc="checking input")
    count = 0
    try:
        for record in CorpusSource(inputs, in_format, "raise"):
            doc = record.item
            assert isinstance(doc, Document)
            try:
                writer.write(doc)
            except FormatError as exc:
                raise FormatError(f"{exc.message} ({out_format} output)", path=str(record.path),
                                  where=f"document {doc.id}") from None
            count += 1
            bar.update(1)
    finally:
        bar.close()
    return count


def run_to_file(inputs: Sequence[str | os.PathLike], output: str | os.PathLike,
                transform: Transform | None = None, *, out_format: str | None = None,
                in_format: str | None = None, on_error: str = "raise",
                shard_size: int = DEFAULT_SHARD_SIZE, group_size: int = DEFAULT_GROUP_SIZE,
                progress: bool = True, lossy: bool = True,
                overlap: bool | None = None, workers: int | None = None) -> RunReport:
    """Every document of ``inputs`` through ``transform`` into one file, atomically.

    Nothing is written when the run fails, or when every document was skipped. ``lossy=False``
    (``linker convert``) refuses a document the output format cannot hold whole, as a bad
    document (see ``open_writer``). ``overlap``: whether a two-phase transform runs one group
    ahead (:class:`GroupTransform`; default: on, unless switched off by the environment);
    ``workers``: host worker processes finishing groups (default: none, unless set by the
    environment; :mod:`e2e_linker.jobs.host_pool`).
    """
    source = CorpusSource(inputs, in_format, on_error)
    report = RunReport()
    bar = Progress(progress)
    try:
        with reported_write_errors(FILE_HINT), loaded_objects_frozen() as settle, open_writer(
                output, out_format, _collection_info(source.files, in_format),
                lossy=lossy) as writer, GroupTransform(transform, on_error, settle,
                                                       overlap, workers) as batches:
            # one file: the groups of every shard are one sequence (no shard is written alone)
            groups = itertools.chain.from_iterable(
                shard for _, shard in shard_records(source, shard_size, group_size))
            for group in batches.in_order(groups):
                _write_group(writer, group, batches(group), report, on_error)
                bar.update(len(group))
            if report.documents == 0:
                raise FormatError(f"no documents to write ({len(report.skipped)} skipped)",
                                  path=str(output))
    finally:
        bar.close()
    return report


# ---- shard directories -------------------------------------------------------------------

def _input_entries(files: Sequence[Path]) -> list[dict]:
    return [{"path": str(p.resolve()), "size": p.stat().st_size, "sha256": sha256_file(p)}
            for p in files]


def build_manifest(source: CorpusSource, out_format: str, shard_size: int, group_size: int,
                   settings: dict) -> dict:
    """Everything that decides a run's output; a resume must match it exactly."""
    return {"layout": LAYOUT, "inputs": _input_entries(source.files),
            "input_format": source.fmt, "output_format": out_format,
            "shard_size": shard_size, "group_size": group_size, "on_error": source.on_error,
            "collection_info": _collection_info(source.files, source.fmt),
            "settings": settings}


def _dump(obj: dict) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(path: Path, obj: dict) -> None:
    """Write ``obj`` atomically in the shard directory's JSON style (sorted, indented)."""
    with atomic_output(path) as handle:
        handle.write(_dump(obj))


def skipped_record(item: Skipped) -> dict:
    """A skipped document as ``report.json`` lists it."""
    return {"path": item.path, "where": item.where, "message": item.message}


class ShardDirectory:
    """The files of a shard directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike, out_format: str):
        self.root = Path(root)
        self.shards = self.root / SHARDS
        self.out_format = out_format

    def shard_file(self, shard: int) -> Path:
        return self.shards / f"{shard:05d}{SUFFIXES[self.out_format]}"

    def record_file(self, shard: int) -> Path:
        return self.shards / f"{shard:05d}.json"

    def done_record(self, shard: int) -> dict | None:
        """The shard's done record when the shard is complete and intact, else ``None``."""
        path = self.record_file(shard)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if record.get("file") is not None:
            data = self.shards / record["file"]
            if not data.is_file() or sha256_file(data) != record.get("sha256"):
                return None
        return record

    def remove_stale(self) -> None:
        """Temporary files of shards a killed run was writing (see ``atomic_output``); those
        a living process still writes are left alone."""
        for folder in (self.shards, self.root):
            remove_stale_temporaries(folder)


def check_run_directory(output: str | os.PathLike, resume: bool) -> None:
    """The refusals of :func:`prepare_directory` that need no manifest to compare: a run
    already there without ``--resume``, a directory holding other things.

    Why a function of its own: ``linker annotate`` calls it before the model loads (5-12 s),
    so a second run into the same shard directory is refused at once (issue 47, case 10).
    """
    root = Path(output)
    if (root / MANIFEST).is_file():
        if not resume:
            raise UserError(f"{root} already holds a run ({MANIFEST}); pass --resume to finish "
                            "it, or choose an empty directory")
    elif root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UserError(f"{root} exists and is not an empty directory; -o needs a new or empty "
                        "directory for shards")


def prepare_directory(output: str | os.PathLike, manifest: dict, resume: bool) -> ShardDirectory:
    """Create the directory (or check it on ``resume``) and write the manifest."""
    root = Path(output)
    path = root / MANIFEST
    check_run_directory(root, resume)
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UserError(f"{path}: unreadable manifest ({exc})") from None
        # on_error may change: a run stopped by a bad document (raise) is finished with skip;
        # shards done before hold no skipped record under raise, the same bytes under skip
        changed = sorted(k for k in set(old) | set(manifest)
                         if k != "on_error" and old.get(k) != manifest.get(k))
        if changed:
            raise UserError(f"{root}: cannot resume, the run differs from the one started there "
                            f"in: {', '.join(changed)}")
    else:  # new or empty (checked above). The manifest first: a run that cannot write it
        # leaves an empty directory, reusable
        _make_directory(root)
        write_json(path, manifest)
    directory = ShardDirectory(root, manifest["output_format"])
    _make_directory(directory.shards)
    directory.remove_stale()
    return directory


def _make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(exc, path) from exc


def write_shard(directory: ShardDirectory, shard: int, groups: Iterator[list[Record]],
                 batches: GroupTransform, manifest: dict, report: RunReport,
                 bar: Progress) -> None:
    """Write one shard file (only if it gets a document) and then its done record."""
    target = directory.shard_file(shard)
    first_skipped = len(report.skipped)
    ids: list[str] = []
    records = 0
    first = None
    try:
        with contextlib.ExitStack() as stack:
            writer = None
            for group in batches.in_order(groups):  # never past the shard's last group
                first = group[0].number if first is None else first
                items = batches(group)
                if writer is None and any(isinstance(i, Document) for i in items):
                    writer = stack.enter_context(open_writer(
                        target, manifest["output_format"], manifest["collection_info"]))
                ids += _write_group(writer, group, items, report, manifest["on_error"])
                records += len(group)
                bar.update(len(group))
            if writer is not None and not ids:
                raise _EmptyShard  # every document refused by the writer: no file at all
    except _EmptyShard:
        pass
    write_json(directory.record_file(shard), {
        "shard": shard, "first": first, "records": records, "documents": len(ids),
        "file": target.name if ids else None,
        "sha256": sha256_file(target) if ids else None, "ids_sha256": _ids_hash(ids),
        "skipped": [skipped_record(s) for s in report.skipped[first_skipped:]]})


class _EmptyShard(Exception):
    """Aborts a shard file that would hold no document (its temporary file is removed)."""


def run_to_directory(inputs: Sequence[str | os.PathLike], output: str | os.PathLike,
                     transform: Transform | None = None, *, settings: dict | None = None,
                     out_format: str = "bioc", in_format: str | None = None,
                     on_error: str = "raise", shard_size: int = DEFAULT_SHARD_SIZE,
                     group_size: int = DEFAULT_GROUP_SIZE, resume: bool = False,
                     progress: bool = True, overlap: bool | None = None,
                     workers: int | None = None) -> RunReport:
    """Every document of ``inputs`` through ``transform`` into a shard directory, resumably
    (``overlap``, ``workers``: as for :func:`run_to_file`)."""
    if shard_size < 1 or group_size < 1:
        raise UserError("--shard-size and the group size must be at least 1")
    out_format = canonical_format(out_format)
    source = CorpusSource(inputs, in_format, on_error)
    manifest = build_manifest(source, out_format, shard_size, group_size, settings or {})
    with reported_write_errors(DIRECTORY_HINT):
        return _run_shards(source, output, transform, manifest, resume, progress, overlap,
                           workers)


def _run_shards(source: CorpusSource, output: str | os.PathLike, transform: Transform | None,
                manifest: dict, resume: bool, progress: bool,
                overlap: bool | None = None, workers: int | None = None) -> RunReport:
    directory = prepare_directory(output, manifest, resume)
    report = RunReport()
    bar = Progress(progress)
    shard_size, group_size = manifest["shard_size"], manifest["group_size"]
    try:
        with loaded_objects_frozen() as settle, GroupTransform(
                transform, source.on_error, settle, overlap, workers) as batches:
            for shard, groups in shard_records(source, shard_size, group_size):
                report.shards += 1
                record = directory.done_record(shard) if resume else None
                if record is None:
                    write_shard(directory, shard, groups, batches, manifest, report, bar)
                    continue
                for _ in groups:  # read past it: the source still checks its document IDs
                    pass
                report.resumed_shards += 1
                report.documents += record["documents"]
                report.skipped += [Skipped(**s) for s in record["skipped"]]
                bar.update(record["records"])
    finally:
        bar.close()
    write_json(directory.root / REPORT, {
        "layout": LAYOUT, "shards": report.shards, "documents": report.documents,
        "skipped": [skipped_record(s) for s in report.skipped]})
    return report


def merge_shards(directory: str | os.PathLike, target: str | os.PathLike,
                 out_format: str | None = None) -> int:
    """The documents of a finished shard directory, in order, in one file (atomically).

    Byte-identical to a single-process run of the same settings written to ``target``'s
    format directly (see the module docstring). Returns the number of documents.
    """
    root = Path(directory)
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        finished = json.loads((root / REPORT).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UserError(f"{root}: not a finished run ({Path(exc.filename).name} missing); "
                        "finish it with linker annotate --resume") from None
    shards = ShardDirectory(root, manifest["output_format"])

    def documents() -> Iterator[Document]:
        for shard in range(finished["shards"]):
            record = shards.done_record(shard)
            if record is None:
                raise UserError(f"{root}: shard {shard} is missing or damaged; "
                                "rerun with --resume")
            if record["file"] is None:
                continue
            ids = []
            for doc in read_documents(shards.shards / record["file"], manifest["output_format"]):
                ids.append(doc.id)
                yield doc
            if _ids_hash(ids) != record["ids_sha256"]:
                raise UserError(f"{root}: shard {shard} does not hold the documents its record "
                                "lists")

    from data_tools.formats import write_documents

    with reported_write_errors(FILE_HINT):
        return write_documents(documents(), target, out_format, manifest["collection_info"])
