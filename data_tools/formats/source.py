"""A corpus as one numbered stream of records over many files, with duplicate IDs caught.

Why: a corpus run (``linker annotate``, ``convert``, ``score``) reads many files as one
sequence and must (a) say which file every problem comes from, (b) number every record,
skipped ones included, so that shard boundaries fall on the same documents on every run and
resume, and (c) refuse a document ID seen before, since output is matched, scored and resumed
by ID. Duplicate detection keeps a 64-bit hash per ID (not the ID strings), so memory grows by
about 100 bytes per document rather than with the documents themselves.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from data_tools.documents import Document, FormatError, Skipped
from data_tools.formats.detect import expand_inputs, read_records

ON_ERROR = ("raise", "skip")


@dataclass(frozen=True)
class Record:
    """One place in the corpus sequence: its number, its file, and the document or why not."""

    number: int
    path: Path
    item: Document | Skipped


def _id_hash(doc_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest(), "big")


class CorpusSource:
    """Numbered records of ``files`` in order; see the module docstring.

    ``on_error="raise"`` turns every problem into a :class:`FormatError` naming the file and
    document/line; ``"skip"`` yields it as a :class:`Skipped` record in its place instead.
    """

    def __init__(self, paths: Iterable[str | os.PathLike], fmt: str | None = None,
                 on_error: str = "raise", strict: bool = False):
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        self.files = expand_inputs(paths)
        self.fmt = fmt
        self.on_error = on_error
        self.strict = strict

    def __iter__(self) -> Iterator[Record]:
        skip = self.on_error == "skip"
        seen: dict[int, int] = {}  # id hash -> index of the file it was first seen in
        number = 0
        for file_index, path in enumerate(self.files):
            for item in read_records(path, self.fmt, strict=self.strict, skip=skip):
                if isinstance(item, Document):
                    key = _id_hash(item.id)
                    if key in seen:
                        item = self._duplicate(item, path, self.files[seen[key]])
                    else:
                        seen[key] = file_index
                yield Record(number, path, item)
                number += 1

    def _duplicate(self, doc: Document, path: Path, first: Path) -> Skipped:
        where = "earlier in the same file" if first == path else f"in {first}"
        error = FormatError(f"duplicate document id {doc.id!r} (seen {where})", path=str(path),
                            where=f"document {doc.id}")
        if self.on_error == "raise":
            raise error
        return Skipped.from_error(error)

    def documents(self) -> Iterator[Document]:
        """Just the documents (with ``on_error="raise"`` that is every record)."""
        for record in self:
            if isinstance(record.item, Document):
                yield record.item
