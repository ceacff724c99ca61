"""Reproduce Xu & Bethard (2021) Tables 4 and 5 for the text-only normalizer, on our data.

    python -m eval.normalization_tables --out eval/results/normalization \\
        [--model Train:OD=runs/triplet_medic@BC5CDR-D,NCBI ...] [--no-untrained] [--quick]

Tasks (gold mention spans, Acc@1; a composite counts only if every part is right):

* BC5CDR-D — Disease mentions, KB MEDIC; dev and test.
* BC5CDR-C — Chemical mentions, KB MeSH chemical descriptors + supplementary records; dev, test.
* NCBI     — all mentions, KB MEDIC; dev only (the test split is held out).

For dev the D pool (training mentions) is the train split; for test it is train + dev, as
when a system is retrained on all labelled data. Tables written (JSON + Markdown):

* Table 4 — dev, all 14 search modes, for every model: the untrained base encoder
  ("No training") and each ``--model`` (e.g. Train:O, Train:OD triplet models);
* Table 5 — test, all 14 modes;
* refined test — test mentions whose normalised text also occurs in train/dev removed;
* preprocessing ablation — dev, each model's best mode, one step switched off at a time;
* KB-coverage ceiling — share of mentions whose gold IDs are all in the KB, or in KB ∪ D.

``--quick`` runs on the first 40 documents of each split, uses MeSH chemical descriptors only
(no supplementary records) and limits the ablation to BC5CDR-D: a smoke test, not results.
KB vectors are cached (see e2e_linker.kb_search.cache.VectorStore), so reruns are fast.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from data_tools.documents import Document, strip_prefix
from e2e_linker.kb_search.concept_search import MODES

PAPER_NOTE = ("Xu & Bethard (2021) report BC5CDR-D 93.3 / BC5CDR-C 95.8 / NCBI 92.4 test "
              "Acc@1 for their best Train:OD (BioBERT/PubMedBERT-sized) models.")


@dataclass
class Task:
    name: str
    corpus: str
    types: list[str] | None
    kb: str
    splits: tuple[str, ...]


TASKS = [
    Task("BC5CDR-D", "bc5cdr", ["Disease"], "medic", ("dev", "test")),
    Task("BC5CDR-C", "bc5cdr", ["Chemical"], "mesh_chemical", ("dev", "test")),
    Task("NCBI", "ncbi_disease", None, "medic", ("dev",)),
]


def keep_types(docs: list[Document], types: list[str] | None) -> list[Document]:
    """Deep copies holding only annotations of ``types`` (all when None)."""
    out = copy.deepcopy(docs)
    if types is not None:
        for doc in out:
            for passage in doc.passages:
                passage.annotations = [a for a in passage.annotations if a.type in types]
    return out


def load_kb_for(kb: str, quick: bool):
    from data_tools.kb_loaders import load_mesh_descriptors
    from data_tools.registry import MESH_DESC, load_kb, vocab_path

    if quick and kb == "mesh_chemical":
        return load_mesh_descriptors(vocab_path(*MESH_DESC), trees="D")
    return load_kb(kb)


def gold_sets(docs: list[Document], resolve: Callable[[str], str]) -> list[frozenset[str] | None]:
    """Per annotation (in document order): the resolved gold IDs, or None when not scored."""
    from e2e_linker.scoring import is_scored

    out: list[frozenset[str] | None] = []
    for doc in docs:
        for ann in doc.annotations:
            ids = frozenset(resolve(strip_prefix(c)) for c in ann.concept_ids if c.strip())
            out.append(ids if ids and is_scored(ann) else None)
    return out


def correctness(gold: list[frozenset[str] | None], predictions,
                resolve: Callable[[str], str]) -> list[bool | None]:
    return [None if g is None else frozenset(resolve(c) for c in p.concept_ids) == g
            for g, p in zip(gold, predictions, strict=True)]


def accuracy(flags: list[bool | None], subset: list[bool] | None = None) -> dict:
    scored = [f for i, f in enumerate(flags)
              if f is not None and (subset is None or subset[i])]
    return {"acc": round(sum(scored) / len(scored), 4) if scored else None, "n": len(scored)}


class Runner:
    """Holds corpora and KBs across models so each is read once."""

    def __init__(self, quick: bool, cache_dir: str | None, progress: bool):
        self.quick = quick
        self.cache_dir = cache_dir
        self.progress = progress
        self._docs: dict[tuple[str, str], list[Document]] = {}
        self._kbs: dict[str, object] = {}

    def docs(self, corpus: str, split: str) -> list[Document]:
        from data_tools.registry import load_corpus

        key = (corpus, split)
        if key not in self._docs:
            self._docs[key] = load_corpus(f"{corpus}:{split}", limit=40 if self.quick else None)
        return self._docs[key]

    def kb(self, spec: str):
        if spec not in self._kbs:
            self._kbs[spec] = load_kb_for(spec, self.quick)
        return self._kbs[spec]

    def training_docs(self, task: Task, split: str) -> list[Document]:
        sources = ["train"] if split == "dev" else ["train", "dev"]
        return [d for s in sources for d in keep_types(self.docs(task.corpus, s), task.types)]

    def run_split(self, encoder, task: Task, split: str, modes, **options) -> tuple[dict, list]:
        """Per-mode per-annotation correctness for one task split, plus the gold sets."""
        from e2e_linker.normalizer.normalizer import NormalizeOptions, Normalizer

        kb = self.kb(task.kb)
        gold = keep_types(self.docs(task.corpus, split), task.types)
        pred = copy.deepcopy(gold)
        opts = NormalizeOptions(progress=self.progress, **options)
        normalizer = Normalizer(encoder, kb, self.training_docs(task, split), opts,
                                self.cache_dir)
        queries = normalizer.queries(pred)
        ranked = normalizer.rank(queries, list(modes))
        golds = gold_sets(gold, kb.resolve)
        flags = {m: correctness(golds, ranked[m], kb.resolve) for m in modes}
        # cross-check our per-mention accounting against the project's scorer once
        from e2e_linker.scoring import score

        first = next(iter(modes))
        normalizer.apply(queries, ranked[first])
        report = score(gold, pred, mode="accuracy", resolve=kb.resolve)
        mine = accuracy(flags[first])
        if mine["n"] != report.n or abs((mine["acc"] or 0) - report.accuracy) > 1e-4:
            raise AssertionError(f"accuracy mismatch {mine} vs {report.accuracy}/{report.n}")
        return flags, [normalizer.text(a.text) for d in gold for a in d.annotations]


def refined_subset(runner: Runner, task: Task, texts: list[str]) -> list[bool]:
    """True for test mentions whose normalised text never occurs in train or dev."""
    from e2e_linker.lexical.text_forms import TextNormalizer

    fold = TextNormalizer()
    seen = {fold(a.text) for d in runner.training_docs(task, "test") for a in d.annotations}
    return [fold(t) not in seen for t in texts]


def ceiling(runner: Runner, task: Task, split: str) -> dict:
    """Share of scored mentions whose gold IDs are all in the KB / in KB ∪ D labels."""
    kb = runner.kb(task.kb)
    gold = gold_sets(keep_types(runner.docs(task.corpus, split), task.types), kb.resolve)
    d_ids = {kb.resolve(strip_prefix(c)) for doc in runner.training_docs(task, split)
             for a in doc.annotations for c in a.concept_ids}
    scored = [g for g in gold if g is not None]
    in_kb = sum(all(c in kb.concepts for c in g) for g in scored)
    in_kbd = sum(all(c in kb.concepts or c in d_ids for c in g) for g in scored)
    n = len(scored)
    return {"n": n, "kb": round(in_kb / n, 4) if n else None,
            "kb_or_training": round(in_kbd / n, 4) if n else None}


ABLATIONS = {
    "full": {},
    "no composite splitting": {"composite": "never"},
    "always split composites": {"composite": "always"},
    "no abbreviation resolution": {"abbreviations": False},
    "no inferred abbreviations": {"inferred_abbreviations": False},
    "no lexical sieve": {"lexical": False},
    "no case/punctuation folding": {"lowercase": False, "punctuation": False},
}


def load_models(specs: list[str], untrained: bool
                ) -> list[tuple[str, str | None, set[str] | None]]:
    """``[(label, path or None for the base encoder, tasks or None for all)]``.

    Specs are ``DIR``, ``LABEL=DIR`` or either followed by ``@TASK,TASK`` (e.g. a disease
    model evaluated on ``@BC5CDR-D,NCBI`` only).
    """
    models: list[tuple[str, str | None, set[str] | None]] = \
        [("No training", None, None)] if untrained else []
    for spec in specs:
        spec, _, only = spec.partition("@")
        label, _, path = spec.rpartition("=")
        if not label:
            from e2e_linker.normalizer.normalizer_dir import NORMALIZER_FILE

            meta = Path(path) / NORMALIZER_FILE
            data = json.loads(meta.read_text()) if meta.is_file() else {}
            label = f"Train:{data['training_data']}" if "training_data" in data else Path(path).name
        models.append((label, path, set(only.split(",")) if only else None))
    return models


def markdown(results: dict) -> str:
    lines = ["# Text-only normalizer (Xu & Bethard 2021) on BC5CDR and NCBI", "",
             f"Command: `{results['command']}`  ", f"Machine: {results['machine']}  ",
             f"Quick: {results['quick']}. {PAPER_NOTE}", "",
             "Models: " + "; ".join(
                 f"{label} = {m['path'] or 'all-MiniLM-L6-v2 (untrained, mean pooling)'} "
                 f"(lowercase {m['lowercase']}, punctuation folding {m['punctuation']})"
                 for label, m in results["models"].items()), ""]

    def mode_table(title: str, table: dict) -> None:
        columns = [(task, model) for task in table for model in table[task]]
        if not columns:
            return
        lines.extend([f"## {title}", "",
                      "| mode | " + " | ".join(f"{t} {m}" for t, m in columns) + " |",
                      "|---" * (len(columns) + 1) + "|"])
        for mode in MODES:
            cells = []
            for task, model in columns:
                acc = table[task][model].get(mode, {}).get("acc")
                cells.append("" if acc is None else f"{acc:.4f}")
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
        ns = [str(table[t][m][MODES[0]]["n"]) for t, m in columns]
        lines.extend(["| n | " + " | ".join(ns) + " |", ""])

    mode_table("Table 4: dev Acc@1 (all search modes)", results["table4"])
    mode_table("Table 5: test Acc@1 (all search modes)", results["table5"])
    mode_table("Refined test: mentions unseen in train/dev", results["refined"])
    if results["ablation"]:
        lines.extend(["## Preprocessing ablation (dev, each model's best dev mode)", "",
                      "| task | model | mode | " + " | ".join(ABLATIONS) + " |",
                      "|---" * (3 + len(ABLATIONS)) + "|"])
        for task, per_model in results["ablation"].items():
            for model, row in per_model.items():
                cells = [f"{row[a]['acc']:.4f}" if a in row and row[a]["acc"] is not None
                         else "skipped" for a in ABLATIONS]
                lines.append(f"| {task} | {model} | {row['mode']} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.extend(["## KB-coverage ceiling (share of scored mentions whose gold IDs are all "
                  "reachable)", "", "| task | split | n | in KB | in KB or training IDs |",
                  "|---|---|---|---|---|"])
    for key, c in results["ceiling"].items():
        task, split = key.split(":")
        lines.append(f"| {task} | {split} | {c['n']} | {c['kb']} | {c['kb_or_training']} |")
    lines.extend(["", "## Timing (s)", ""])
    lines.extend(f"- {k}: {v}" for k, v in results["timing"].items())
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="eval/results/normalization")
    parser.add_argument("--model", action="append", default=[],
                        help="[LABEL=]DIR[@TASK,...] (label from normalizer.json; tasks: "
                             "all by default); repeatable")
    parser.add_argument("--no-untrained", action="store_true",
                        help="skip the base-encoder ('No training') rows")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS))
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument("--slow-ablation", action="store_true",
                        help="also re-encode KBs over 200k names for the case/punctuation row")
    parser.add_argument("--keep-punctuation", action="store_true",
                        help="untrained rows: fold case only (KB vectors can then come from "
                             "linker annotate's name cache for an uncased encoder)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from e2e_linker.encoder.text_encoder import TextEncoder
    from e2e_linker.normalizer.normalizer_dir import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    runner = Runner(args.quick, args.cache_dir, not args.no_progress)
    wanted = set(args.tasks.split(","))
    tasks = [t for t in TASKS if t.name in wanted]
    results: dict = {"command": "python -m eval.normalization_tables " + " ".join(
        argv if argv is not None else sys.argv[1:]),
        "machine": f"{platform.machine()}, torch threads {torch.get_num_threads()}",
        "quick": args.quick, "models": {}, "table4": {}, "table5": {}, "refined": {}, "ablation": {},
        "ceiling": {}, "timing": {}}
    for task in tasks:
        for split in task.splits:
            results["ceiling"][f"{task.name}:{split}"] = ceiling(runner, task, split)

    for label, path, only in load_models(args.model, not args.no_untrained):
        t0 = time.time()
        if path is None:
            encoder, settings = TextEncoder.from_pretrained(None, pooling="mean",
                                                            max_length=32).eval(), None
        else:
            encoder, settings = load_model(path)
        text_opts = {"punctuation": not args.keep_punctuation} if settings is None else {
            "lowercase": settings.lowercase, "punctuation": settings.punctuation}
        results["models"][label] = {"path": path, "lowercase": text_opts.get("lowercase", True),
                                    "punctuation": text_opts.get("punctuation", True)}
        for task in tasks:
            if only is not None and task.name not in only:
                continue
            kb = runner.kb(task.kb)
            for split in task.splits:
                t1 = time.time()
                flags, texts = runner.run_split(encoder, task, split, MODES, **text_opts)
                table = results["table4" if split == "dev" else "table5"]
                table.setdefault(task.name, {})[label] = {m: accuracy(flags[m]) for m in MODES}
                if split == "test":
                    subset = refined_subset(runner, task, texts)
                    results["refined"].setdefault(task.name, {})[label] = {
                        m: accuracy(flags[m], subset) for m in MODES}
                results["timing"][f"{label} {task.name} {split}"] = round(time.time() - t1, 1)
                print(f"{label} {task.name} {split}: " + ", ".join(
                    f"{m} {accuracy(flags[m])['acc']}" for m in MODES), flush=True)
            if args.no_ablation or (args.quick and task.name != "BC5CDR-D"):
                continue
            dev = results["table4"][task.name][label]
            best = max(MODES, key=lambda m: (dev[m]["acc"] or 0, -MODES.index(m)))
            row: dict = {"mode": best}
            for name, change in ABLATIONS.items():
                if name == "full":
                    row[name] = dev[best]
                    continue
                opts = {**text_opts, **change}
                if "lowercase" in change and kb.num_names > 200_000 and path is not None \
                        and not args.slow_ablation:
                    continue  # a trained encoder would re-encode the whole KB: opt-in
                flags, _ = runner.run_split(encoder, task, "dev", [best], **opts)
                row[name] = accuracy(flags[best])
            results["ablation"].setdefault(task.name, {})[label] = row
            print(f"ablation {label} {task.name}: {row}", flush=True)
        results["timing"][f"{label} total"] = round(time.time() - t0, 1)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / "results.md").write_text(markdown(results), encoding="utf-8")
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    return results


if __name__ == "__main__":
    main()
