"""loaded_objects_frozen: what a run has loaded is frozen once, and thawed when the run ends;
a process that froze objects of its own keeps its policy."""

from __future__ import annotations

import gc

import pytest

from e2e_linker.jobs.collector import loaded_objects_frozen


@pytest.fixture
def thawed():
    """A process with nothing frozen, whatever a test before left (and after this one)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freezes_once_and_thaws_at_the_end(thawed, monkeypatch):
    """Counted as calls of ``gc.freeze``, not as the interpreter's frozen count, which any
    thread an earlier test left running may move (a full run once saw it grow by 2 between
    two reads with no freeze of this block in between)."""
    calls = []
    real_freeze = gc.freeze

    def counted() -> None:
        calls.append(1)
        real_freeze()

    monkeypatch.setattr(gc, "freeze", counted)
    with loaded_objects_frozen() as freeze:
        assert gc.get_freeze_count() == 0 and not calls  # nothing until asked
        freeze()
        assert gc.get_freeze_count() > 0 and len(calls) == 1
        made_later = [[] for _ in range(100)]  # noqa: F841  (alive, tracked, not frozen)
        freeze()  # a later call does nothing
        assert len(calls) == 1
    assert gc.get_freeze_count() == 0


def test_thaws_when_the_run_fails(thawed):
    with pytest.raises(RuntimeError), loaded_objects_frozen() as freeze:
        freeze()
        raise RuntimeError("a run that stops")
    assert gc.get_freeze_count() == 0


def test_garbage_is_collected_before_freezing(thawed):
    """A reference cycle that is garbage when the run freezes is collected, not frozen for
    the rest of the run."""
    import weakref

    class Node:
        pass

    node = Node()
    node.self = node
    gone = weakref.ref(node)
    del node
    with loaded_objects_frozen() as freeze:
        freeze()
        assert gone() is None


def test_a_process_that_froze_its_own_objects_keeps_them(thawed):
    gc.freeze()
    before = gc.get_freeze_count()
    # frozen objects that die meanwhile leave the count: it may fall, never rise (no second
    # freeze) or drop to nothing (no thaw)
    with loaded_objects_frozen() as freeze:
        freeze()
        assert 0 < gc.get_freeze_count() <= before
    assert 0 < gc.get_freeze_count() <= before  # not thawed by the run
