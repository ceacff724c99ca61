"""What a compiled KB is keyed by: the content of the files its KB spec reads, the spec, the
model's mined names and the compiled format.

Why content and not sizes and times: a vocabulary file replaced by another release of the same
size, or copied with its times kept, must not be served from the old compilation. A file's
sha256 is computed once and remembered in ``digests.json`` of the compiled-KB folder under the
file's (device, inode, size, mtime, ctime); ctime cannot be set back by a user, so any rewrite
of the file hashes it again, and a start reads a few stats instead of hundreds of MB. The
record is sealed (:func:`~e2e_linker.kb_search.integrity.save_lines`): a digest changed in place
is reported and the files hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from e2e_linker.kb_search.integrity import DAMAGED, check_file, discard, report_damage, save_lines

#: where the remembered digests live, inside the compiled-KB folder
DIGESTS_FILE = "digests.json"
#: read size when hashing a file
CHUNK_BYTES = 1 << 20


def file_identity(path: Path) -> list[int]:
    """(device, inode, size, mtime, ctime) of ``path``: when any changes, it is hashed again."""
    info = os.stat(path)
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def sha256_of(path: Path) -> str:
    """The sha256 of ``path``'s bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def file_digests(paths: list[Path], folder: Path) -> list[str]:
    """The sha256 of each file, hashed only when it changed since ``folder`` last saw it (a
    missing file is a :class:`FileNotFoundError`, as the KB loaders would raise)."""
    record_path = folder / DIGESTS_FILE
    known: dict = {}
    if record_path.is_file():
        verdict = check_file(record_path, npy=False)
        if verdict.state == DAMAGED:  # a digest changed in place would pick another KB
            with contextlib.suppress(OSError):
                discard(record_path)
            report_damage(record_path, verdict.why, "discarded; the vocabulary files are "
                                                    "hashed again")
        else:
            with contextlib.suppress(OSError, ValueError):
                known = json.loads(record_path.read_text(encoding="utf-8"))
    if not isinstance(known, dict):
        known = {}
    digests, changed = [], False
    for path in paths:
        key = str(Path(path).resolve())
        identity = file_identity(Path(path))
        entry = known.get(key)
        if not (isinstance(entry, dict) and entry.get("identity") == identity):
            entry = {"identity": identity, "sha256": sha256_of(Path(path))}
            known[key], changed = entry, True
        digests.append(entry["sha256"])
    if changed:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save_lines(record_path, [json.dumps(known, indent=0, sort_keys=True) + "\n"])
        except OSError:
            pass  # a read-only cache: hashed again next time, nothing else lost
    return digests


def compiled_key(spec: str, files: list[Path], extra_names: Path | None, folder: Path,
                 format_version: str) -> tuple[str, dict]:
    """``(key, sources)`` of the compiled KB of ``spec`` (reading ``files``) plus the mined
    names in ``extra_names``. The key hashes the files' contents, the spec and the format
    version (not where the files are: the same files elsewhere give the same KB); ``sources``
    adds the paths, for ``linker kb info``."""
    digests = file_digests(files, folder)
    extra = file_digests([Path(extra_names)], folder)[0] if extra_names is not None else None
    key = hashlib.sha256(json.dumps([format_version, spec, digests, extra]).encode()
                         ).hexdigest()[:24]
    sources = {"format": format_version, "spec": spec,
               "files": [[str(Path(p).resolve()), d] for p, d in zip(files, digests,
                                                                     strict=True)],
               "extra_names": [str(Path(extra_names).resolve()), extra] if extra else None}
    return key, sources
