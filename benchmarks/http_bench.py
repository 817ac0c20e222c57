#!/usr/bin/env python3
"""The realistic workload (issue 23): `evalh run` of an http eval against a streaming server.

    python benchmarks/http_bench.py                          # 3,000 cases x 2, concurrency 200, + eval-harness
    python benchmarks/http_bench.py --cases 20000 --concurrency 1000 --skip-peer
    python benchmarks/http_bench.py --quick                  # 300 cases x 2, concurrency 50 (smoke check)
    (also part of `python benchmarks/run.py`)

N cases x 2 variants (`adapter: http`, `provider: openai_chat`, `stream: true`, models
model-a and model-b) against benchmarks/sse_server.py, a local OpenAI-compatible server in
its own process that streams each answer (SSE) after a lognormal latency derived from a
hash of the user message (median 0.8 s, p95 about 3 s, capped at 6 s). Both variants of a
case send the same message, so they wait the same time.

Ideal schedule: the 2N requests in dataset order (each case's two variants in turn, as
`evalh` and eval-harness order their cells) on CONCURRENCY slots, each started the moment
a slot frees, with the same latencies: its makespan is the floor no client can beat.
Target: `evalh run`, whole process (Dagster, judging, summary, drift included) <= 1.05x the
ideal at 3,000 x 2 / concurrency 200; goal <= 1.10x at 20,000 x 2 / concurrency 1,000.

eval-harness 2.0.2 (/tmp/ehvenv/bin/evalh or $EVAL_HARNESS_EVALH) runs the same workload in
the same invocation from its own eval.yaml (its streaming keys: stream_format,
stream_event_field, stream_tool_call_field). Peak memory: the PSS of the process tree
(50 ms samples) and the kernel's high-water mark of the largest process (ru_maxrss).

The server's own overhead is reported with every run: how late each stream's end went out
against its due time (p50/p99/max), the most streams it had open at once, the mean number
open (how full the client kept its slots), and its CPU seconds.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)
from sse_server import SUBURBS, latency_for  # noqa: E402

SERVER_SCRIPT = Path(__file__).resolve().parent / "sse_server.py"
VARIANTS = (("model_a", "model-a"), ("model_b", "model-b"))
TARGET = 1.05  # over the ideal schedule, at 3,000 x 2 / concurrency 200
GOAL_AT_1000 = 1.10  # at 20,000 x 2 / concurrency 1,000


# --------------------------------------------------------------------------- the server


class Server:
    """benchmarks/sse_server.py in its own process (so it has a core of its own to run on)."""

    def __init__(self, *options: str) -> None:
        """``options``: the server's own (``--rate 40``: a rate limit per key)."""
        self.proc = subprocess.Popen([str(bench.our_python()), str(SERVER_SCRIPT), *options], stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().strip() if self.proc.stdout else ""
        if not line.isdigit():
            self.proc.kill()
            sys.exit(f"error: the benchmark server did not start (printed {line!r})")
        self.port = int(line)
        self.endpoint = f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as response:
            return json.load(response)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


# --------------------------------------------------------------------------- fixture and ideal


def user_message(i: int) -> str:
    return f"Price of listing L{i} in {SUBURBS[i % 4]}?"


def ideal_makespan(n: int, concurrency: int) -> float:
    """The requests in dataset order (case by case, both variants) on ``concurrency`` slots,
    each started when the earliest slot frees: the time the last one ends."""
    slots = [0.0] * concurrency
    end = 0.0
    for i in range(n):
        latency = latency_for(user_message(i))
        for _ in VARIANTS:
            start = heapq.heappop(slots)
            heapq.heappush(slots, start + latency)
            end = max(end, start + latency)
    return end


MENTIONS_SUBURB = ("  - name: mentions_suburb\n    type: contains_text\n"
                   "    config: {any_of: [Richmond, Brunswick, Carlton, Fitzroy]}\n")


def write_eval_yaml(folder: Path, name: str, systems: str, evaluators: str, concurrency: int) -> None:
    """``folder``/eval.yaml over its cases.jsonl: ``systems`` and ``evaluators`` (YAML list items),
    model_a the baseline variant, runs written under ``folder``/runs (shared by the HTTP benches)."""
    (folder / "eval.yaml").write_text(f"""\
eval:
  name: {name}
dataset:
  type: jsonl
  path: {folder.resolve()}/cases.jsonl
systems:
{systems}evaluators:
{evaluators}run:
  max_concurrency: {concurrency}
  baseline_variant: model_a
output:
  - type: local_files
    path: {folder.resolve()}/runs/
""")


def write_fixture(folder: Path, n: int, concurrency: int, endpoint: str, tool: str) -> Path:
    """cases.jsonl + eval.yaml for ``tool`` (each tool's own spelling of a streaming system)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            suburb = SUBURBS[i % 4]
            f.write(json.dumps({"id": f"c{i:06d}", "input": {"user_message": user_message(i)},
                                "metadata": {"listing_id": f"L{i}", "suburb": suburb},
                                "expected": {"must_call_tools": ["get_listing_details"],
                                             "answer_should_include": [suburb]}}) + "\n")
    systems = []
    for name, model in VARIANTS:
        if tool == bench.OURS:
            streaming = f"    model: {model}\n    stream: true\n"
        else:  # eval-harness: its preset sends only messages; the rest goes in body, its stream keys apart
            streaming = (f"    body: {{model: {model}, stream: true}}\n    stream: true\n    stream_format: sse\n"
                         f"    stream_event_field: \"$.choices[0].delta.content\"\n"
                         f"    stream_tool_call_field: \"$.choices[0].delta.tool_calls[0]\"\n")
        systems.append(f"  - name: {name}\n    adapter: http\n    provider: openai_chat\n{streaming}"
                       f"    endpoint: {endpoint}\n    timeout_seconds: 30\n")
    calls_tool = ("  - name: calls_listing_tool\n    type: tool_called\n"
                  "    config: {tool_name: get_listing_details}\n")
    write_eval_yaml(folder, "http_bench", "".join(systems), calls_tool + MENTIONS_SUBURB, concurrency)
    return folder


# --------------------------------------------------------------------------- the scenario


def realistic_scenario(server: Server, root: Path, n: int, concurrency: int, tools: list[tuple[str, Path]],
                       timeout_s: float, target: float | None) -> dict:
    """Each tool's whole `evalh run` of the workload, against the ideal schedule; the figures."""
    ideal = ideal_makespan(n, concurrency)
    label = f"http-{n}x2-c{concurrency}"
    print(f"\n== realistic: {n:,} cases x 2 variants, streaming, concurrency {concurrency}: ideal schedule "
          f"{ideal:.2f} s ({2 * n / ideal:.0f} requests/s); target <= {target or '-'}x  ({bench.load_text()})",
          flush=True)
    rows = {}
    for tool, evalh in tools:
        fixture = write_fixture(root / label / tool, n, concurrency, server.endpoint, tool)
        env = dict(os.environ)
        if tool == bench.OURS:
            env = bench.with_bytecode({**env, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture))},
                                      bench.our_python(), fixture)
        server.get("/reset")
        started = time.monotonic()
        m = bench.measure_process(label, tool, [str(evalh), "run", str(fixture / "eval.yaml")], cwd=fixture,
                                  env=env, timeout_s=timeout_s, log_name=f"{label}-{tool}")
        stats = server.get("/stats")
        # Where the time beyond the requests' own span went: before the first request, after the last stream.
        first, last = stats["first_arrival_monotonic"], stats["last_end_monotonic"]
        before = first - started if first else float("nan")
        after = started + m.wall_s - last if last else float("nan")
        run_dir = bench.find_run_dir(fixture)
        if m.ok and tool == bench.OURS and (run_dir is None or not (run_dir / "summary.yaml").exists()):
            m.ok, m.note = False, "no summary.yaml"
        if m.ok and (stats["requests"] != 2 * n or stats["completed"] != 2 * n):
            m.ok, m.note = False, f"server saw {stats['requests']} requests ({stats['completed']} completed), expected {2 * n}"
        late = stats["lateness_ms"]
        print(f"  {tool:<13} wall {m.wall_s:7.2f} s = {m.wall_s / ideal:.3f}x ideal   peak PSS {m.peak_pss_mb:4.0f} MB "
              f"(largest process {m.max_rss_mb:.0f} MB), CPU {m.cpu_s:.1f} s   {'ok' if m.ok else 'FAILED: ' + m.note + ' (' + m.log + ')'}\n"
              f"  {'':<13} server: {stats['requests']} requests, open streams max {stats['max_open_streams']} / "
              f"mean {stats['mean_open_streams']:.0f} over {stats['span_s']:.1f} s, stream end late by p50 "
              f"{late['p50']:.1f} / p99 {late['p99']:.1f} / max {late['max']:.1f} ms, server CPU {stats['cpu_s']:.1f} s "
              f"({100 * stats['cpu_s'] / max(m.wall_s, 1e-9):.0f}% of a core)\n"
              f"  {'':<13} process start to first request {before:.2f} s, requests' span {stats['span_s']:.2f} s "
              f"(ideal {ideal:.2f} s), last stream end to exit {after:.2f} s  ({bench.load_text()})", flush=True)
        rows[tool] = {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "over_ideal": m.wall_s / ideal, "peak_pss_mb": m.peak_pss_mb,
                      "max_rss_mb": m.max_rss_mb, "ok": m.ok, "note": m.note, "load": m.load, "server": stats,
                      "start_to_first_request_s": before, "last_stream_to_exit_s": after,
                      "log": m.log}
    if bench.OURS in rows and bench.PEER in rows:
        print(f"  ours / eval-harness: wall {rows[bench.OURS]['wall_s'] / rows[bench.PEER]['wall_s']:.2f}, peak PSS "
              f"{rows[bench.OURS]['peak_pss_mb'] / max(rows[bench.PEER]['peak_pss_mb'], 1e-9):.2f}", flush=True)
    return {"cases": n, "variants": len(VARIANTS), "concurrency": concurrency, "ideal_s": ideal, "target": target,
            "tools": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="300 cases, concurrency 50")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures and run directories")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)
    n, concurrency = (300, 50) if args.quick else (args.cases, args.concurrency)
    tools = [(bench.OURS, bench.find_our_evalh())]
    peer = None if args.skip_peer else bench.find_peer_evalh()
    if peer is not None:
        tools.append((bench.PEER, peer))
    root = Path(tempfile.mkdtemp(prefix="evalh-http-bench-"))
    server = Server()
    try:
        target = None if args.quick else {200: TARGET, 1000: GOAL_AT_1000}.get(concurrency)
        figures = realistic_scenario(server, root, n, concurrency, tools, args.timeout, target)
    finally:
        server.close()
        if args.keep:
            print(f"fixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    out = bench.OUT / "http_results.json"
    out.write_text(json.dumps({"commit": bench.git_commit(), **figures}, indent=2) + "\n")
    print(f"results: {out}")
    return 0 if all(row["ok"] for row in figures["tools"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
