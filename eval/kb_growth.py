"""A KB that grows by a little costs a little (issue 26, part 3): the first run on an empty cache
with one concept added to the default KB, as a user adds their own drug.

    python -m eval.kb_growth

Why: the shipped packed index used to serve only the exact name list it was packed for, so one
line of ``--kb KB+tsv:custom.tsv`` made the first ``linker annotate`` encode every name of
the KB (about half an hour on a 2-core CPU). Now the packed index serves the names it holds and
only the added ones are encoded and searched exactly beside it
(:data:`e2e_linker.kb_search.packed_index.MAX_CHANGE`). Each job runs as a user types it, in a
fresh ``E2E_LINKER_CACHE``, with ``custom.tsv`` one line ``MYDRUG001<TAB>zorbanib``:

* ``default_kb`` — the README's main job (``linker annotate examples/bc5cdr_sample.bioc.xml -o
  out.bioc.xml --replace``, then ``linker score``) on the default KB: the reference;
* ``grown_kb`` — the same job with ``--kb KB+tsv:custom.tsv`` (KB: the default model's spec,
  :func:`default_kb_spec`) on another empty cache (the
  bound: ≤ 180 s), and whether its output is byte-identical to ``default_kb``'s (the sample does
  not mention the new drug);
* ``new_concept`` — ``echo "Patients received zorbanib daily." | linker annotate - -o - --lines
  --kb KB+tsv:custom.tsv`` on the grown job's cache: the new concept found and linked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eval.first_run import BOUND_S, EXAMPLE, cache_mb, peak_child_mb
from eval.linker_runs import REPO, linker, scores
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "kb_growth"
CUSTOM_LINE = "MYDRUG001\tzorbanib\n"
SENTENCE = "Patients received zorbanib daily."


def default_kb_spec() -> str:
    """The default model's KB spec (``bc5cdr_genes`` for the gene model): the KB a user grows
    by one line, read from the model's KB manifest so the job stays the README's."""
    from e2e_linker.collective.model_dir import default_linker_dir, read_manifest

    return str(read_manifest(default_linker_dir())["kb"])


def readme_job(tmp: Path, name: str, kb_flags: list[str]) -> dict:
    """The README's main job on an empty cache, with ``kb_flags``; its output's bytes too."""
    cache = tmp / f"cache-{name}"
    out = tmp / f"{name}.bioc.xml"
    annotate_s, _, err = linker(["annotate", str(EXAMPLE), "-o", str(out), "--replace",
                                 *kb_flags], cache)
    _, report, _ = linker(["score", str(EXAMPLE), str(out), "--json"], cache)
    return {"command": " ".join(["linker annotate examples/bc5cdr_sample.bioc.xml -o out.bioc.xml "
                                 "--replace", *kb_flags]).replace(f"{tmp}/", ""),
            "annotate_s": round(annotate_s, 1),
            "packed_index_used": "packed index shipped with the model" in err,
            "added_names_searched_beside_it": "searched exactly beside it" in err,
            "encoded_everything": "encoding every name" in err or "names not cached yet" in err,
            "strict_f1": scores(report).get("f1"), "cache_mb_on_disk": round(cache_mb(cache), 1),
            "kb_lines": [line for line in err.splitlines() if line.startswith("KB index")],
            "output": out.read_bytes()}


def new_concept(tmp: Path, custom: Path, kb: str) -> dict:
    """The one-sentence job on the grown job's cache: which concept ``zorbanib`` gets."""
    env = {**os.environ, "E2E_LINKER_CACHE": str(tmp / "cache-grown_kb")}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "e2e_linker", "annotate", "-", "-o", "-",
                           "--lines", "--kb", f"{kb}+tsv:{custom}"],
                          input=SENTENCE + "\n",
                          capture_output=True, text=True, env=env, cwd=REPO, check=True)
    seconds = time.perf_counter() - start
    mentions = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    linked = [m for m in mentions if m.get("text") == "zorbanib"]
    return {"command": f'echo "{SENTENCE}" | linker annotate - -o - --lines '
                       f"--kb {kb}+tsv:custom.tsv",
            "wall_s": round(seconds, 1), "mentions": mentions,
            "zorbanib_concept": linked[0]["concept_id"] if linked else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--keep-outputs", default=None,
                        help="a folder to copy the two annotate outputs into (to compare them "
                             "with another version's)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        custom = tmp / "custom.tsv"
        custom.write_text(CUSTOM_LINE, encoding="utf-8")
        default = readme_job(tmp, "default_kb", [])
        kb = default_kb_spec()
        grown = readme_job(tmp, "grown_kb", ["--kb", f"{kb}+tsv:{custom}"])
        sentence = new_concept(tmp, custom, kb)
    outputs = {"default_kb": default.pop("output"), "grown_kb": grown.pop("output")}
    if args.keep_outputs:
        Path(args.keep_outputs).mkdir(parents=True, exist_ok=True)
        for name, data in outputs.items():
            (Path(args.keep_outputs) / f"{name}.bioc.xml").write_bytes(data)
    same = outputs["default_kb"] == outputs["grown_kb"]
    grown["output_identical_to_default_kb"] = same
    result = {"command": command_line("kb_growth", argv), "machine": machine(),
              "bound_s": BOUND_S, "custom_tsv": CUSTOM_LINE,
              "jobs": {"default_kb": default, "grown_kb": grown, "new_concept": sentence},
              "peak_child_rss_mb": round(peak_child_mb())}
    table = ["| first run, empty cache | annotate s | ≤ 180 s | packed index used | "
             "strict F1 | cache MB |", "|---|---|---|---|---|---|"]
    for name in ("default_kb", "grown_kb"):
        job = result["jobs"][name]
        table.append(f"| {name}: `{job['command']}` | "
                     f"{job['annotate_s']} | "
                     f"{'yes' if job['annotate_s'] <= BOUND_S else '**no**'} | "
                     f"{'yes' if job['packed_index_used'] else 'no'} | "
                     f"{job['strict_f1']:.4f} | {job['cache_mb_on_disk']} |")
    table += ["", f"grown KB output byte-identical to the default KB's: {'yes' if same else 'no'}",
              "", f"`{sentence['command']}` ({sentence['wall_s']} s, warm cache): zorbanib → "
                  f"{sentence['zorbanib_concept']}"]
    write_results(args.out, result, "\n".join(table) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
