"""How many bytes a name does the packed KB index need? Recall of the exact best name, on dev.

    python -m eval.packed_recall [--pq-bytes 16 24 32] [--shortlist 128 256] [--nlist 2048]

Why: the packed indexes ship inside the package (``linker kb pack``), where every megabyte
counts against the 100 MB budget for binary artefacts, and the first run encodes
``shortlist`` names per mention. What matters for the output is whether the exactly best name
is in the shortlist: then the exact re-rank finds the same answer as the full-encoding path.

Queries: for the collective model, the span vectors of the mentions it detects in BC5CDR dev
(one encoder pass per chunk, as ``linker annotate``), against the KB's name vectors; for the
normalizer, the BC5CDR dev gold mention texts (folded) encoded by its encoder, against its
ontology texts. The
full matrices must be in the cache (``E2E_LINKER_CACHE``): ``linker kb build`` and one full
``linker normalize`` leave them there. Writes ``eval/results/packed_recall/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from eval.reporting import command_line, machine, write_results

RESULTS = Path(__file__).parent / "results" / "packed_recall"


def dev_mention_texts() -> list[str]:
    """Distinct gold mention texts of BC5CDR dev."""
    from data_tools.registry import load_corpus

    return sorted({a.text for d in load_corpus("bc5cdr:dev") for a in d.annotations})


def exact_top1(vectors: np.ndarray, queries: np.ndarray,
               block: int = 131072) -> tuple[np.ndarray, np.ndarray]:
    """Row of the best inner product per query (exact, blockwise over the fp16 matrix)."""
    best = np.full(len(queries), -np.inf, np.float32)
    rows = np.zeros(len(queries), np.int64)
    for start in range(0, len(vectors), block):
        scores = queries @ np.asarray(vectors[start:start + block], dtype=np.float32).T
        top = scores.argmax(1)
        value = scores[np.arange(len(queries)), top]
        better = value > best
        best[better], rows[better] = value[better], top[better] + start
    return rows, best


def recall_rows(vectors: np.ndarray, queries: np.ndarray, pq_bytes: list[int],
                shortlists: list[int], nlist: int, nprobes: list[int]) -> list[dict]:
    """Recall@shortlist of the exact best name's *score* (ties: any row with that score)."""
    from e2e_linker.kb_search.backends import SearchParams, build_faiss

    _, best = exact_top1(vectors, queries)
    out = []
    for m in pq_bytes:
        start = time.perf_counter()
        index = build_faiss("ivfpq", vectors, SearchParams(pq_bytes=m, ivf_nlist=nlist),
                            progress=False)
        build_s = time.perf_counter() - start
        size_mb = (len(vectors) * (m + 4) + nlist * vectors.shape[1] * 4) / 2**20
        for nprobe in nprobes:
            index.nprobe = nprobe
            for k in shortlists:
                started = time.perf_counter()
                _, short = index.search(queries, k)
                search_ms = (time.perf_counter() - started) * 1000 / len(queries)
                found = 0
                for q, cand in enumerate(short):
                    cand = cand[cand >= 0]
                    exact = np.asarray(vectors[np.sort(cand)], dtype=np.float32) @ queries[q]
                    found += bool(len(exact)) and exact.max() >= best[q] - 1e-3 * abs(best[q])
                out.append({"pq_bytes": m, "shortlist": k, "nlist": nlist, "nprobe": nprobe,
                            "recall_of_best": round(found / len(queries), 4),
                            "shortlist_ms_per_query": round(search_ms, 3),
                            "packed_mb": round(size_mb, 1), "build_s": round(build_s, 1)})
                print(out[-1], flush=True)
    return out


def collective_case(args) -> tuple[np.ndarray, np.ndarray]:
    from data_tools.registry import load_corpus
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    annotator = load_annotator(AnnotateSettings(index_kind="hnsw"))  # the full matrix, from the cache
    spans, _ = annotator.detect(load_corpus("bc5cdr:dev", args.max_docs))
    queries = np.stack([s.vector for s in spans]).astype(np.float32)
    return annotator.linker.index.vectors, np.ascontiguousarray(queries)


def normalizer_case(args) -> tuple[np.ndarray, np.ndarray]:
    from e2e_linker.collective.model_kb import assemble_kb
    from e2e_linker.kb_search.cache import VectorStore, encode_unit
    from e2e_linker.lexical.text_forms import TextNormalizer
    from e2e_linker.normalizer.normalizer_dir import load_model
    from e2e_linker.normalizer.pools import ontology_pool

    encoder, settings = load_model(None)
    text = TextNormalizer(settings.lowercase, settings.punctuation)
    pool = ontology_pool(assemble_kb(settings.kb), text)
    vectors = VectorStore(None, encoder, unit=True).matrix(pool.texts)
    queries = encode_unit(encoder, [text(t) for t in dev_mention_texts()])
    return vectors, np.ascontiguousarray(queries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pq-bytes", type=int, nargs="+", default=[16, 24, 32])
    parser.add_argument("--shortlist", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--nlist", type=int, default=2048)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--max-docs", type=int, default=None, help="dev documents (collective)")
    parser.add_argument("--models", nargs="+", default=["collective", "normalizer"])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    rows = {}
    for name in args.models:
        vectors, queries = (collective_case if name == "collective" else normalizer_case)(args)
        rows[name] = {"names": len(vectors), "queries": len(queries),
                      "rows": recall_rows(vectors, queries, args.pq_bytes, args.shortlist,
                                          args.nlist, args.nprobe)}
    result = {"command": command_line("packed_recall", argv),
              "machine": machine(), "models": rows}
    table = ["| model | names | dev queries | B/name | nprobe | shortlist | recall of the best "
             "name | shortlist ms/query | packed MB |", "|---|---|---|---|---|---|---|---|---|"]
    for name, block in rows.items():
        for r in block["rows"]:
            table.append(f"| {name} | {block['names']:,} | {block['queries']:,} | "
                         f"{r['pq_bytes']} | {r['nprobe']} | {r['shortlist']} | "
                         f"{r['recall_of_best']:.4f} | {r['shortlist_ms_per_query']} | "
                         f"{r['packed_mb']} |")
    write_results(args.out, result, "\n".join(table) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
