"""The default model on a corpus it was not trained on: NCBI disease dev, diseases only.

    python -m eval.cross_corpus [--model DIR] [--disable STEP,STEP] [--set STEP.PARAM=VALUE]...
                                [--annotate-options "--types Disease"]
                                [--out eval/results/cross_corpus_ncbi]

Why: users run the linker on their own text, not on BC5CDR. NCBI disease dev (100 PubMed
abstracts, disease mentions linked to MEDIC: MeSH and OMIM IDs) is the closest second corpus
here. The run is what a user types: ``linker annotate`` on the PubTator file with the default
model and KB, then ``linker score`` with ``--kb medic`` (gold cites OMIM IDs that MEDIC lists as
alternatives of its concepts). The model also finds chemicals, which NCBI does not annotate, so
only its Disease mentions are scored (the same filter on both sides would be a no-op for gold).
Reported: strict and partial F1 and the mention-level (span only) F1, the last being how much
of the gap is detection. ``--disable``, ``--set``, ``--pipeline``, ``--threshold`` and
``--max-span-len`` are passed to ``linker annotate`` as written (as :mod:`eval.ood_dev` takes
them); ``--annotate-options`` carries any other annotate option.
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path

from data_tools.formats import read_documents, write_documents
from data_tools.registry import get_dataset
from e2e_linker.kb_search.cache import default_cache_dir
from eval.linker_runs import linker, scores
from eval.ood_dev import add_pipeline_options, annotate_flags
from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "cross_corpus_ncbi"
MODES = ("strict", "partial", "mentions")


def diseases_only(source: Path, target: Path) -> int:
    """``source`` with only its Disease annotations, written to ``target``; how many remain."""
    docs = list(read_documents(source))
    kept = 0
    for doc in docs:
        for passage in doc.passages:
            passage.annotations = [a for a in passage.annotations if a.type == "Disease"]
            kept += len(passage.annotations)
    write_documents(docs, target)
    return kept


def annotate_command(gold: str | Path, output: str | Path, model_dir: str | None,
                     args: argparse.Namespace) -> list[str]:
    """The ``linker annotate`` arguments of the run: the gold file annotated from scratch into
    ``output`` by ``model_dir`` (None: the shipped model), with the pipeline options
    (:func:`eval.ood_dev.annotate_flags`) and ``--annotate-options`` as written."""
    return ["annotate", str(gold), "-o", str(output), "--replace",
            *(["--model", model_dir] if model_dir else []), *annotate_flags(args),
            *shlex.split(args.annotate_options)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["train", "dev"])
    parser.add_argument("--model", default=None,
                        help="model directory (default: the shipped one); e.g. a run of "
                             "configs/ncbi_disease.yaml, for the in-corpus row")
    parser.add_argument("--kb-names-from", nargs="*", default=None,
                        help="rebuild the model's mined names from these corpora only (e.g. "
                             "ncbi_disease:train for a model whose KB also holds dev's names)")
    add_pipeline_options(parser)
    parser.add_argument("--annotate-options", default="",
                        help="other linker annotate options, one string (e.g. "
                             "'--types Disease --batch-size 8')")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    gold = get_dataset("ncbi_disease", args.split).path
    cache = default_cache_dir()
    with tempfile.TemporaryDirectory() as tmp:
        raw, pred = Path(tmp) / "all.pubtator", Path(tmp) / "diseases.pubtator"
        model_dir = args.model
        if args.kb_names_from is not None:
            from eval.models import model_with_names_from

            (Path(tmp) / "model").mkdir()
            model_dir = str(model_with_names_from(
                args.kb_names_from, Path(tmp) / "model",
                Path(args.model) if args.model else None))
        seconds, _, _ = linker(annotate_command(gold, raw, model_dir, args), cache)
        mentions = diseases_only(raw, pred)
        rows = {mode: scores(linker(["score", str(gold), str(pred), f"--{mode}", "--kb",
                                     "medic", "--json"], cache)[1]) for mode in MODES}
    result = {"command": command_line("cross_corpus", argv),
              "machine": machine(),
              "model": args.model or "shipped",
              "annotate_options": shlex.join([*annotate_flags(args),
                                              *shlex.split(args.annotate_options)]),
              "kb_names_from": args.kb_names_from or "the model's",
              "corpus": f"ncbi_disease:{args.split}", "predicted_disease_mentions": mentions,
              "annotate_s": round(seconds, 1), "scores": rows}
    names = (f"(KB names from {', '.join(args.kb_names_from)})" if args.kb_names_from is not None
             else "")
    label = " ".join(filter(None, [args.model or "default model", names,
                                   result["annotate_options"]]))
    lines = [f"| {label} on NCBI disease {args.split}, diseases only | "
             "P | R | F1 |",
             "|---|---|---|---|"]
    for mode, report in rows.items():
        lines.append(f"| {mode} | {report['precision']:.4f} | {report['recall']:.4f} | "
                     f"{report['f1']:.4f} |")
    write_results(args.out, result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
