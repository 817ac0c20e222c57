"""The contract's own floor per trivial cell in this interpreter: instructions, counted by valgrind.

    python benchmarks/cell_floor.py [--small 100] [--large 600] [--no-loop]

What ``cell_instructions.py --cells trivial`` counts for the engine, counted here for the least
Python a cell can run and still do what the contract asks of it, on the same make_fixture.py
fixtures (the same stub, cases and 2 evaluators), the same way (valgrind, the ``--large``
minus ``--small`` fixture over the difference in cells):

- per case: its line decoded once (``from_json``) and hashed (sha256), its bytes kept for the
  variants;
- per cell: a copy of the case for the target (``from_json`` of the cached bytes), the async
  target called on an event loop by a fixed set of lanes (``max_concurrency`` of them pulling
  cells from one iterator, as runner/pool.py), the answer checked (a dict, its output a
  string, its tool calls named, its metrics numbers), the trace line's fields in a dict (two
  timestamps, the latency, the case's three hashes, the executor), one ``to_json``, one
  sha256 (the seal), one buffered write;
- per cell, judging: the 2 evaluators' verdicts (``tool_called``, ``contains_text``) from the
  fields in hand, a result line each (one ``to_json``), one buffered write each; the trace's
  hash is the seal in hand (not the line read back and hashed again).

No pydantic model, no adapter or evaluator object, no deadline, no retry, no budget, no
progress, no masking, no resume bookkeeping: what it leaves out is what the engine's extra
instructions pay for. ``--no-loop`` steps the target's coroutine by hand instead of awaiting
it in a lane on the event loop: the difference is what the loop's turn costs a cell (the
stub yields to the loop once). Needs valgrind.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"

# Runs in the measured process, in the fixture's folder.
FLOOR = r'''
import asyncio, hashlib, math, sys
from datetime import datetime, timezone
from pydantic_core import from_json, to_json
sys.path.insert(0, ".")
from stub_agent import run as target

cases = [(from_json(line), line, hashlib.sha256(line).hexdigest()[:16]) for line in open("cases.jsonl", "rb")]
variants = [{"name": "agent_a"}, {"name": "agent_b"}]
ANY_OF = ["Richmond", "Brunswick", "Carlton", "Fitzroy"]
EXECUTOR = {"host": "vm", "pid": 1, "shard": "1-of-1"}
NUMBERS = ("token_input", "token_output", "cost_usd")

def checked(answer):
    if not isinstance(answer, dict) or not isinstance(answer.get("final_answer"), str):
        raise ValueError("not an answer")
    for call in answer.get("tool_calls", ()):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ValueError("a tool call without a name")
    metrics = answer.get("metrics") or {}
    for key in NUMBERS:
        value = metrics.get(key)
        if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0):
            raise ValueError(f"metrics.{key}")
    return answer

async def on_loop(coro):
    return await coro

async def driven(coro):
    # The target's coroutine stepped by hand to its end: what the cell costs without the
    # event loop's turn (the stub yields to it once).
    try:
        while True:
            coro.send(None)
    except StopIteration as done:
        return done.value

call = driven if sys.argv[1:] == ["--no-loop"] else on_loop

def cells():
    for case, raw, case_hash in cases:
        for variant in variants:
            yield case, raw, case_hash, variant

async def main():
    now, utc = datetime.now, timezone.utc
    with open("floor_traces.jsonl", "wb") as traces, open("floor_results.jsonl", "wb") as results:
        async def lane(iterator):
            for case, raw, case_hash, variant in iterator:
                started = now(utc)
                answer = checked(await call(target(from_json(raw), variant)))
                finished = now(utc)
                trace = {"schema_version": "1.0", "run_id": "floor", "case_id": case["id"],
                         "variant_name": variant["name"], "sample": 0,
                         "started_at": started, "finished_at": finished,
                         "latency_ms": round((finished - started).total_seconds() * 1000),
                         "input": case["input"], "output": {"final_answer": answer["final_answer"]},
                         "tool_calls": answer["tool_calls"], "metrics": answer["metrics"], "error": None,
                         "extra": {"executor": EXECUTOR}, "case_hash": case_hash,
                         "variant_hash": "0fd2214869b18126", "fixture_hash": "42c15180e501471c"}
                body = to_json(trace)
                seal = hashlib.sha256(body).hexdigest()[:32]
                traces.write(body[:-1] + b',"trace_hash":"' + seal.encode() + b'"}\n')
                called = any(call["name"] == "get_listing_details" for call in answer["tool_calls"])
                found = [s for s in ANY_OF if s in answer["final_answer"]]
                judged_at = now(utc)
                for name, passed, detail in (("calls_listing_tool", called, {"tools": ["get_listing_details"]}),
                                             ("mentions_suburb", bool(found), {"any_of_matched": found})):
                    results.write(to_json({"run_id": "floor", "case_id": case["id"],
                                           "variant_name": variant["name"], "sample": 0, "evaluator": name,
                                           "passed": passed, "score": 1.0 if passed else 0.0, "detail": detail,
                                           "started_at": judged_at, "finished_at": judged_at, "error": None,
                                           "trace_hash": seal}) + b"\n")
        iterator = cells()
        await asyncio.gather(*(lane(iterator) for _ in range(64)))

asyncio.run(main())
'''


def instructions(fixture: Path, no_loop: bool) -> int:
    """Instructions of one floor run on ``fixture`` (valgrind's count)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(PYTHON), "-c", FLOOR,
         *(["--no-loop"] if no_loop else [])],
        cwd=fixture, capture_output=True, text=True, check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        sys.exit(f"error: no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100, help="cases of the small fixture")
    parser.add_argument("--large", type=int, default=600, help="cases of the large fixture")
    parser.add_argument("--no-loop", action="store_true",
                        help="step the target's coroutine by hand, not on the event loop (what the loop's turn costs)")
    args = parser.parse_args()
    counts = {}
    with tempfile.TemporaryDirectory(prefix="evalh-floor-") as tmp:
        for n in (args.small, args.large):
            fixture = Path(tmp) / f"floor{n}"
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_fixture.py"), str(fixture), str(n), "0"],
                           check=True)
            counts[n] = instructions(fixture, args.no_loop)
            print(f"  floor: {n:,} cases x 2: {counts[n]:,} instructions", flush=True)
    per = (counts[args.large] - counts[args.small]) // (2 * (args.large - args.small))
    how = " (the target stepped by hand, no event loop)" if args.no_loop else ""
    print(f"per trivial cell, the contract's floor{how}: {per:,} instructions")


if __name__ == "__main__":
    main()
