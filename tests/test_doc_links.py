"""Every ``eval/results/...`` folder and every ``docs/`` page a file of the repo cites exists.

Code and docs cite decision records (``docs/decisions/NNNN-title.md``) and the result folders
behind current figures; one-off experiments live in git history (docs/history.md). This test
fails when a citation outlives what it points to. Not checked: the result folders' own records
(``eval/results/**``: the commands they ran name where those runs wrote, at the time), and paths
given as an output (``--out PATH``, ``--json PATH``), which a run creates, or at a commit
(``git show 94e8e08:eval/results/...``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

RESULT_PATH = re.compile(r"eval/results/[A-Za-z0-9_./*-]*")
DOCS_PATH = re.compile(r"(?<![A-Za-z0-9_./-])docs/[a-z0-9_./-]*[a-z0-9_-]\.md\b")
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
OUTPUT_FLAG = re.compile(r"(--out|--json|--output)[ =]\[?$")
AT_COMMIT = re.compile(r"\b[0-9a-f]{7,40}:$")  # git show 94e8e08:eval/results/...: history
SKIPPED = ("eval/results/", "runs/", ".venv/")


def _files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return [REPO / f for f in listed if not f.startswith(SKIPPED) and (REPO / f).is_file()]


def _texts():
    """``(path, text)`` of every checked file that reads as UTF-8 text."""
    for path in _files():
        try:
            yield path, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def _where(path: Path, text: str, start: int, cited: str) -> str:
    """``file:line: cited`` for a citation at offset ``start`` of ``path``'s ``text``."""
    return f"{path.relative_to(REPO)}:{text.count(chr(10), 0, start) + 1}: {cited}"


def _exists(cited: str) -> bool:
    cited = cited.rstrip(".,;:").rstrip("/") or "."
    if "*" in cited:
        return any(REPO.glob(cited))
    path = REPO / cited
    if path.exists():
        return True
    # a folder named by its prefix in code (f"eval/results/accuracy_ablation_{split}")
    return cited.endswith("_") and any(REPO.glob(cited + "*"))


def test_cited_result_folders_exist():
    missing = []
    for path, text in _texts():
        for m in RESULT_PATH.finditer(text):
            before = text[max(0, m.start() - 42):m.start()]
            if OUTPUT_FLAG.search(before) or AT_COMMIT.search(before):
                continue
            if not _exists(m.group(0)):
                missing.append(_where(path, text, m.start(), m.group(0)))
    assert not missing, "cited result folders that do not exist:\n" + "\n".join(missing)


def test_cited_docs_pages_exist():
    missing = []
    for path, text in _texts():
        cited = [(m.start(), m.group(0)) for m in DOCS_PATH.finditer(text)]
        if path.suffix == ".md":  # relative links of a Markdown page
            for m in MD_LINK.finditer(text):
                target = m.group(1)
                if "://" in target or target.startswith("mailto:"):
                    continue
                rel = (path.parent / target).resolve()
                if rel.is_relative_to(REPO) and (rel.suffix == ".md"
                                                 or rel.relative_to(REPO).parts[0] == "docs"):
                    cited.append((m.start(), rel.relative_to(REPO).as_posix()))
        for start, page in cited:
            if not (REPO / page).exists():
                missing.append(_where(path, text, start, page))
    assert not missing, "cited docs pages that do not exist:\n" + "\n".join(missing)


def test_every_decision_record_is_indexed():
    decisions = REPO / "docs" / "decisions"
    index = (decisions / "README.md").read_text(encoding="utf-8")
    records = sorted(p.name for p in decisions.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records, "no decision records"
    assert [r for r in records if f"({r})" not in index] == []
    numbers = [r[:4] for r in records]
    assert len(numbers) == len(set(numbers)), "two records share a number"
