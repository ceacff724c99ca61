"""KB index at UMLS scale: build time, memory and latency of exact / HNSW / IVF-PQ search,
with recall@1 against exact search, on synthetic KBs of 1M and 3.5M concepts.

    python -m eval.kb_scale [--concepts 1000000,3500000] [--kinds exact,hnsw,ivfpq]
                            [--pq-bytes 96] [--nprobe 64,256] [--shortlist 128,1024]
                            [--query-docs 40] [--out eval/results/kb_scale]

Names come from :mod:`data_tools.synthetic_kb`. Their vectors are *synthetic*: encoding
millions of names takes hours on a 2-core CPU, so each concept gets the cached encoder vector
of the real name it was derived from plus Gaussian noise (``--concept-noise`` × the per-dimension
spread), and each of its names that vector plus smaller noise (``--name-noise``): clusters
of names around concepts around real regions of the space. The queries are real: span vectors
the default model detects in the first ``--query-docs`` BC5CDR test documents.

Each kind is built in a child process and searched in another (so the search RSS is that of
a process that only loads the index and maps the fp16 vectors); RSS is the child's peak
(``ru_maxrss``) and its anonymous / file-backed split at the end.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import time
from pathlib import Path

import numpy as np

from e2e_linker.kb_search.backends import SearchParams
from eval.reporting import command_line, write_results


def status_mb() -> dict[str, float]:
    """This process's peak RSS (VmHWM: ru_maxrss survives exec, so a spawned child would
    report its parent's peak) and its anonymous / file-backed RSS now."""
    out = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    try:
        for line in open("/proc/self/status"):
            key, _, value = line.partition(":")
            if key == "VmHWM":
                out["peak_rss_mb"] = int(value.split()[0]) / 1024
            elif key in ("RssAnon", "RssFile"):
                out[key.lower() + "_mb"] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


def _child(task: str, kind: str, vectors_path: str, index_path: str, queries_path: str,
           params: SearchParams, queue) -> None:
    from e2e_linker.kb_search.backends import ExactSearch, FaissShortlistSearch

    vectors = np.load(vectors_path, mmap_mode="r")
    start = time.perf_counter()
    if kind == "exact":
        search = ExactSearch(vectors)
    elif kind == "exact-disk":  # what --index exact becomes under a small --kb-memory-budget
        search = ExactSearch(vectors, disk_resident=True)
    else:
        search = FaissShortlistSearch(kind, vectors, params, index_path, disk_resident=True)
    ready = time.perf_counter() - start
    if task == "build":
        queue.put({"build_seconds": ready, **status_mb()})
        return
    queries = np.load(queries_path)
    start = time.perf_counter()
    _, rows = search.search(queries, 10)
    batch = time.perf_counter() - start
    single = []
    for q in queries[:100]:
        t = time.perf_counter()
        search.search(q[None], 10)
        single.append(time.perf_counter() - t)
    queue.put({"load_seconds": ready, "batch_ms_per_query": 1000 * batch / len(queries),
               "single_query_ms_p50": 1000 * float(np.median(single)),
               "top1": rows[:, 0].tolist(), "describe": search.describe(), **status_mb()})


def in_child(*args) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def exact_top1(vectors: np.ndarray, queries: np.ndarray, block: int = 262_144) -> np.ndarray:
    """Ground truth, streamed from the memory-mapped fp16 vectors in blocks."""
    best = np.full(len(queries), -np.inf, dtype=np.float32)
    arg = np.zeros(len(queries), dtype=np.int64)
    for start in range(0, len(vectors), block):
        scores = queries @ np.asarray(vectors[start:start + block], dtype=np.float32).T
        top = scores.argmax(1)
        value = scores[np.arange(len(queries)), top]
        better = value > best
        best[better] = value[better]
        arg[better] = top[better] + start
    return arg


def synthetic_vectors(kb, path: Path, concept_noise: float, name_noise: float,
                      seed: int = 0) -> int:
    """fp16 name vectors for a synthetic KB, written to ``path`` (see the module docstring)."""
    import json as _json

    from data_tools.synthetic_kb import template_of
    from e2e_linker.kb_search.cache import default_cache_dir

    folder = next((default_cache_dir() / "entity_vectors").iterdir())
    with (folder / "names.jsonl").open(encoding="utf-8") as handle:
        row_of = {_json.loads(line): i for i, line in enumerate(handle)}
    real = np.load(folder / "vectors.npy", mmap_mode="r")
    spread = np.asarray(real[:: max(1, len(real) // 20000)], dtype=np.float32).std(0)
    rng = np.random.default_rng(seed)
    n_names = sum(len(c.all_names()) for c in kb)
    tmp = path.with_name(f".{path.stem}.tmp.npy")  # renamed when complete: reused by later runs
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float16, shape=(n_names, real.shape[1]))
    at = 0
    for concept in kb:
        template = template_of(concept) or concept.name
        row = row_of.get(template)
        if row is None:
            row = hash(template) % len(real)
        base = real[row].astype(np.float32) + concept_noise * spread * rng.standard_normal(
            real.shape[1], dtype=np.float32)
        k = len(concept.all_names())
        out[at:at + k] = base + name_noise * spread * rng.standard_normal(
            (k, real.shape[1]), dtype=np.float32)
        at += k
    out.flush()
    del out
    tmp.replace(path)
    return n_names


def mention_queries(n_docs: int) -> np.ndarray:
    """Span vectors of the default model on BC5CDR test (no KB index needed to detect)."""
    from copy import deepcopy

    from data_tools.registry import load_corpus
    from e2e_linker.collective.annotator import Annotator
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir

    docs = deepcopy(load_corpus("bc5cdr-bioc:test", n_docs))
    for doc in docs:
        for passage in doc.passages:
            passage.annotations = []
    annotator = Annotator.from_parts(CollectiveLinker.load(default_linker_dir()), None)
    spans, _ = annotator.detect(docs)
    return np.stack([s.vector for s in spans]).astype(np.float32)


def _ints(text: str) -> list[int]:
    return [int(x) for x in str(text).split(",") if x]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concepts", default="1000000,3500000")
    parser.add_argument("--kinds", default="exact,hnsw,ivfpq")
    parser.add_argument("--query-docs", type=int, default=40)
    parser.add_argument("--concept-noise", type=float, default=0.5)
    parser.add_argument("--name-noise", type=float, default=0.25)
    parser.add_argument("--workdir", default="/tmp/e2e_kb_scale")
    defaults = SearchParams()
    parser.add_argument("--pq-bytes", type=int, default=defaults.pq_bytes)
    parser.add_argument("--nprobe", default=str(defaults.ivf_nprobe),
                        help="IVF lists searched; a comma list searches each (one build)")
    parser.add_argument("--ef-search", default=str(defaults.hnsw_ef_search),
                        help="HNSW efSearch; a comma list searches each (one build)")
    parser.add_argument("--shortlist", default=str(defaults.shortlist),
                        help="candidates re-ranked exactly; a comma list searches each")
    parser.add_argument("--out", default="eval/results/kb_scale")
    args = parser.parse_args(argv)

    from data_tools.synthetic_kb import synthetic_kb

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    queries = mention_queries(args.query_docs)
    np.save(work / "queries.npy", queries)
    shortlists = _ints(args.shortlist)
    grids = {"ivfpq": [{"ivf_nprobe": v, "shortlist": w} for v in _ints(args.nprobe)
                       for w in shortlists],
             "hnsw": [{"hnsw_ef_search": v, "shortlist": w} for v in _ints(args.ef_search)
                      for w in shortlists],
             "exact": [{}], "exact-disk": [{}]}
    rows = []
    for n in _ints(args.concepts):
        start = time.perf_counter()
        vectors_path = work / f"vectors_{n}_{args.concept_noise}_{args.name_noise}.npy"
        if not vectors_path.is_file():  # the same arguments give the same vectors (seeded)
            kb = synthetic_kb(n)
            synthetic_vectors(kb, vectors_path, args.concept_noise, args.name_noise)
            del kb
        made = time.perf_counter() - start
        vectors = np.load(vectors_path, mmap_mode="r")
        n_names = len(vectors)
        truth = exact_top1(vectors, queries)
        for kind in [k for k in args.kinds.split(",") if k]:
            built_with = f"_pq{args.pq_bytes}" if kind == "ivfpq" else ""
            index_path = str(work / f"{kind}_{n}{built_with}.faiss")
            built = None
            for setting in grids[kind]:
                params = SearchParams(pq_bytes=args.pq_bytes, **setting)
                if built is None:
                    built = in_child("build", kind, str(vectors_path), index_path,
                                     str(work / "queries.npy"), params)
                searched = in_child("search", kind, str(vectors_path), index_path,
                                    str(work / "queries.npy"), params)
                top1 = np.asarray(searched.pop("top1"))
                row = {"concepts": n, "names": n_names, "kind": kind,
                       "describe": searched.pop("describe"), "kb_generation_seconds": made,
                       "build": built, "search": searched, "queries": len(queries),
                       "recall_at_1": float((top1 == truth).mean())}
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {"command": command_line("kb_scale", argv), "rows": rows,
              "vectors": "synthetic (real template vectors + noise); queries real"}
    write_results(args.out, result, markdown(result))
    return result


def markdown(result: dict) -> str:
    lines = ["| concepts | names | index | build s | search RSS peak MB (anon / file) | "
             "ms/query (batch) | ms/query (single, p50) | recall@1 vs exact |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        s = r["search"]
        lines.append(f"| {r['concepts']:,} | {r['names']:,} | {r['describe']} | "
                     f"{r['build']['build_seconds']:.0f} | {s['peak_rss_mb']:.0f} "
                     f"({s.get('rssanon_mb', 0):.0f} / {s.get('rssfile_mb', 0):.0f}) | "
                     f"{s['batch_ms_per_query']:.2f} | {s['single_query_ms_p50']:.2f} | "
                     f"{100 * r['recall_at_1']:.2f} % |")
    lines += ["", f"Vectors: {result['vectors']}. Command: `{result['command']}`"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
