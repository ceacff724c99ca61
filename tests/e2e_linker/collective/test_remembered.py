"""RememberedKB and RememberedNames: the KB's answers, asked once; the same answers as the KB."""

from __future__ import annotations

from data_tools.kb import KB, Concept
from e2e_linker.collective.remembered import RememberedKB, RememberedNames
from e2e_linker.lexical.sieves import NameDictionary


class Counting:
    """Counts the calls of one method of the object it wraps."""

    def __init__(self, inner, method: str):
        self.calls = 0
        self.inner = inner
        self.method = method

    def __getattr__(self, name):
        attribute = getattr(self.inner, name)
        if name != self.method:
            return attribute

        def counted(*args, **kwargs):
            self.calls += 1
            return attribute(*args, **kwargs)

        return counted


def test_a_concept_is_fetched_once():
    kb = KB([Concept("D001", "aspirin", type="Chemical"), Concept("D002", "fever",
                                                                  type="Disease")])
    counting = Counting(kb, "get")
    remembered = RememberedKB(counting)
    assert [remembered.get("D001"), remembered.get("D001"), remembered.get("MESH:D002"),
            remembered.get("D999")] == [kb.get("D001"), kb.get("D001"), kb.get("D002"), None]
    assert counting.calls == 3  # D001 once; an unknown ID is remembered too
    remembered.get("D999")
    assert counting.calls == 3


def test_names_are_looked_up_once_and_each_caller_gets_its_own_list():
    names = NameDictionary([("p53", "7157"), ("p53", "22059"), ("aspirin", "D001")],
                           {"7157": "Gene", "22059": "Gene", "D001": "Chemical"})
    counting = Counting(names, "lookup")
    remembered = RememberedNames(counting)
    first = remembered.lookup("p53", "Gene")
    assert first == names.lookup("p53", "Gene") == ["7157", "22059"]
    first.append("changed by a caller")
    assert remembered.lookup("p53", "Gene") == ["7157", "22059"]
    assert counting.calls == 1
    # the type and only_type are part of the question
    assert remembered.lookup("p53", "Chemical") == names.lookup("p53", "Chemical")
    assert remembered.lookup("p53", "Chemical", only_type=True) == []
    assert remembered.lookup("aspirin") == ["D001"]
    assert counting.calls == 4


def test_a_bounded_memory_asks_again_for_what_it_let_go():
    kb = KB([Concept(f"D{n}", f"name {n}") for n in range(4)])
    counting = Counting(kb, "get")
    remembered = RememberedKB(counting, size=2)
    for cid in ("D0", "D1", "D2", "D0"):  # D0 was let go when D2 came
        remembered.get(cid)
    assert counting.calls == 4
