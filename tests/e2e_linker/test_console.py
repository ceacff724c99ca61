"""What the linker says on stderr besides errors: nothing without a terminal, progress on a
terminal, progress and details with ``-v`` (the environment variable, so children inherit)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from e2e_linker import console
from e2e_linker.console import VERBOSE_ENV, detail, progress_bar, say, verbose_output


def _speak() -> None:
    say("a note of long work")
    detail("a routine detail")
    for _ in progress_bar(range(3), desc="counting"):
        pass
    for _ in progress_bar(range(3), desc="switched off", enabled=False):
        pass


@pytest.mark.parametrize("terminal, verbose, shown", [
    (False, "", ()),
    (True, "", ("a note of long work", "counting")),
    (False, "1", ("a note of long work", "a routine detail", "counting")),
    (True, "0", ("a note of long work", "counting")),
])
def test_who_hears_what(monkeypatch, capsys, terminal, verbose, shown):
    monkeypatch.setattr(console, "stderr_is_terminal", lambda: terminal)
    monkeypatch.setenv(VERBOSE_ENV, verbose)
    _speak()
    captured = capsys.readouterr()
    assert captured.out == ""
    for text in ("a note of long work", "a routine detail", "counting"):
        assert (text in captured.err) == (text in shown), (text, captured.err)
    assert "switched off" not in captured.err  # the caller's own switch wins
    if not shown:
        assert captured.err == ""


def test_verbose_reaches_the_processes_a_run_starts_and_ends_with_it(monkeypatch):
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    code = "from e2e_linker.console import verbose; print(verbose())"
    assert not console.verbose()
    with verbose_output():
        assert console.verbose()
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True, timeout=120, env=dict(os.environ))
        assert child.stdout.strip() == "True"
    assert not console.verbose() and VERBOSE_ENV not in os.environ
    monkeypatch.setenv(VERBOSE_ENV, "0")  # a value set before is restored, not dropped
    with verbose_output():
        assert console.verbose()
    assert os.environ[VERBOSE_ENV] == "0"


def test_a_closed_or_replaced_stderr_is_no_terminal(monkeypatch):
    class NoTTY:
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    monkeypatch.setattr(sys, "stderr", NoTTY())
    assert console.stderr_is_terminal() is False
