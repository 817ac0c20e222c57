"""python_function isolation on the standard run fixture: the default (the async stub on the
runner's own loop) vs ``thread`` vs ``process``.

    python benchmarks/isolation_bench.py [--n 10000] [--lat 0.02] [--repeat 1] [--baseline-code DIR]

Each pass writes a fresh fixture (benchmarks/make_fixture.py: N cases x 2 variants of a
stub agent that sleeps LAT s, concurrency 64), sets ``isolation`` (or not) on both variants and times
``evalh run`` as a whole process (fresh DAGSTER_HOME), polling the peak RSS of its process
tree every 50 ms, as benchmarks/run.py does. ``--baseline-code DIR`` also times another
checkout (PYTHONPATH=DIR, no isolation key) in the same invocation, for an A/B.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
MAKE_FIXTURE = REPO / "benchmarks" / "make_fixture.py"


def measure(code: Path, isolation: str | None, n: int, lat: float) -> dict:
    root = Path(tempfile.mkdtemp(prefix="evalh_isolation_"))
    try:
        subprocess.run([sys.executable, str(MAKE_FIXTURE), str(root / "fx"), str(n), str(lat)], check=True)
        if isolation:
            eval_yaml = root / "fx" / "eval.yaml"
            eval_yaml.write_text(eval_yaml.read_text().replace(
                "target: stub_agent:run", f"target: stub_agent:run\n    isolation: {isolation}"))
        home = root / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(code)}
        start = time.perf_counter()
        proc = psutil.Popen([sys.executable, "-m", "evalh_pipeline.cli", "run", str(root / "fx" / "eval.yaml")],
                            env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = 0
        while proc.poll() is None:
            try:
                tree = [proc, *proc.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.05)
        wall = time.perf_counter() - start
        ok = proc.returncode == 0 and any((root / "fx" / "runs").glob("*/summary.yaml"))
        return {"wall_s": round(wall, 2), "peak_rss_mb": round(peak / 2**20), "ok": ok}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--lat", type=float, default=0.02)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--baseline-code", type=Path, help="another checkout to time too (A/B)")
    args = parser.parse_args()
    configs = [("default", REPO, None), ("thread", REPO, "thread"), ("process", REPO, "process")]
    if args.baseline_code:
        configs.insert(0, (f"baseline {args.baseline_code}", args.baseline_code, None))
    results = []
    for _ in range(args.repeat):
        for label, code, isolation in configs:  # interleaved: every config sees the same load
            figures = measure(code, isolation, args.n, args.lat)
            results.append({"config": label, **figures})
            print(f"{label:>40}: {figures['wall_s']:7.2f} s  {figures['peak_rss_mb']:5d} MB  "
                  f"{'ok' if figures['ok'] else 'FAILED'}", flush=True)
    out = REPO / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "isolation_results.json").write_text(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
