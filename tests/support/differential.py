"""Fixtures of the differential test (tests/runner/test_differential_outputs.py): small evals
covering each kind of cell, run through the stages in process, and their traces.jsonl and
results.jsonl normalised so that two runs of the same code, or of old and new code, give
the same bytes.

What normalising changes, and nothing else:

- timestamps (``started_at``, ``finished_at``, ``created_at``, ``judged_at``);
- latencies (``latency_ms``, the metrics' ``latency_first_token_ms`` /
  ``latency_last_token_ms`` and ``tokens_per_second``, which is tokens over a latency);
- the hashes that cover them: a trace's ``trace_hash`` (the sha256 of its line), and every
  result's ``trace_hash`` (the hash of the trace it judged);
- where the run happened: the fixture's folder and the loopback server's URL, which differ
  between test runs, are written as ``<ROOT>`` and ``<SERVER>``, and the variant hash of
  the http variant (its config names the server's URL) as ``<variant_hash of SERVER>``; in an error's ``stack``,
  the frames of the harness's own code (``evalh_pipeline/...``: where it called the system,
  a path and line numbers that move with every edit) are one ``<evalh_pipeline frames>``
  line; the system's own frames are kept; ``extra.executor`` (the host, process id and
  shard the cell ran on: runner/shards.py) as ``<executor>``.

The cells run at a concurrency above their number, so no cell waits for a slot (the wait,
``queue_wait_ms``, is a latency that would come and go with the machine's load).

Run with ``EVALH_UPDATE_GOLDEN=1`` to capture the golden files again (then review the diff).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "runner" / "golden"

TIMESTAMPS = ("started_at", "finished_at", "created_at", "judged_at")
LATENCIES = ("latency_ms",)
METRIC_LATENCIES = ("latency_first_token_ms", "latency_last_token_ms", "tokens_per_second")
HASHES = ("trace_hash",)

# A python_function agent: a sync and an async entry point, one case that raises, one that
# never answers (the variant's timeout), one whose answer has tools, metrics and extra.
AGENT = '''
import asyncio


def answer(case, variant):
    text = case["input"]["question"]
    if case["id"] == "raises":
        raise ValueError("the agent gave up on " + text)
    return {
        "final_answer": "Paris is the answer to " + text,
        "thinking": "think about " + text,
        "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"q": text}}],
        "tool_results": [{"tool_call_id": "t1", "name": "lookup", "content": "Paris"}],
        "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Paris"}],
        "metrics": {"token_input": 5, "token_output": 7, "cost_usd": 0.001, "custom": {"variant": variant["name"]}},
        "extra": {"note": "extra " + case["id"]},
    }


def sync_run(case, variant):
    print("printed by", case["id"])
    if case["id"] == "slow":  # a malformed answer: the check's message is in the trace
        return {"final_answer": "Paris", "metrics": {"token_input": -1, "cost_usd": "free"}}
    return answer(case, variant)


async def async_run(case, variant):
    if case["id"] == "slow":
        await asyncio.sleep(600)  # cut by the variant's timeout
    await asyncio.sleep(0)
    return answer(case, variant)
'''

CLI_AGENT = '''
import json, sys
case = json.load(sys.stdin)
if case["id"] == "raises":
    print("cli agent failed", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"final_answer": "Paris via cli: " + case["input"]["question"],
                  "metrics": {"token_input": 1, "token_output": 2}}))
'''

WORKSPACE_AGENT = '''
from pathlib import Path


def run(case, variant):
    root = Path(variant["_workspace_path"])
    (root / "app.py").write_text("VALUE = %r\\n" % case["input"]["question"])
    if case["id"] == "raises":
        (root / "half.txt").write_text("partial")
        raise RuntimeError("agent crashed mid-edit")
    return {"final_answer": "edited for " + case["input"]["question"]}
'''

CASES = [
    {"id": "plain", "input": {"question": "capital of France?"},
     "expected": {"answer_should_include": ["Paris"], "answer": "Paris"}, "metadata": {"group": "a"}},
    {"id": "unicode", "input": {"question": "capitale de la France ? « é » \u2603"},
     "expected": {"answer_should_include": ["Paris"]}, "metadata": {"group": "b"}},
    {"id": "raises", "input": {"question": "impossible"}, "expected": {"answer_should_include": ["Paris"]}},
    {"id": "slow", "input": {"question": "take your time"}, "expected": {"answer_should_include": ["Paris"]}},
]

# Three deterministic evaluators, judged inline as every fresh run does.
EVALUATORS = """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
  - name: says_capital
    type: regex_match
    config: {pattern: "(?i)paris"}
"""


def write_fixtures(root: Path, server_url: str) -> dict[str, Path]:
    """The evals under ``root``: name -> eval.yaml. ``server_url``: the streaming chat
    server's base URL (tests/support/streaming_chat_server.py)."""
    root.mkdir(parents=True, exist_ok=True)
    cells = root / "cells"
    cells.mkdir()
    (cells / "agent.py").write_text(AGENT)
    (cells / "cli_agent.py").write_text(CLI_AGENT)
    (cells / "cases.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES))
    systems = f"""
  - name: sync_fn
    adapter: python_function
    target: agent:sync_run
  - name: async_fn
    adapter: python_function
    target: agent:async_run
    timeout_seconds: 2
  - name: async_thread
    adapter: python_function
    target: agent:async_run
    isolation: thread
    timeout_seconds: 2
  - name: sync_process
    adapter: python_function
    target: agent:sync_run
    isolation: process
    workers: 1
    timeout_seconds: 60
  - name: http_stream
    adapter: http
    endpoint: {server_url}/chat/completions
    provider: openai_chat
    model: streamer
    stream: true
    request_template: {{messages: [{{role: user, content: "{{{{ case.input.question }}}}"}}]}}
    timeout_seconds: 60
  - name: cli
    adapter: cli
    command: [python, cli_agent.py]
    stdin_template: "{{{{ case_json }}}}"
    output_format: json
    timeout_seconds: 60
"""
    (cells / "eval.yaml").write_text(_eval_yaml("cells", systems, EVALUATORS, root))

    ws = root / "workspace"
    (ws / "fixture").mkdir(parents=True)
    (ws / "fixture" / "app.py").write_text("VALUE = 0\n")
    (ws / "fixture" / "README.md").write_text("keep me\n")
    (ws / "ws_agent.py").write_text(WORKSPACE_AGENT)
    (ws / "cases.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES[:3]))
    ws_systems = """
  - name: editor
    adapter: python_function
    target: ws_agent:run
"""
    ws_evaluators = """
  - name: mentions_edit
    type: contains_text
    config: {text: edited}
"""
    workspace = "workspace:\n  type: tempdir_snapshot\n  copy_from: fixture\n"
    (ws / "eval.yaml").write_text(_eval_yaml("workspace", ws_systems, ws_evaluators, root, workspace))
    return {"cells": cells / "eval.yaml", "workspace": ws / "eval.yaml"}


def _eval_yaml(name: str, systems: str, evaluators: str, root: Path, extra: str = "") -> str:
    return (f"eval:\n  name: {name}\ndataset:\n  type: jsonl\n  path: cases.jsonl\nsystems:{systems}"
            f"evaluators:{evaluators}{extra}run:\n  max_concurrency: 32\n"
            f"output:\n  path: {root / 'runs' / name}\n")


def run_stages(eval_path: Path) -> tuple[bytes, bytes, set[str]]:
    """The traces.jsonl and results.jsonl one fresh run of ``eval_path`` writes (the cases,
    traces and results stages in process, as the assets call them), and the variant hashes
    that cover the loopback server's URL (the http variants'), as the run computes them."""
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.hashes import CellHashes
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.stages import prepare_cases
    from evalh_pipeline.runner.traces import produce_traces

    spec = load_eval(eval_path)
    info = prepare_cases(spec, "differential")
    stats = asyncio.run(produce_traces(spec, info.run_dir, spec.variant_names))
    asyncio.run(evaluate_traces(spec, info.run_dir, spec.variant_names, traces_digest=stats.traces_digest))
    http = [v for v in spec.variants if v.adapter == "http"]
    covering = set(CellHashes.for_run(spec, info.run_dir, http).variants.values())
    return info.run_dir.traces.read_bytes(), info.run_dir.results.read_bytes(), covering


def normalised(data: bytes, root: Path, server_url: str, server_hashes: set[str]) -> str:
    """``data`` (JSON lines) with exactly the fields the module docstring names normalised,
    on the bytes as written (a key's value replaced, wherever the key is; nothing is parsed
    and re-encoded), the lines sorted (cells finish in any order)."""
    text = data.decode("utf-8")
    # The folder and URL as JSON writes them inside a string (no escapes in either).
    text = text.replace(str(root), "<ROOT>").replace(server_url.removesuffix("/v1"), "<SERVER>")
    for digest in server_hashes:
        text = text.replace(f'"variant_hash":"{digest}"', '"variant_hash":"<variant_hash of SERVER>"')
    text = _VALUE.sub(lambda m: f'"{m.group(1)}":"<{m.group(1)}>"', text)
    text = _HARNESS_FRAMES.sub(r"  <evalh_pipeline frames>\\n", text)
    text = _EXECUTOR.sub('"executor":"<executor>"', text)
    return "\n".join(sorted(text.splitlines())) + "\n"


# A normalised key and its value: a string without escapes or a number (null stays null).
_VALUE = re.compile(r'"(' + "|".join((*TIMESTAMPS, *LATENCIES, *METRIC_LATENCIES, *HASHES))
                    + r')":("[^"\\]*"|-?[0-9][0-9.eE+-]*)')

# Where a cell ran (runner/shards.py ``Where.as_extra``): a flat object of a host, a pid, a shard.
_EXECUTOR = re.compile(r'"executor":\{"host":"[^"\\]*","pid":[0-9]+,"shard":"[^"\\]*"\}')

# Consecutive traceback frames in the harness's code, as JSON escapes them in a stack: the
# ``File "...", line N, in f`` line, then the lines of code and carets under it.
_HARNESS_FRAMES = re.compile(r'(?:  File \\"[^"\\]*/evalh_pipeline/[^"\\]*\\", line \d+, in [^\\\s]+\\n'
                             r'(?:    (?:[^\\]|\\[^n])*\\n)*)+')


def golden_path(name: str, kind: str) -> Path:
    """Where the golden file of eval ``name``'s ``kind`` (traces, results) is kept."""
    return GOLDEN / f"{name}.{kind}.jsonl"

