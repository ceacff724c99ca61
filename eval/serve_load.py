"""``linker serve`` under load, beside ``linker annotate`` on the same documents.

    python -m eval.serve_load                         # the default model, 5,000 requests
    python -m eval.serve_load --requests 200 --out /tmp/serve_load   # a quick look

Why: the service must not lose or fail requests under concurrent load, must not be much
slower than the command on the same documents, must answer one sentence quickly when idle and
must not grow in memory. Against 127.0.0.1 only, bounded, in one run:

1. ``linker serve`` starts as a user starts it (its own process, the chosen model); time from
   start to ``GET /ready``, and its RSS then;
2. ``--latency-requests`` one-sentence requests one at a time (low load): p50/p95/p99;
3. ``--requests`` one-sentence requests from ``--clients`` concurrent clients (keep-alive
   connections, each request a document ``text-<n>``, answered as JSON Lines): documents/s,
   latencies, errors (an answer other than 200) and lost requests (no answer), RSS once the
   first window of requests (1,000, or a fifth of fewer) is done and at the end, the batching
   the server did;
4. SIGTERM: the seconds until the process is gone;
5. ``linker annotate`` over the same texts, one a line (``--lines``, so the same document
   IDs), with the server's batch size and with the command's default, at torch's default
   thread count (as a user runs it) and at the server's ``--threads``: documents/s with its
   start-up (a one-line run) taken off, and whether its output is the server's answers to
   the byte.

The documents are the sentences of ``--corpus`` (default BC5CDR test: titles and abstract
sentences) or the lines of ``--texts``, the first ``--distinct`` (1,000) of them, reused in
order up to ``--requests``: after the first thousand requests no new text (and no new KB
name) comes, so memory growth between the first and the last thousand is the server's own.
First an untimed ``linker annotate`` pass over them fills the KB cache with the names they
shortlist (``--no-warm`` skips it), so neither side pays that encoding in its timing. Results
(JSON + Markdown + NOTES.md with the machine and its load) go to ``--out``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from eval.reporting import command_line, machine, write_results

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "serve_load"
#: the issue's bounds, printed beside the figures
BOUNDS = {"errors": 0, "lost": 0, "ratio": 0.8, "p50_ms": 150.0, "rss_growth_pct": 5.0}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def sentences(texts: Sequence[str], min_chars: int = 3) -> list[str]:
    """The sentences of ``texts`` (split after ``.!?`` before a capital, digit or bracket),
    tabs and line breaks made spaces (one text a line for ``linker annotate --lines``)."""
    out = []
    for text in texts:
        for piece in SENTENCE_END.split(" ".join(text.split())):
            if len(piece.strip()) >= min_chars:
                out.append(piece.strip())
    return out


def corpus_texts(spec: str) -> list[str]:
    """Title and abstract sentences of a corpus (``bc5cdr:test``, a path)."""
    from data_tools.registry import load_corpus

    return sentences(p.text for doc in load_corpus(spec) for p in doc.passages)


def free_port() -> int:
    """A local TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process (Linux ``/proc``), MB; None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def percentiles(values: Sequence[float]) -> dict:
    """p50/p95/p99/mean/max of latencies in seconds, as milliseconds."""
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99),
            "mean": round(sum(ordered) / len(ordered) * 1000, 1),
            "max": round(ordered[-1] * 1000, 1)}


class Client:
    """One keep-alive connection to the server; :meth:`annotate` sends one document."""

    def __init__(self, port: int, timeout: float = 600.0):
        self.port = port
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def annotate(self, doc_id: str, text: str) -> tuple[int | None, bytes, float]:
        """``(status or None when no answer came, body, seconds)`` of one request."""
        body = json.dumps({"texts": [text], "ids": [doc_id]}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
        started = time.perf_counter()
        for attempt in range(2):  # a keep-alive connection the server closed: reconnect
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                           timeout=self.timeout)
                self.conn.request("POST", "/annotate", body, headers)
                answer = self.conn.getresponse()
                data = answer.read()
                return answer.status, data, time.perf_counter() - started
            except (OSError, http.client.HTTPException):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt:
                    return None, b"", time.perf_counter() - started
        raise AssertionError("unreachable")

    def get(self, path: str) -> tuple[int, bytes]:
        """A GET on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()


def start_server(args: argparse.Namespace, port: int, log: Path, env: dict
                 ) -> tuple[subprocess.Popen, float]:
    """``linker serve`` in its own process; ``(process, seconds from start to /ready)``."""
    command = [sys.executable, "-m", "e2e_linker", "serve", "--port", str(port),
               "--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms),
               "--batch-size", str(args.batch_size), "--threads", str(args.threads),
               *model_args(args)]
    started = time.perf_counter()
    with open(log, "w") as handle:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                   stderr=handle)
    probe = Client(port)
    while True:
        if process.poll() is not None:
            raise SystemExit(f"linker serve exited ({process.returncode}):\n"
                             f"{log.read_text()[-3000:]}")
        try:
            if probe.get("/ready")[0] == 200:
                return process, time.perf_counter() - started
        except OSError:
            pass
        if time.perf_counter() - started > args.ready_timeout:
            process.kill()
            raise SystemExit(f"linker serve was not ready in {args.ready_timeout} s")
        time.sleep(0.05)


def model_args(args: argparse.Namespace) -> list[str]:
    """The options that pick the model and KB, for both commands."""
    out = []
    if args.model:
        out += ["--model", args.model]
    if args.kb:
        out += ["--kb", args.kb]
    if args.index:
        out += ["--index", args.index]
    if args.threshold is not None:
        out += ["--threshold", str(args.threshold)]
    return out


def low_load_latency(port: int, texts: Sequence[str], count: int) -> dict:
    """One request at a time: latency percentiles and the failures."""
    client = Client(port)
    times, failed = [], 0
    for n in range(count):
        status, _, seconds = client.annotate(f"lat-{n}", texts[n % len(texts)])
        failed += status != 200
        times.append(seconds)
    return {"requests": count, "failed": failed, "latency_ms": percentiles(times)}


def under_load(port: int, pid: int, texts: Sequence[str], requests: int, clients: int,
               window: int) -> tuple[dict, list[bytes | None]]:
    """``requests`` requests from ``clients`` threads; the figures and each answer's body
    (None for a failed one), by request number."""
    answers: list[bytes | None] = [None] * requests
    statuses: list[int | None] = [None] * requests
    times: list[float] = [0.0] * requests
    counter = iter(range(requests))
    lock = threading.Lock()
    done = [0]
    rss: dict = {"first": None, "samples": []}

    def work() -> None:
        client = Client(port)
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            status, body, seconds = client.annotate(f"text-{n + 1}", texts[n % len(texts)])
            statuses[n], times[n] = status, seconds
            answers[n] = body if status == 200 else None
            with lock:
                done[0] += 1
                if done[0] == window:
                    rss["first"] = rss_mb(pid)

    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            rss["samples"].append(rss_mb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    stop.set()
    end = rss_mb(pid)
    ok = sum(s == 200 for s in statuses)
    lost = sum(s is None for s in statuses)
    samples = [s for s in rss["samples"] if s is not None]
    figures = {"requests": requests, "clients": clients, "ok": ok, "errors": requests - ok - lost,
               "lost": lost, "wall_s": round(wall, 2),
               "docs_per_s": round(requests / wall, 2), "latency_ms": percentiles(times),
               "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses), key=str)},
               "rss_mb": {"window": window, "after_first_window": round(rss["first"] or 0, 1),
                          "end": round(end or 0, 1),
                          "peak_sampled": round(max(samples, default=end or 0), 1)}}
    first = rss["first"] or 0
    figures["rss_mb"]["growth_pct"] = round(100 * ((end or 0) - first) / first, 2) \
        if first else None
    return figures, answers


def stop_server(process: subprocess.Popen) -> dict:
    """SIGTERM and the seconds until the process is gone."""
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(120)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    return {"seconds": round(time.perf_counter() - started, 2), "returncode": code}


def cli_run(args: argparse.Namespace, lines: Path, out: Path, env: dict,
            batch_size: int | None, threads: int | None = None) -> float:
    """``linker annotate LINES --lines --format jsonl -o OUT``: wall seconds (``threads``:
    its torch threads through ``OMP_NUM_THREADS``; None: torch's default)."""
    command = [sys.executable, "-m", "e2e_linker", "annotate", str(lines), "--lines",
               "--format", "jsonl", "-o", str(out), *model_args(args)]
    if batch_size is not None:
        command += ["--batch-size", str(batch_size)]
    if threads is not None:
        env = {**env, "OMP_NUM_THREADS": str(threads)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"linker annotate failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def lines_file(texts: Sequence[str], path: Path) -> Path:
    """``texts`` one a line in ``path`` (named ``text.txt``, so ``linker annotate --lines``
    gives them the IDs the requests carry: ``text-<line>``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return path


def cli_figures(args: argparse.Namespace, texts: Sequence[str], lines: Path, tmp: Path,
                env: dict) -> tuple[dict, bytes]:
    """``linker annotate`` on the same documents, as a user runs it (torch's default threads)
    with the server's batch size and (unless it is the same) the command's default, and with
    the server's batch size and thread count (unless ``--threads 0``); its JSON Lines with
    the server's batch size. Documents/s leave out the start-up a one-line run measures
    (None when the run is nearly all start-up)."""
    one = lines_file(texts[:1], tmp / "one" / "text.txt")
    startups: dict = {}

    def startup_s(threads: int | None) -> float:  # a one-line run at these threads
        if threads not in startups:
            startups[threads] = cli_run(args, one, tmp / "one.jsonl", env, args.batch_size,
                                        threads)
        return startups[threads]

    out: dict = {"startup_s": round(startup_s(None), 2)}
    runs = [("same_batch_size", args.batch_size, None), ("default_batch_size", None, None),
            ("server_threads", args.batch_size, args.threads or None)]
    for label, batch, threads in runs:
        if (label == "default_batch_size" and args.batch_size == 16) \
                or (label == "server_threads" and threads is None):
            continue
        wall = cli_run(args, lines, tmp / f"{label}.jsonl", env, batch, threads)
        startup = startup_s(threads)
        net = wall - startup
        out[label] = {"batch_size": batch or 16, "threads": threads or "default",
                      "wall_s": round(wall, 2), "startup_s": round(startup, 2),
                      "docs_per_s": round(len(texts) / net, 2) if net > 0.05 * wall else None,
                      "docs_per_s_with_startup": round(len(texts) / wall, 2)}
    return out, (tmp / "same_batch_size.jsonl").read_bytes()


def by_document(jsonl: bytes) -> dict[str, list[bytes]]:
    """JSON Lines grouped by their ``document``."""
    out: dict[str, list[bytes]] = {}
    for line in jsonl.splitlines(keepends=True):
        out.setdefault(json.loads(line)["document"], []).append(line)
    return out


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages (how busy the machine was)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run(args: argparse.Namespace) -> dict:
    """Every phase; the results record."""
    texts_pool = (Path(args.texts).read_text(encoding="utf-8").splitlines() if args.texts
                  else corpus_texts(args.corpus))
    texts_pool = [t for t in texts_pool if t.strip()][:args.distinct or None]
    texts = [texts_pool[n % len(texts_pool)] for n in range(args.requests)]
    env = dict(os.environ)
    if args.cache_dir:
        env["E2E_LINKER_CACHE"] = args.cache_dir
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="serve-load-") as folder:
        tmp = Path(folder)
        lines = lines_file(texts, tmp / "text.txt")
        if args.warm:  # the KB names these texts shortlist, encoded and cached untimed
            cli_run(args, lines, tmp / "warm.jsonl", env, args.batch_size)
        port = free_port()
        process, ready_s = start_server(args, port, tmp / "serve.log", env)
        try:
            rss_ready = rss_mb(process.pid)
            client = Client(port)
            for n in range(args.warmup):
                client.annotate(f"warm-{n}", texts[n % len(texts)])
            latency = low_load_latency(port, texts, args.latency_requests)
            window = min(1000, max(1, args.requests // 5))
            load, answers = under_load(port, process.pid, texts, args.requests, args.clients,
                                       window)
            info = json.loads(Client(port).get("/info")[1])
        finally:
            shutdown = stop_server(process)
        cli, cli_jsonl = cli_figures(args, texts, lines, tmp, env)
    expected = by_document(cli_jsonl)
    differing = sum(answers[n] is None or answers[n] != b"".join(expected.get(f"text-{n + 1}",
                                                                              []))
                    for n in range(args.requests))
    same = cli["same_batch_size"]["docs_per_s"]
    default = cli.get("default_batch_size", cli["same_batch_size"])["docs_per_s"]

    def ratio(cli_rate: float | None) -> float | None:
        return round(load["docs_per_s"] / cli_rate, 3) if cli_rate else None

    return {
        "model": args.model or "shipped", "kb": args.kb or "the model's",
        "texts": {"source": args.texts or args.corpus, "distinct": len(texts_pool),
                  "mean_chars": round(sum(map(len, texts)) / len(texts), 1)},
        "server": {"batch_size": args.batch_size, "max_batch": args.max_batch,
                   "max_wait_ms": args.max_wait_ms, "threads": args.threads},
        "time_to_ready_s": round(ready_s, 2),
        "rss_mb_at_ready": round(rss_ready or 0, 1),
        "low_load": latency, "load": load,
        "batching": info.get("batching"),
        "shutdown": shutdown,
        "cli": cli,
        "ratio_vs_cli_same_batch_size": ratio(same),
        "ratio_vs_cli_default": ratio(default),
        "ratio_vs_cli_server_threads": ratio(cli.get("server_threads", {}).get("docs_per_s")),
        "identical_to_cli": differing == 0, "documents_differing_from_cli": differing,
        "machine": machine(), "load_average_before": load_before,
        "load_average_after": load_average(),
        "command": command_line("serve_load", args.argv),
    }


def times(ratio: float | None) -> str:
    """A ratio as the table prints it (n/a: the command's run was nearly all start-up)."""
    return "n/a (the command's run was nearly all start-up)" if ratio is None else f"{ratio}×"


def markdown(result: dict) -> str:
    """The figures beside the issue's bounds."""
    load, low = result["load"], result["low_load"]
    cli = result["cli"]
    rows = [
        ("requests (clients)", f"{load['requests']} ({load['clients']})", ""),
        ("errors / lost", f"{load['errors']} / {load['lost']}", "0 / 0"),
        ("throughput, documents/s", f"{load['docs_per_s']}", ""),
        ("`linker annotate` (its default threads), same batch size, documents/s",
         f"{cli['same_batch_size']['docs_per_s']} (batch {cli['same_batch_size']['batch_size']})",
         ""),
        ("server / annotate (same batch size)", times(result["ratio_vs_cli_same_batch_size"]),
         f"≥ {BOUNDS['ratio']}×"),
    ]
    if "default_batch_size" in cli:
        rows += [("`linker annotate`, its default batch size, documents/s",
                  f"{cli['default_batch_size']['docs_per_s']} (batch 16)", ""),
                 ("server / annotate (default)", times(result["ratio_vs_cli_default"]),
                  f"≥ {BOUNDS['ratio']}×")]
    if "server_threads" in cli:
        rows += [("`linker annotate` with the server's threads "
                  f"({cli['server_threads']['threads']}), documents/s",
                  f"{cli['server_threads']['docs_per_s']}", ""),
                 ("server / annotate (same threads)",
                  times(result["ratio_vs_cli_server_threads"]), "")]
    rows += [
        ("one sentence at low load, p50 / p95 / p99 ms",
         f"{low['latency_ms']['p50']} / {low['latency_ms']['p95']} / {low['latency_ms']['p99']}",
         f"p50 ≤ {BOUNDS['p50_ms']:g}"),
        ("under load, p50 / p95 / p99 ms",
         f"{load['latency_ms']['p50']} / {load['latency_ms']['p95']} / "
         f"{load['latency_ms']['p99']}", ""),
        ("RSS at ready / after first window / end, MB",
         f"{result['rss_mb_at_ready']} / {load['rss_mb']['after_first_window']} / "
         f"{load['rss_mb']['end']} (window {load['rss_mb']['window']})", ""),
        ("RSS growth, first to last window", f"{load['rss_mb']['growth_pct']} %",
         f"≤ {BOUNDS['rss_growth_pct']:g} %"),
        ("time from start to ready", f"{result['time_to_ready_s']} s", ""),
        ("server batches: mean / largest documents",
         f"{(result['batching'] or {}).get('mean_batch')} / "
         f"{(result['batching'] or {}).get('largest_batch')}", ""),
        ("answers identical to `linker annotate` (same batch size)",
         f"{result['identical_to_cli']} ({result['documents_differing_from_cli']} differ)",
         "True"),
        ("SIGTERM to exit", f"{result['shutdown']['seconds']} s "
                            f"(status {result['shutdown']['returncode']})", ""),
    ]
    table = ["| measure | value | bound |", "|---|---|---|"]
    table += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return (f"# linker serve under load\n\n`{result['command']}`\n\nModel: {result['model']}; "
            f"texts: {result['texts']['source']} ({result['texts']['distinct']} distinct, "
            f"{result['texts']['mean_chars']} characters on average); machine: "
            f"{result['machine']}; load average before/after: "
            f"{result['load_average_before']} / {result['load_average_after']}.\n\n"
            + "\n".join(table) + "\n")


def notes(result: dict, note: str | None) -> str:
    """NOTES.md: the machine and the conditions of the run."""
    import platform

    import torch

    return (f"# Conditions of this run\n\n- Machine: {result['machine']}; Python "
            f"{platform.python_version()}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} torch threads by default.\n"
            f"- Load average (1/5/15 min) before: {result['load_average_before']}, after: "
            f"{result['load_average_after']}.\n"
            f"- The load generator ran on the same machine as the server (one Python process, "
            f"{result['load']['clients']} client threads), so it shares the CPU.\n"
            f"- Command: `{result['command']}`.\n"
            + (f"- Note: {note}\n" if note else ""))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="model directory (default: shipped)")
    parser.add_argument("--kb", default=None)
    parser.add_argument("--index", default=None, help="--index for both commands")
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--cache-dir", default=None, help="E2E_LINKER_CACHE for both")
    parser.add_argument("--corpus", default="bc5cdr:test")
    parser.add_argument("--texts", default=None, help="a file of texts, one a line")
    parser.add_argument("--distinct", type=int, default=1000,
                        help="texts used, in order and again (0: all): the first thousand "
                             "requests meet every text, so RSS growth after them is not new "
                             "KB names being read")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency-requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16,
                        help="chunks per encoder forward, server and command alike (default: "
                             "both commands' default)")
    parser.add_argument("--threads", type=int, default=1,
                        help="the server's --threads (0: one a core); linker annotate runs "
                             "with torch's default and, when they differ, with these too")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=10.0)
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="skip the untimed linker annotate pass that fills the KB cache")
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument("--note", default=None, help="a line for NOTES.md (conditions)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    args.argv = argv
    if args.requests < 1 or args.clients < 1 or args.latency_requests < 1:
        parser.error("--requests, --clients and --latency-requests must be at least 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    result = run(args)
    write_results(args.out, result, markdown(result))
    (Path(args.out) / "NOTES.md").write_text(notes(result, args.note))
    return result


if __name__ == "__main__":
    main()
