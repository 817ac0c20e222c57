#!/usr/bin/env python3
"""Rate limits (issue 35): `evalh run` against a streaming server that limits each API key.

    ./dev bench --only ratelimit                      # both scenarios at N=2,000, R=40, concurrency 200
    python benchmarks/ratelimit_bench.py --quick      # N=200: a smoke check of the benchmark itself
    python benchmarks/ratelimit_bench.py --cases 500 --only shared

The server is benchmarks/sse_server.py (lognormal latency, median 0.8 s) started with a token
bucket per key (`--rate`, burst 2): beyond it, an immediate HTTP 429 with `Retry-After`,
`retry-after-ms`, OpenAI's `x-ratelimit-*` headers and its `rate_limit_exceeded` body.
The eval is N cases x 2 `http` variants (`provider: openai_chat`, `stream: true`), run
with `max_concurrency: 200` and the default rate-limit settings (adaptive, start at 200).

  shared     both variants on one key limited to R = 40/s. Ideal: 2N / R (the key's quota
             used from the first second to the last). Targets: no errored cell; wall <= 1.15x
             the ideal; 429 answers <= 10 % of all requests.
  two_keys   one variant on a key of 20/s, the other on a key of 60/s. Each key's
             throughput (requests admitted / the span from its first to its last admission)
             against its limit: within 15 %; the fast key's is not held back by the slow one.

Wall is the whole `evalh run` process (Dagster, judging, summary included), so a small N is
dominated by start-up. Figures: benchmarks/out/ratelimit_results.json.

promptfoo, for comparison, runs the same cases on the same server in the same invocation,
right after `evalh run` (the server's counts reset between them): `promptfoo eval` with its
adaptive (AIMD) scheduler as shipped, `-j` the same concurrency, two `openai:chat`
providers on the same key(s), no cache, the same contains-any assertion. Its wall is its
whole process too. Found at `--promptfoo`, else `$PROMPTFOO_BIN`, else `promptfoo` on PATH
(`npm install promptfoo@0.121.20` in a folder; its node_modules/.bin/promptfoo); without
one it is skipped, saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)
from http_bench import MENTIONS_SUBURB, Server, user_message, write_eval_yaml  # noqa: E402
from sse_server import SUBURBS  # noqa: E402

WALL_RATIO, SHARE_429, KEY_TOLERANCE = 1.15, 0.10, 0.15
KEYS = {"slow": ("Bearer sk-bench-slow", 20.0), "fast": ("Bearer sk-bench-fast", 60.0)}
SHARED_KEY = "Bearer sk-bench-shared"


def write_fixture(folder: Path, n: int, concurrency: int, endpoint: str, keys: list[str]) -> Path:
    """cases.jsonl + eval.yaml: two streaming variants, the first with keys[0], the second keys[-1]."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"c{i:06d}", "input": {"user_message": user_message(i)},
                                "expected": {"answer_should_include": [SUBURBS[i % 4]]}}) + "\n")
    systems = "".join(
        f"  - name: {name}\n    adapter: http\n    provider: openai_chat\n    model: {name}\n    stream: true\n"
        f"    endpoint: {endpoint}\n    headers: {{Authorization: \"{key}\"}}\n    timeout_seconds: 120\n"
        for name, key in (("model_a", keys[0]), ("model_b", keys[-1])))
    write_eval_yaml(folder, "ratelimit_bench", systems, MENTIONS_SUBURB, concurrency)
    return folder


def run_once(server: Server, fixture: Path, label: str, timeout_s: float) -> dict:
    """One measured `evalh run`; the server's counts, the errored cells and the run's rate-limit record."""
    env = bench.with_bytecode({**os.environ, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture))},
                              bench.our_python(), fixture)
    server.get("/reset")
    m = bench.measure_process(label, bench.OURS, [str(bench.find_our_evalh()), "run", str(fixture / "eval.yaml")],
                              cwd=fixture, env=env, timeout_s=timeout_s, log_name=f"{label}-ours")
    stats = server.get("/stats")
    run_dir = bench.find_run_dir(fixture)
    errored, limits = 0, []
    if run_dir is not None and (run_dir / "traces.jsonl").exists():
        with (run_dir / "traces.jsonl").open() as traces:
            errored = sum(1 for line in traces if json.loads(line).get("error"))
        if (run_dir / "rate_limits.jsonl").exists():
            limits = [json.loads(line) for line in (run_dir / "rate_limits.jsonl").read_text().splitlines()]
    admitted = sum(k["admitted"] for k in stats["keys"])
    return {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "ok": m.ok, "note": m.note, "log": m.log, "load": m.load,
            "admitted": admitted, "rate_limited": stats["rate_limited"],
            "share_429": stats["rate_limited"] / max(1, admitted + stats["rate_limited"]),
            "errored_cells": errored, "keys": stats["keys"],
            "limits": [{k: r[k] for k in ("stage", "limit", "requests", "rate_limited", "max_in_flight", "gave_up")}
                       | {"level_changes": len(r["levels"]), "last_level": r["levels"][-1][1]} for r in limits]}


def write_promptfoo_config(folder: Path, n: int, endpoint: str, keys: list[str]) -> Path:
    """promptfooconfig.yaml for the same cases: two `openai:chat` providers on the server, the
    first with keys[0], the second with keys[-1] (JSON, which YAML reads)."""
    base_url = endpoint.rsplit("/chat/completions", 1)[0]
    providers = [{"id": f"openai:chat:{name}", "label": name,
                  "config": {"apiBaseUrl": base_url, "apiKey": key.removeprefix("Bearer ")}}
                 for name, key in (("model_a", keys[0]), ("model_b", keys[-1]))]
    config = {"description": "ratelimit_bench", "prompts": ["{{user_message}}"], "providers": providers,
              "defaultTest": {"assert": [{"type": "contains-any", "value": list(SUBURBS)}]},
              "tests": [{"vars": {"user_message": user_message(i)}} for i in range(n)]}
    path = folder / "promptfooconfig.yaml"
    path.write_text(json.dumps(config))
    return path


def find_promptfoo(given: str | None) -> Path | None:
    """promptfoo's CLI: ``given``, else $PROMPTFOO_BIN, else on PATH (None: not installed)."""
    found = given or os.environ.get("PROMPTFOO_BIN") or shutil.which("promptfoo")
    return Path(found) if found and Path(found).exists() else None


def run_promptfoo(promptfoo: Path, server: Server, fixture: Path, n: int, concurrency: int, keys: list[str],
                  label: str, timeout_s: float) -> dict:
    """One measured `promptfoo eval` on the same server: its wall, the server's counts, its errors."""
    config = write_promptfoo_config(fixture, n, server.endpoint, keys)
    home = fixture / "promptfoo_home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "PROMPTFOO_CONFIG_DIR": str(home), "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_DISABLE_SHARING": "1", "OPENAI_API_KEY": "unused"}
    output = fixture / "promptfoo_results.json"
    server.get("/reset")
    m = bench.measure_process(label, "promptfoo", [str(promptfoo), "eval", "-c", str(config), "-j", str(concurrency),
                                                    "--no-cache", "--no-progress-bar", "--no-table", "-o", str(output)],
                              cwd=fixture, env=env, timeout_s=timeout_s, log_name=f"{label}-promptfoo")
    stats = server.get("/stats")
    errors = None
    if output.exists():
        results = json.loads(output.read_text()).get("results", {})
        errors = (results.get("stats") or {}).get("errors")
    admitted = sum(k["admitted"] for k in stats["keys"])
    # promptfoo exits 100 when an assertion failed; that is a result, not a crash.
    ok = m.exit_code in (0, 100) and errors is not None
    return {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "ok": ok, "exit_code": m.exit_code, "log": m.log, "load": m.load,
            "admitted": admitted, "rate_limited": stats["rate_limited"],
            "share_429": stats["rate_limited"] / max(1, admitted + stats["rate_limited"]),
            "errored_cells": errors, "keys": stats["keys"]}


def key_throughput(keys: list[dict]) -> dict:
    """Per key: its limit, the rate it admitted (admitted / the span of its admissions), the ratio."""
    found = {}
    for key in keys:
        span = (key["last"] or 0) - (key["first"] or 0)
        achieved = (key["admitted"] - 1) / span if span > 0 else float("nan")
        found[key["key"]] = {"rate": key["rate"], "achieved": achieved, "span_s": span,
                             "ratio": achieved / key["rate"] if key["rate"] else None}
    return found


def _print_promptfoo(row: dict, ideal: float | None) -> None:
    over = f" = {row['wall_s'] / ideal:.3f}x ideal" if ideal else ""
    print(f"  promptfoo: wall {row['wall_s']:.1f} s{over}; 429s {row['rate_limited']} of "
          f"{row['admitted'] + row['rate_limited']} requests = {100 * row['share_429']:.1f} %; errored cells "
          f"{row['errored_cells']}; {'ok' if row['ok'] else 'FAILED: exit ' + str(row['exit_code']) + ' (' + row['log'] + ')'}",
          flush=True)


def shared_scenario(root: Path, n: int, rate: float, concurrency: int, timeout_s: float,
                    promptfoo: Path | None = None) -> dict:
    ideal = 2 * n / rate
    print(f"\n== shared: {n:,} cases x 2 variants on one key of {rate:g}/s, concurrency {concurrency}: "
          f"ideal {ideal:.1f} s  ({bench.load_text()})", flush=True)
    server = Server("--rate", str(rate))
    try:
        fixture = write_fixture(root / "shared", n, concurrency, server.endpoint, [SHARED_KEY])
        row = run_once(server, fixture, f"ratelimit-shared-{n}", timeout_s)
        if promptfoo is not None:
            row["promptfoo"] = run_promptfoo(promptfoo, server, fixture, n, concurrency, [SHARED_KEY],
                                             f"ratelimit-shared-{n}", timeout_s)
            row["promptfoo"]["over_ideal"] = row["promptfoo"]["wall_s"] / ideal
    finally:
        server.close()
    row.update(ideal_s=ideal, over_ideal=row["wall_s"] / ideal)
    print(f"  wall {row['wall_s']:.1f} s = {row['over_ideal']:.3f}x ideal (target <= {WALL_RATIO}); 429s "
          f"{row['rate_limited']} of {row['admitted'] + row['rate_limited']} requests = {100 * row['share_429']:.1f} % "
          f"(target <= {100 * SHARE_429:.0f} %); errored cells {row['errored_cells']}; "
          f"{'ok' if row['ok'] else 'FAILED: ' + row['note'] + ' (' + row['log'] + ')'}", flush=True)
    for limit in row["limits"]:
        print(f"  limit {limit['limit']}: {limit['requests']} requests, {limit['rate_limited']} rate limited, "
              f"max in flight {limit['max_in_flight']}, level changes {limit['level_changes']}, "
              f"last level {limit['last_level']}", flush=True)
    if "promptfoo" in row:
        _print_promptfoo(row["promptfoo"], ideal)
    return row


def two_keys_scenario(root: Path, n: int, concurrency: int, timeout_s: float, promptfoo: Path | None = None) -> dict:
    print(f"\n== two_keys: {n:,} cases x 2 variants, keys of {KEYS['slow'][1]:g}/s and {KEYS['fast'][1]:g}/s, "
          f"concurrency {concurrency}  ({bench.load_text()})", flush=True)
    server = Server("--key-rate", f"{KEYS['slow'][0]}={KEYS['slow'][1]}", "--key-rate",
                    f"{KEYS['fast'][0]}={KEYS['fast'][1]}")
    try:
        fixture = write_fixture(root / "two_keys", n, concurrency, server.endpoint,
                                [KEYS["slow"][0], KEYS["fast"][0]])
        row = run_once(server, fixture, f"ratelimit-two-keys-{n}", timeout_s)
        if promptfoo is not None:
            row["promptfoo"] = run_promptfoo(promptfoo, server, fixture, n, concurrency,
                                             [KEYS["slow"][0], KEYS["fast"][0]], f"ratelimit-two-keys-{n}", timeout_s)
            row["promptfoo"]["throughput"] = key_throughput(row["promptfoo"]["keys"])
    finally:
        server.close()
    row["throughput"] = key_throughput(row["keys"])
    for key in row["keys"]:
        got = row["throughput"][key["key"]]
        print(f"  {key['key']} (limit {key['rate']:g}/s): {key['admitted']} admitted over {got['span_s']:.1f} s = "
              f"{got['achieved']:.1f}/s ({100 * got['achieved'] / key['rate']:.0f} % of its limit; target >= "
              f"{100 * (1 - KEY_TOLERANCE):.0f} %), {key['rate_limited']} 429s", flush=True)
    print(f"  wall {row['wall_s']:.1f} s; errored cells {row['errored_cells']}; "
          f"{'ok' if row['ok'] else 'FAILED: ' + row['note'] + ' (' + row['log'] + ')'}", flush=True)
    if "promptfoo" in row:
        for key, got in row["promptfoo"]["throughput"].items():
            print(f"  promptfoo {key} (limit {got['rate']:g}/s): {got['achieved']:.1f}/s "
                  f"({100 * got['achieved'] / got['rate']:.0f} % of its limit)", flush=True)
        _print_promptfoo(row["promptfoo"], None)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=40.0, help="the shared key's requests per second")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--only", choices=("shared", "two_keys"))
    parser.add_argument("--quick", action="store_true", help="200 cases (start-up dominates: a smoke check)")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures and run directories")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--promptfoo", help="promptfoo's CLI (default: $PROMPTFOO_BIN, else on PATH)")
    args = parser.parse_args(argv)
    n = 200 if args.quick else args.cases
    promptfoo = find_promptfoo(args.promptfoo)
    if promptfoo is None:
        print("promptfoo not found (--promptfoo, $PROMPTFOO_BIN, PATH): running evalh only", flush=True)
    root = Path(tempfile.mkdtemp(prefix="evalh-ratelimit-bench-"))
    figures: dict = {"cases": n, "concurrency": args.concurrency}
    try:
        if args.only in (None, "shared"):
            figures["shared"] = shared_scenario(root, n, args.rate, args.concurrency, args.timeout, promptfoo)
        if args.only in (None, "two_keys"):
            figures["two_keys"] = two_keys_scenario(root, n, args.concurrency, args.timeout, promptfoo)
    finally:
        if args.keep:
            print(f"fixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    out = bench.OUT / "ratelimit_results.json"
    out.write_text(json.dumps({"commit": bench.git_commit(), **figures}, indent=2) + "\n")
    print(f"results: {out}")
    return 0 if all(row["ok"] for key, row in figures.items() if isinstance(row, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
