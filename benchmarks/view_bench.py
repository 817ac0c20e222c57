#!/usr/bin/env python3
"""Viewer benchmark (issue 26): `evalh view` over a run of 500,000 results.

    python benchmarks/view_bench.py            # 50,000 cases x 2 variants x 5 evaluators = 500,000 results
    python benchmarks/view_bench.py --cases 5000 --keep

The run folder is written directly (untimed): run.json, config.yaml, cases.jsonl, traces.jsonl
(100,000 traces) and results.jsonl (500,000 results, one variant regressing on a tenth of
the cases), then its summary.yaml and cell store are made by the engine's own summary
(`summarize_run`), as `evalh run` leaves every run. Then `evalh view RUNS --port P` is started
as a whole process and, with psutil polling the PSS of its process tree every 50 ms:

- each page is fetched cold and warm over HTTP (wall time to the last byte): the runs list,
  the run page (variants, evaluators, baseline comparison, first page of the matrix), the
  matrix filtered to regressions, page 500 of the matrix, a cell and another near the end of
  the traces (its traces found through the cell store's line index), the history;
- eight run pages are asked for at once (wall time until the last one is in);
- the run page is opened in Debian's chromium (Playwright, when installed): first paint and
  first contentful paint from the browser's own Paint Timing entries, measured from the
  start of navigation (the server's work included).

Targets: first paint of the run page <= 2 s; viewer memory (peak PSS of its process tree)
<= 300 MB. Results in benchmarks/out/view_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

FIRST_PAINT_TARGET_S = 2.0
MEMORY_TARGET_MB = 300.0
EVALUATORS = ["calls_listing_tool", "mentions_suburb", "exact_tool", "answer_shape", "fast_enough"]
VARIANTS = ["agent_a", "agent_b"]
CHROMIUM = Path(os.environ.get("EVALH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-gpu", "--disable-dev-shm-usage"]


def write_run(runs: Path, cases: int) -> Path:
    """A run folder as `evalh run` writes it, with `cases` x 2 variants x 5 evaluators."""
    run_id = "2026-01-01T00-00-00-000000_viewbench"
    run = runs / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "run_id": run_id, "eval_name": "viewbench", "config_path": "eval.yaml", "config_hash": "h",
        "created_at": "2026-01-01T00:00:00Z", "variants": VARIANTS}, indent=2) + "\n")
    (run / "config.yaml").write_text("eval: {name: viewbench}\nrun: {baseline_variant: agent_a}\n")
    stamp = "2026-01-01T00:00:00+00:00"
    suburbs = ["Richmond", "Brunswick", "Carlton", "Fitzroy"]
    with (run / "cases.jsonl").open("w") as f_cases, (run / "traces.jsonl").open("w") as f_traces, \
            (run / "results.jsonl").open("w") as f_results:
        for i in range(cases):
            case_id, suburb = f"c{i:06d}", suburbs[i % 4]
            case_input = {"user_message": f"price near listing L{i}?"}
            f_cases.write(json.dumps({"schema_version": "1.0", "id": case_id, "input": case_input,
                                      "metadata": {"suburb": suburb}, "expected": {}}) + "\n")
            for variant in VARIANTS:
                broken = variant == "agent_b" and i % 10 == 0
                answer = f"Listing L{i} is in {'Nowhere' if broken else suburb}; average is 1.2M."
                f_traces.write(json.dumps({
                    "schema_version": "1.0", "run_id": run_id, "case_id": case_id, "variant_name": variant,
                    "sample": 0, "started_at": stamp, "finished_at": stamp, "latency_ms": 10 + i % 7,
                    "input": case_input, "output": {"final_answer": answer, "thinking": None, "structured": None},
                    "messages": [{"role": "user", "content": case_input["user_message"]},
                                 {"role": "assistant", "content": answer}],
                    "tool_calls": [{"name": "get_listing_details", "arguments": {"listing_id": f"L{i}"}}],
                    "tool_results": [], "metrics": {"token_input": 100, "token_output": 20, "cost_usd": 0.0001},
                    "error": None, "extra": {}}) + "\n")
            for evaluator in EVALUATORS:  # one block per evaluator, as the engine writes them
                for variant in VARIANTS:
                    passed = not (variant == "agent_b" and evaluator == "mentions_suburb" and i % 10 == 0)
                    f_results.write(json.dumps({
                        "schema_version": "1.0", "run_id": run_id, "case_id": case_id, "variant_name": variant,
                        "sample": 0, "evaluator": evaluator, "evaluator_type": "contains_text", "passed": passed,
                        "score": 1.0 if passed else 0.0, "reason": "ok" if passed else "missing the suburb",
                        "detail": {}, "started_at": stamp, "finished_at": stamp, "latency_ms": 0,
                        "error": None}) + "\n")
    return run


SUMMARY_CODE = """
import sys
from pathlib import Path
from evalh_pipeline.common.yaml_files import dump_yaml
from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
run = RunDirectory(Path(sys.argv[1]))
summary = summarize_run(run, variant_order=["agent_a", "agent_b"], pass_criteria=PassCriteria(),
                        baseline_variant="agent_a", config_path="eval.yaml", config_hash="h")
write_atomic(run.summary, dump_yaml(summary.model_dump(mode="json")))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PeakMemory:
    """Polls the PSS of a process tree every 50 ms in a thread; ``peak_mb`` is the maximum seen."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, bench.tree_rss_bytes(self.pid))
            self._stop.wait(0.05)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 1e6


def fetch(url: str) -> tuple[float, int, int]:
    """(seconds to the last byte, status, bytes) of one GET."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    return time.perf_counter() - started, status, len(body)


def wait_for(url: str, proc: subprocess.Popen, timeout_s: float = 120) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        if proc.poll() is not None:
            sys.exit(f"evalh view exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return time.perf_counter() - started
        except OSError:
            time.sleep(0.05)
    sys.exit(f"evalh view did not answer at {url} within {timeout_s} s")


def paint_times(url: str) -> dict[str, float] | None:
    """First paint / first contentful paint of ``url`` in chromium (s since navigation start)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not CHROMIUM.exists():
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # A user's browser is already running: open another page first (the runs list), so
            # the figure is the run page's, not the browser's own start-up.
            page.goto(url.split("/runs/", 1)[0] + "/", wait_until="load", timeout=120_000)
            page.goto(url, wait_until="load", timeout=120_000)
            # Paint entries can arrive after the load event: wait for both (buffered observer).
            entries = page.evaluate("""() => new Promise(resolve => {
                const seen = {};
                new PerformanceObserver(list => {
                    for (const e of list.getEntries()) seen[e.name] = e.startTime;
                    if ('first-paint' in seen && 'first-contentful-paint' in seen) resolve(seen);
                }).observe({type: 'paint', buffered: true});
            })""")
            nav = page.evaluate("() => performance.getEntriesByType('navigation')[0].responseEnd")
        finally:
            browser.close()
    return {"first_paint_s": entries.get("first-paint", float("nan")) / 1000,
            "first_contentful_paint_s": entries.get("first-contentful-paint", float("nan")) / 1000,
            "response_end_s": nav / 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=50_000, help="cases (x 2 variants x 5 evaluators results)")
    parser.add_argument("--keep", action="store_true", help="keep the run folder (path printed)")
    parser.add_argument("--repeat", type=int, default=3, help="first-paint measurements (the median is reported)")
    args = parser.parse_args(argv)

    evalh = bench.find_our_evalh()
    python = evalh.parent / "python"
    root = Path(tempfile.mkdtemp(prefix="view_bench-"))
    runs = root / "runs"
    results: dict[str, object] = {"cases": args.cases, "results": args.cases * 2 * len(EVALUATORS)}
    proc = None
    paints: list[dict[str, float]] = []
    paint = None
    try:
        started = time.perf_counter()
        run = write_run(runs, args.cases)
        subprocess.run([str(python), "-c", SUMMARY_CODE, str(run)], check=True, cwd=bench.REPO)
        print(f"run written and summarized in {time.perf_counter() - started:.1f} s (untimed): {run}", flush=True)

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "EVALH_RUNS_DIR": str(runs)}
        proc = subprocess.Popen([str(evalh), "view", str(runs), "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        memory = PeakMemory(proc.pid)
        results["startup_s"] = wait_for(base, proc)
        run_url = f"{base}/runs/{run.name}"
        pages = {
            "runs list": f"{base}/",
            "run page": run_url,
            "run page, regressed filter": f"{run_url}?regressed=1",
            "run page, page 500": f"{run_url}?page=500",
            "run page, text filter": f"{run_url}?text=nowhere",
            "cell": f"{run_url}/cases/c000010",
            "cell, another case": f"{run_url}/cases/{f'c{args.cases - 7:06d}'}",
            "history": f"{base}/evals/viewbench",
        }
        timings = {}
        for name, url in pages.items():
            cold, status, size = fetch(url)
            warm, _, _ = fetch(url)
            timings[name] = {"cold_s": cold, "warm_s": warm, "status": status, "bytes": size}
            print(f"  {name:28s} {status}  cold {cold:6.2f} s  warm {warm:6.2f} s  {size / 1024:7.1f} KiB", flush=True)
        results["pages"] = timings
        # Eight run pages asked for at once (the viewer computes two at a time: memory stays bounded).
        from concurrent.futures import ThreadPoolExecutor

        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            statuses = [status for _, status, _ in pool.map(fetch, [run_url] * 8)]
        results["burst_8_run_pages_s"] = time.perf_counter() - started
        print(f"  8 run pages at once          {statuses.count(200)}/8 ok in {results['burst_8_run_pages_s']:.2f} s",
              flush=True)
        paints = [p for p in (paint_times(run_url) for _ in range(args.repeat)) if p is not None]
        paint = sorted(paints, key=lambda p: p["first_paint_s"])[len(paints) // 2] if paints else None
        results["paint"] = paint
        results["paints"] = paints
        results["peak_pss_mb"] = memory.stop()
    finally:
        if proc is not None:
            bench.kill_tree(proc.pid)
            proc.wait()
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    results["load_average"] = os.getloadavg()
    ok = True
    if paint:
        fp = paint["first_paint_s"]
        met = fp <= FIRST_PAINT_TARGET_S
        ok &= met
        print(f"run page in chromium (median of {len(paints)}): first paint {fp:.2f} s, first contentful paint "
              f"{paint['first_contentful_paint_s']:.2f} s (target <= {FIRST_PAINT_TARGET_S} s: {'ok' if met else 'NO'})")
    else:
        print("run page in chromium: not measured (no playwright or no chromium)")
    peak = float(results["peak_pss_mb"])  # type: ignore[arg-type]
    met = peak <= MEMORY_TARGET_MB
    ok &= met
    print(f"viewer peak memory (PSS of its process tree): {peak:.0f} MB (target <= {MEMORY_TARGET_MB:.0f} MB: "
          f"{'ok' if met else 'NO'})")
    bench.OUT.mkdir(parents=True, exist_ok=True)
    (bench.OUT / "view_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
