#!/usr/bin/env python3
"""How long a run's summary takes to add the judge calibration when the eval has labels on
many earlier runs (issue 36).

    python benchmarks/calibration_bench.py [--runs 10] [--cases 200] [--labels-per-run 40]

Makes an offline eval (the tests' stub agent, two variants, two deterministic evaluators),
produces and judges ``--runs`` runs in-process, each with different answers (so the labels of
one run do not apply to the others), labels ``--labels-per-run`` cells of each run, then times
``add_calibration`` on the last run (the step every summary runs), best of three.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--labels-per-run", type=int, default=40)
    args = parser.parse_args()

    from evalh_pipeline.models.label import HumanLabel
    from evalh_pipeline.queries.calibration import add_calibration
    from evalh_pipeline.queries.labelled_cells import judged_cells
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.queries.summary import summarize_run
    from evalh_pipeline.runner.stages import prepare_cases, run_variants
    from evalh_pipeline.runner.traces import produce_traces
    from evalh_pipeline.store.labels import append_labels
    from tests.conftest import write_eval

    with tempfile.TemporaryDirectory() as tmp:
        eval_path = write_eval(Path(tmp) / "bench", cases=args.cases)
        cases = eval_path.parent / "cases.jsonl"
        rows = [json.loads(line) for line in cases.read_text().splitlines()]
        runs = []
        for number in range(args.runs):
            for row in rows:
                row["input"]["answer"] = f"answer {row['id']} Paris, take {number}"
            cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
            spec = load_eval(eval_path)
            run_dir = prepare_cases(spec, f"run-{number:03d}").run_dir
            asyncio.run(produce_traces(spec, run_dir))
            asyncio.run(evaluate_traces(spec, run_dir))
            runs.append(run_dir)
            now = datetime.now(timezone.utc)
            cells = sorted(judged_cells(run_dir), key=lambda c: (c.case_id, c.variant_name, c.evaluator))
            append_labels(Path(spec.runs_root), spec.name, [
                HumanLabel(content_hash=c.content_hash, evaluator=c.evaluator, evaluator_hash=c.evaluator_hash,
                           passed=(i % 4 != 0), labeller="bench", labelled_at=now, case_id=c.case_id,
                           variant_name=c.variant_name, sample=c.sample, run_id=c.run_id)
                for i, c in enumerate(cells[:args.labels_per_run])])
        last = runs[-1]
        timings = []
        for _ in range(3):
            summary = summarize_run(last, variant_order=run_variants(last, spec), pass_criteria=spec.config.pass_criteria,
                                    baseline_variant=spec.config.run.baseline_variant, config_path=str(spec.path),
                                    config_hash=last.read_config_hash())
            started = time.perf_counter()
            summary = add_calibration(summary, last, Path(spec.runs_root), spec.name)
            timings.append(time.perf_counter() - started)
        labelled = sum(r.calibration.labels for r in summary.by_evaluator if r.calibration is not None)
        print(f"{args.runs} runs x {args.cases} cases x 2 variants, {args.runs * args.labels_per_run} labels "
              f"({labelled} pooled by the summary): add_calibration best {min(timings):.3f} s "
              f"(runs {', '.join(f'{t:.3f}' for t in timings)})")


if __name__ == "__main__":
    main()
