#!/usr/bin/env python3
"""HTTP benchmark: `evalh run` against a local OpenAI-shaped server that answers in 50 ms.

    python benchmarks/http_bench.py              # N=5000 cases
    python benchmarks/http_bench.py --quick      # N=1000 smoke check
    python benchmarks/http_bench.py --skip-peer  # do not run eval-harness

One variant (`adapter: http`, `provider: openai_chat`), N cases, `max_concurrency: 32`.
Physical limit = N * LAT / 32 (7.8 s at N=5000, LAT=0.05). Target: wall <= 1.3x the limit.

The server runs in its own process (this script with --serve): a stdlib asyncio HTTP/1.1
server with keep-alive, so it is not the bottleneck. Before anything is timed, a load
generator (raw asyncio sockets, keep-alive) measures what it serves with 32 and with 128
concurrent clients; with 128 it must serve well above 32 / LAT = 640 req/s.

Each tool is measured as a whole process, as benchmarks/run.py does (its `measure` is
reused): wall time from just before the process starts until it is reaped, peak RSS of the
process tree polled every 50 ms; our `evalh` gets a fresh DAGSTER_HOME whose storage is
created before the clock starts. If eval-harness is installed (/tmp/ehvenv/bin/evalh or
$EVAL_HARNESS_EVALH) it runs the same eval.yaml (its own copy) against the same server and
the ratio ours / eval-harness is printed. The server counts requests, so a run that did not
send exactly N requests is flagged.

Results go to benchmarks/out/http_results.json, process output to benchmarks/out/logs/http-*.log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# benchmarks/run.py: psutil (re-executing under the project's venv if needed), measure(),
# fresh_dagster_home(), find_our_evalh(), find_peer_evalh(), the output folders.
import run as bench  # noqa: E402 - after the sys.path entry above

LATENCY_S = 0.05
CONCURRENCY = 32
LIMIT_FACTOR = 1.3
SUBURBS = ["Richmond", "Brunswick", "Carlton", "Fitzroy"]
LOAD_CLIENTS = (32, 128)
LOAD_SECONDS = 2.0


# --------------------------------------------------------------------------- the server


class Stats:
    requests = 0


def _chat_completion(body: bytes) -> bytes:
    try:
        data = json.loads(body or b"{}")
        messages = data.get("messages") or []
        text = str(messages[-1].get("content", "")) if messages else ""
    except (ValueError, AttributeError, TypeError):
        text = ""
    listing = re.search(r"\bL\d+\b", text)
    suburb = next((s for s in SUBURBS if s in text), "Nowhere")
    listing_id = listing.group(0) if listing else "unknown"
    answer = f"Listing {listing_id} is in {suburb}; the suburb average is 1.2M."
    payload = {
        "id": f"chatcmpl-{listing_id}", "object": "chat.completion", "model": "stub-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": answer,
            "tool_calls": [{"id": "call_0", "type": "function", "function": {
                "name": "get_listing_details", "arguments": json.dumps({"listing_id": listing_id})}}],
        }}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 14, "total_tokens": 26},
    }
    return json.dumps(payload).encode()


def _response(status: str, body: bytes, keep_alive: bool) -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    return head.encode() + body


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    try:
        while True:
            request_line = await reader.readline()
            if not request_line:
                break
            method, path, version = (request_line.decode("latin-1").split() + ["", "", ""])[:3]
            length, keep_alive = 0, version == "HTTP/1.1"
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name, value = name.strip().lower(), value.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "connection":
                    keep_alive = value != "close" if version == "HTTP/1.1" else value == "keep-alive"
            body = await reader.readexactly(length) if length else b""
            if method == "GET" and path == "/stats":
                out = _response("200 OK", json.dumps({"requests": Stats.requests}).encode(), keep_alive)
            elif method == "POST" and path.startswith("/v1/chat/completions"):
                Stats.requests += 1
                await asyncio.sleep(latency)
                out = _response("200 OK", _chat_completion(body), keep_alive)
            else:
                out = _response("404 Not Found", b'{"error": "not found"}', keep_alive)
            writer.write(out)
            await writer.drain()
            if not keep_alive:
                break
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _serve(port: int, latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: _handle(r, w, latency), "127.0.0.1", port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)  # the parent reads the port from here
    async with server:
        await server.serve_forever()


def start_server(latency: float) -> tuple[subprocess.Popen, int]:
    """This script with --serve in its own process; returns (process, port)."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", "0", "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.isdigit():
        proc.kill()
        sys.exit(f"error: the benchmark server did not start (printed {line!r})")
    return proc, int(line)


# --------------------------------------------------------------------------- load check


async def _client(port: int, deadline: float, latencies: list[float], body: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(request)
            await writer.drain()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()


async def _load(port: int, clients: int, seconds: float) -> dict:
    body = json.dumps({"model": "stub-model", "messages": [{"role": "user", "content": "L1 in Richmond?"}]}).encode()
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(port, started + seconds, latencies, body) for _ in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"clients": clients, "requests": len(latencies), "req_per_s": len(latencies) / elapsed,
            "ideal_req_per_s": clients / LATENCY_S,
            "p50_ms": 1000 * latencies[len(latencies) // 2], "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)]}


def load_check(port: int) -> list[dict]:
    print(f"== server check: {LOAD_SECONDS:g} s of keep-alive load per row (needed: well above "
          f"{CONCURRENCY / LATENCY_S:.0f} req/s)", flush=True)
    rows = []
    for clients in LOAD_CLIENTS:
        row = asyncio.run(_load(port, clients, LOAD_SECONDS))
        rows.append(row)
        print(f"  {clients:>4} clients: {row['req_per_s']:7.0f} req/s (ideal {row['ideal_req_per_s']:.0f}), "
              f"latency p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms", flush=True)
    return rows


def served(port: int) -> int:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as resp:
        return json.load(resp)["requests"]


# --------------------------------------------------------------------------- fixture and runs


def write_fixture(folder: Path, n: int, port: int) -> Path:
    """cases.jsonl + eval.yaml (eval-harness 1.0 format, read by both tools)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            suburb = SUBURBS[i % 4]
            f.write(json.dumps({"id": f"c{i:06d}", "input": {"user_message": f"Price of listing L{i} in {suburb}?"},
                                "metadata": {"listing_id": f"L{i}", "suburb": suburb},
                                "expected": {"must_call_tools": ["get_listing_details"],
                                             "answer_should_include": [suburb]}}) + "\n")
    # `model` is how we put the model into the body; eval-harness's openai_chat preset
    # sends only `messages` and merges `body`, so the model is given there too.
    (folder / "eval.yaml").write_text(f"""\
eval:
  name: http_bench
dataset:
  type: jsonl
  path: {folder.resolve()}/cases.jsonl
systems:
  - name: chat
    adapter: http
    provider: openai_chat
    model: stub-model
    body: {{model: stub-model}}
    endpoint: http://127.0.0.1:{port}/v1/chat/completions
    timeout_seconds: 30
evaluators:
  - name: calls_listing_tool
    type: tool_called
    config: {{tool_name: get_listing_details}}
  - name: mentions_suburb
    type: contains_text
    config: {{any_of: [Richmond, Brunswick, Carlton, Fitzroy]}}
run:
  max_concurrency: {CONCURRENCY}
  baseline_variant: chat
output:
  - type: local_files
    path: {folder.resolve()}/runs/
""")
    return folder


def run_tool(name: str, evalh: Path, root: Path, n: int, port: int, timeout_s: float) -> bench.Measurement:
    fixture = write_fixture(root / name, n, port)
    env = dict(os.environ)
    if name == bench.OURS:
        env["DAGSTER_HOME"] = str(bench.fresh_dagster_home(fixture))  # created before the clock
    before = served(port)
    cmd = [str(evalh), "run", str(fixture / "eval.yaml")]
    log = bench.LOGS / f"http-{name}.log"
    wall, rss, code = bench.measure(cmd, cwd=fixture, env=env, log=log, timeout_s=timeout_s)
    requests = served(port) - before
    note = "timed out" if code == -9 else ("" if code == 0 else f"exit {code}")
    m = bench.Measurement("http", name, " ".join(cmd), n, LATENCY_S, wall, rss, code, code == 0, str(log), note)
    m.extra["requests_served"] = requests
    run_dir = bench.find_run_dir(fixture)
    m.extra["run_dir"] = str(run_dir) if run_dir else None
    if m.ok and name == bench.OURS and (run_dir is None or not (run_dir / "summary.yaml").exists()):
        m.ok, m.note = False, "no summary.yaml"
    if m.ok and requests != n:
        m.ok, m.note = False, f"server saw {requests} requests, expected {n}"
    if m.ok and name == bench.OURS:
        m.extra["pass_rate"] = _our_pass_rate(run_dir)
    bench.report_line(m)
    return m


def _our_pass_rate(run_dir: Path) -> float | None:
    text = (run_dir / "summary.yaml").read_text()
    found = re.search(r"pass_rate:\s*([0-9.]+)", text)
    return float(found.group(1)) if found else None


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="evalh http adapter vs a 50 ms OpenAI-shaped server.")
    parser.add_argument("--quick", action="store_true", help="N=1000 instead of 5000")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--n", type=int, help="number of cases (overrides --quick)")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures and run directories")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a process is killed (600)")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        try:
            asyncio.run(_serve(args.serve, args.latency))
        except KeyboardInterrupt:
            pass
        return 0

    n = args.n or (1000 if args.quick else 5000)
    limit = n * LATENCY_S / CONCURRENCY
    ours = bench.find_our_evalh()
    peer = None if args.skip_peer else bench.find_peer_evalh()
    print(f"ours: {ours} (commit {bench.git_commit()})\npeer: {peer or 'not run'}\n"
          f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
          f"N={n}, LAT={LATENCY_S} s, max_concurrency {CONCURRENCY}: physical limit {limit:.2f} s\n", flush=True)

    server, port = start_server(LATENCY_S)
    root = Path(tempfile.mkdtemp(prefix="evalh-http-bench-"))
    bench.LOGS.mkdir(parents=True, exist_ok=True)
    measurements: list[bench.Measurement] = []
    try:
        load = load_check(port)
        print(f"\n== run: `evalh run` (http, openai_chat), N={n}", flush=True)
        measurements.append(run_tool(bench.OURS, ours, root, n, port, args.timeout))
        if peer is not None:
            measurements.append(run_tool(bench.PEER, peer, root, n, port, args.timeout))
    finally:
        server.kill()
        server.wait()
        if args.keep:
            print(f"\nfixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("\n== results (wall: process start to exit; peak RSS: psutil, process tree summed, 50 ms poll)\n")
    bench.print_table(
        ["tool", "N", "wall s", "x limit", "peak RSS MB", "requests", "status"],
        [[m.tool, str(m.n), f"{m.wall_s:.2f}", f"{m.wall_s / limit:.2f}", f"{m.peak_rss_mb:.0f}",
          str(m.extra.get("requests_served")), "ok" if m.ok else f"FAILED: {m.note}"] for m in measurements],
    )
    our = next((m for m in measurements if m.tool == bench.OURS), None)
    their = next((m for m in measurements if m.tool == bench.PEER), None)
    payload: dict = {"created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": bench.git_commit(),
                     "cpus": os.cpu_count(), "n": n, "latency_s": LATENCY_S, "max_concurrency": CONCURRENCY,
                     "physical_limit_s": limit, "server_load_check": load,
                     "measurements": [bench.asdict(m) for m in measurements]}
    if our and our.ok:
        ratio = our.wall_s / limit
        payload["ours_over_limit"] = ratio
        print(f"\nours / physical limit ({limit:.2f} s): {ratio:.2f}x  (target <= {LIMIT_FACTOR}x: "
              f"{'yes' if ratio <= LIMIT_FACTOR else 'NO'})"
              + ("  -- quick mode: start-up dominates at this size" if n < 5000 else ""))
    if our and their and our.ok and their.ok:
        payload["ours_over_peer_wall"] = our.wall_s / their.wall_s
        payload["ours_over_peer_rss"] = our.peak_rss_mb / their.peak_rss_mb
        print(f"ours / eval-harness: wall {our.wall_s / their.wall_s:.2f}, peak RSS "
              f"{our.peak_rss_mb / their.peak_rss_mb:.2f}  (< 1.00 means ours is faster / smaller)")
    bench.OUT.mkdir(parents=True, exist_ok=True)
    out = bench.OUT / "http_results.json"
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nJSON: {out}")
    return 0 if measurements and all(m.ok for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
