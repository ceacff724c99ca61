"""String tables and string-keyed lookups held in flat numpy arrays, not Python dicts.

Why: the sieves' dictionaries (every KB name folded, every compact key) hold close to a million
keys. As Python dicts they cost seconds to build and hundreds of MB on every start; as arrays
they are written once into the compiled KB (:mod:`e2e_linker.compiled_kb.store`) and read back
by memory-mapping, shared between processes through the page cache.

* :class:`StringTable` — strings as one UTF-8 blob (NUL-separated) plus byte offsets;
* :class:`KeyTable` — key → a run of int values, found by binary search over the keys' sorted
  64-bit hashes (:func:`stable_hash`, the same in every process, unlike ``hash``) and verified
  against the stored key, so a hash collision can never return another key's values.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: separates the strings of a :class:`StringTable` blob (never part of a KB text)
SEPARATOR = "\x00"


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that does not change between processes or machines."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(),
                          "little")


class StringTable:
    """A sequence of strings stored as one UTF-8 blob and ``n + 1`` byte offsets."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob = blob
        self.offsets = offsets
        self._list: list[str] | None = None

    @classmethod
    def from_strings(cls, strings: Iterable[str]) -> StringTable:
        """The table of ``strings`` (a string holding :data:`SEPARATOR` is a ``ValueError``)."""
        strings = list(strings)
        joined = SEPARATOR.join(strings)
        if joined.count(SEPARATOR) != max(len(strings) - 1, 0):
            raise ValueError("a string of a StringTable holds a NUL character")
        blob = np.frombuffer((joined + SEPARATOR).encode("utf-8") if strings else b"", np.uint8)
        offsets = np.zeros(len(strings) + 1, np.int64)
        offsets[1:] = np.flatnonzero(blob == 0) + 1  # UTF-8 has no 0 byte but NUL's own
        table = cls(blob, offsets)
        table._list = strings
        return table

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> str:
        start, end = int(self.offsets[index]), int(self.offsets[index + 1]) - 1
        return self.blob[start:end].tobytes().decode("utf-8")

    def to_list(self) -> list[str]:
        """Every string, decoded at once (kept: later calls return the same list)."""
        if self._list is None:
            if len(self) == 0:
                self._list = []
            else:
                self._list = self.blob[:-1].tobytes().decode("utf-8").split(SEPARATOR)
        return self._list

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to store, named ``<prefix>.blob`` and ``<prefix>.offsets``."""
        return {f"{prefix}.blob": self.blob, f"{prefix}.offsets": self.offsets}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> StringTable:
        return cls(arrays[f"{prefix}.blob"], arrays[f"{prefix}.offsets"])


class KeyTable:
    """String key → run of int values (in the order they were given), over flat arrays."""

    def __init__(self, hashes: np.ndarray, keys: StringTable, starts: np.ndarray,
                 values: np.ndarray):
        self.hashes = hashes
        self.keys = keys
        self.starts = starts
        self.values = values

    @classmethod
    def from_runs(cls, runs: Mapping[str, Sequence[int]]) -> KeyTable:
        """The table of ``runs`` (key → its values); keys ordered by hash."""
        keys = list(runs)
        hashes = np.fromiter((stable_hash(k) for k in keys), np.uint64, len(keys))
        order = np.argsort(hashes, kind="stable")
        keys = [keys[i] for i in order.tolist()]
        ordered = [runs[k] for k in keys]
        starts = np.zeros(len(keys) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, ordered), np.int64, len(keys)), out=starts[1:])
        values = np.fromiter(itertools.chain.from_iterable(ordered), np.int32, int(starts[-1]))
        return cls(hashes[order], StringTable.from_strings(keys), starts, values)

    def __len__(self) -> int:
        return len(self.hashes)

    def row(self, key: str) -> int | None:
        """The row of ``key``, or None when it is not in the table."""
        wanted = stable_hash(key)
        hashes = self.hashes
        # the array's own method: np.searchsorted's dispatch costs more than the search
        row = int(hashes.searchsorted(np.uint64(wanted), side="left"))
        while row < len(hashes) and int(hashes[row]) == wanted:
            if self.keys[row] == key:
                return row
            row += 1
        return None

    def get(self, key: str) -> list[int]:
        """The values of ``key`` (empty when it is not in the table)."""
        row = self.row(key)
        if row is None:
            return []
        return self.values[int(self.starts[row]):int(self.starts[row + 1])].tolist()

    def __contains__(self, key: str) -> bool:
        return self.row(key) is not None

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to store, each named ``<prefix>.<part>``."""
        return {f"{prefix}.hashes": self.hashes, f"{prefix}.starts": self.starts,
                f"{prefix}.values": self.values, **self.keys.arrays(f"{prefix}.keys")}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> KeyTable:
        return cls(arrays[f"{prefix}.hashes"], StringTable.from_arrays(arrays, f"{prefix}.keys"),
                   arrays[f"{prefix}.starts"], arrays[f"{prefix}.values"])
