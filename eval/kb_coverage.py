"""How many BC5CDR test gold mentions the default model's KB can reach (the linking ceiling).

    python -m eval.kb_coverage [--kb bc5cdr] [--names bc5cdr:train bc5cdr:dev]

A mention is reachable when it has concept IDs and every one of them is in the KB.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from data_tools.documents import strip_prefix
from data_tools.registry import load_corpus
from e2e_linker.collective.model_kb import assemble_kb, mined_names


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", default="bc5cdr")
    parser.add_argument("--names", nargs="*", default=["bc5cdr:train", "bc5cdr:dev"])
    parser.add_argument("--gold", default="bc5cdr:test")
    parser.add_argument("--out", default="eval/results/kb_coverage")
    args = parser.parse_args(argv)
    kb = assemble_kb(args.kb, mined_names(args.names) if args.names else None)
    gold = load_corpus(args.gold)
    result: dict = {"kb": args.kb, "names_from": args.names, "concepts": len(kb),
                    "names": kb.num_names, "by_type": {}}
    for type_ in sorted({a.type for d in gold for a in d.annotations}):
        anns = [a for d in gold for a in d.annotations if a.type == type_]
        reach = sum(bool(a.concept_ids) and all(strip_prefix(c) in kb for c in a.concept_ids)
                    for a in anns)
        result["by_type"][type_] = {"mentions": len(anns), "reachable": reach,
                                    "ceiling": reach / len(anns)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
