"""Which links changed between two runs of the dev table, and whether each change was right.

    python -m eval.changed_links BEFORE AFTER [--examples 40] [--out DIR]

BEFORE and AFTER are prediction folders written by ``python -m eval.ood_dev --predictions DIR``
(one PubTator file a corpus, :func:`eval.ood_dev.predictions_file`), from two runs that differ
in one thing: a pipeline setting, or the code at two commits. For every corpus both hold, each
span whose link differs between the runs (a concept changed, or the span kept by one run only)
is compared with the gold annotation at that span, on the types the corpus is labelled on
(:func:`eval.ood_dev.labelled_types`), as the strict scorer compares links (span and concept
IDs: :func:`e2e_linker.scoring.kbid`):

* ``gained``: the after run's link is gold's, the before run's was not;
* ``lost``: the before run's link was gold's, the after run's is not;
* ``neither``: both wrong (or the span is no gold mention).

Why: the paired bootstrap (:mod:`eval.paired_bootstrap`) says whether a difference is more
than the dev documents' sampling; this says what it is made of. A change of a few mentions that
gains some and loses none reads as a correction, one that gains more than it loses as a trade,
and the listing shows the class each change belongs to (earlier decisions cite such listings
as one-off scripts). A corpus in one folder only is reported, not compared.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from data_tools.documents import Document
from data_tools.formats import read_documents
from data_tools.registry import load_kb
from e2e_linker.scoring import kbid
from eval.ood_dev import corpus_of_file, gold_of, labelled_types
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "dev_table" / "changed_links"
CLASSES = ("gained", "lost", "neither")


def links(docs: list[Document], types: tuple[str, ...], resolve) -> dict[tuple, tuple]:
    """Each annotation of ``types``: (document, start, end) → (its kbid, its text)."""
    return {(doc.id, a.start, a.end): (kbid(a, resolve), a.text)
            for doc in docs for a in doc.annotations if a.type in types}


def link_changes(gold: list[Document], before: list[Document], after: list[Document],
                 types: tuple[str, ...], resolve) -> list[dict]:
    """The spans whose link differs between ``before`` and ``after``, each with its class
    (:data:`CLASSES`), in document and offset order."""
    truth, old, new = (links(docs, types, resolve) for docs in (gold, before, after))
    changes = []
    for key in sorted(set(old) | set(new)):
        was, now = old.get(key), new.get(key)
        if (was and was[0]) == (now and now[0]):
            continue
        right = truth[key][0] if key in truth else None
        was_right = was is not None and was[0] == right
        now_right = now is not None and now[0] == right
        changes.append({"document": key[0], "start": key[1], "end": key[2],
                        "text": (now or was)[1], "before": was and was[0],
                        "after": now and now[0], "gold": right,
                        "class": "gained" if now_right and not was_right
                        else "lost" if was_right and not now_right else "neither"})
    return changes


def compare(before_dir: str | Path, after_dir: str | Path, examples: int) -> dict:
    """The changes of every corpus both folders hold (see the module docstring)."""
    found = {Path(before_dir): {}, Path(after_dir): {}}
    for folder, files in found.items():
        for path in sorted(folder.glob("*.pubtator")):
            files[corpus_of_file(path)] = path
        if not files:
            raise ValueError(f"{folder}: no predictions (write them with python -m "
                             f"eval.ood_dev --predictions {folder})")
    old, new = found.values()
    resolve = load_kb("bc5cdr").resolve
    rows, alone = [], sorted(set(old) ^ set(new))
    for spec in sorted(set(old) & set(new)):
        types = labelled_types(spec)
        changes = link_changes(gold_of(spec), list(read_documents(old[spec])),
                               list(read_documents(new[spec])), types, resolve)
        counts = Counter(change["class"] for change in changes)
        rows.append({"corpus": spec, "types": list(types), "changed": len(changes),
                     **{name: counts[name] for name in CLASSES},
                     "net": counts["gained"] - counts["lost"],
                     "documents": len({change["document"] for change in changes}),
                     "examples": changes[:examples]})
    return {"before": str(before_dir), "after": str(after_dir), "rows": rows,
            "in_one_folder_only": [f"{spec}: {(old.get(spec) or new.get(spec))}"
                                   for spec in alone]}


def markdown(result: dict) -> str:
    """The counts a corpus, then each corpus's changes (up to the examples kept)."""
    lines = [f"Links changed from {result['before']} to {result['after']} ({result['machine']});"
             " classes: eval/changed_links.py", "",
             "| corpus (types) | spans changed | gained | lost | neither | net | documents |",
             "|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        lines.append(f"| {row['corpus']} ({', '.join(row['types'])}) | {row['changed']} | "
                     f"{row['gained']} | {row['lost']} | {row['neither']} | {row['net']:+d} | "
                     f"{row['documents']} |")
    for item in result["in_one_folder_only"]:
        lines.append(f"\nIn one folder only (not compared): {item}")
    for row in result["rows"]:
        if row["examples"]:
            lines += ["", f"{row['corpus']}: the changes (first {len(row['examples'])})", "",
                      "| document | text | before | after | gold | class |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {c['document']} | {c['text']} | {c['before'] or '—'} | "
                      f"{c['after'] or '—'} | {c['gold'] or '—'} | {c['class']} |"
                      for c in row["examples"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="predictions folder of the first run "
                                       "(eval.ood_dev --predictions)")
    parser.add_argument("after", help="predictions folder of the second run")
    parser.add_argument("--examples", type=int, default=40,
                        help="changes listed a corpus (results.md and results.json)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    try:
        result = compare(args.before, args.after, args.examples)
    except ValueError as exc:
        parser.error(str(exc))
    result = {"command": command_line("changed_links", argv), "machine": machine(), **result}
    write_results(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
