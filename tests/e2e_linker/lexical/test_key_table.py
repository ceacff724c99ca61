"""String tables and hashed key tables: what the compiled KB's dictionaries are made of."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_linker.lexical.key_table import KeyTable, StringTable, stable_hash


def test_a_string_table_gives_back_every_string_one_by_one_and_whole():
    strings = ["aspirin", "", "Café au lait", "β-blocker 🙂", "x"]
    table = StringTable.from_strings(strings)
    assert len(table) == 5
    assert [table[i] for i in range(5)] == strings
    stored = StringTable.from_arrays(table.arrays("t"), "t")  # as read back from the arrays
    assert stored.to_list() == strings and [stored[i] for i in range(5)] == strings
    assert StringTable.from_arrays(StringTable.from_strings([]).arrays("e"), "e").to_list() == []
    with pytest.raises(ValueError):
        StringTable.from_strings(["a\x00b"])


def test_a_key_table_finds_each_run_and_nothing_else():
    runs = {"aspirin": [3, 1], "nausea": [0], "": [7], "kidney failure": [2, 2, 5]}
    table = KeyTable.from_arrays(KeyTable.from_runs(runs).arrays("k"), "k")
    for key, values in runs.items():
        assert table.get(key) == values and key in table
    assert table.get("headache") == [] and "headache" not in table
    assert np.all(np.diff(table.hashes.astype(np.float64)) >= 0)


def test_keys_are_found_whatever_the_top_bit_of_their_hash():
    # hashes at and above 2**63 are found as exactly as those below (no signed or float
    # comparison on the way)
    keys = [f"key {n}" for n in range(200)]
    assert {stable_hash(k) >= 2**63 for k in keys} == {True, False}
    table = KeyTable.from_arrays(KeyTable.from_runs({k: [n] for n, k in enumerate(keys)}
                                                    ).arrays("k"), "k")
    assert [table.row(k) is not None and table.get(k) for k in keys] == \
        [[n] for n in range(len(keys))]
    assert "key 200" not in table


def test_a_hash_collision_is_told_apart_by_the_stored_key():
    # both keys forced onto the hash of "a": the lookup checks the stored string
    table = KeyTable.from_runs({"a": [1], "b": [2]})
    table.hashes[:] = stable_hash("a")
    assert table.get("a") == [1]
    # a key that is not stored but hashes like the stored ones finds nothing
    table.hashes[:] = stable_hash("c")
    assert table.get("c") == [] and "c" not in table


def test_the_hash_is_the_same_in_another_process():
    import subprocess
    import sys

    code = "from e2e_linker.lexical.key_table import stable_hash; print(stable_hash('aspirin'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "123"}, check=True)
    assert int(out.stdout) == stable_hash("aspirin")
