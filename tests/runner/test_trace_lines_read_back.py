"""Every trace line the cell path writes is one the models read back unchanged: random valid
system outputs go through the runner's own path (a python_function's dict checked into a
response, the cell's trace as plain fields, encoded once without a Trace, its line written
and sealed by the traces appender), and the line read back through ``Trace`` and encoded
again is the same bytes; it is also the line the Trace of the same fields encodes to."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalh_pipeline.common.pricing import Pricer
from evalh_pipeline.config.schema import RetryConfig
from evalh_pipeline.models import EvalCase, RunVariant, Trace
from evalh_pipeline.models.trace import MAX_COUNT
from evalh_pipeline.runner.cells import Cell
from evalh_pipeline.runner.deadlines import Deadlines
from evalh_pipeline.runner.policies import CostBudget, RetryPolicy
from evalh_pipeline.runner.traces import _run_cell
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.recording import record_line, trace_line
from evalh_pipeline.store.records import TRACES, traces_appender
from evalh_pipeline.systems.base import SystemAdapter, SystemContext, SystemResponse, Workspace
from evalh_pipeline.systems.response import response_from_dict

_INT = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)
_SCALAR = st.none() | st.booleans() | _INT | _FLOAT | st.text(max_size=20)
JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                          max_size=4), max_leaves=12)
OBJECT = st.dictionaries(st.text(max_size=8), JSON, max_size=4)
COUNT = st.none() | st.integers(min_value=0, max_value=MAX_COUNT)
AMOUNT = st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False)
OPTIONAL_TEXT = st.none() | st.text(max_size=40)

TOOL_CALL = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=10)},
                                  optional={"id": OPTIONAL_TEXT, "arguments": OBJECT})
TOOL_RESULT = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=10),
                                     "content": st.text(max_size=20) | OBJECT}, optional={"tool_call_id": OPTIONAL_TEXT})
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"])},
                                optional={"content": st.none() | st.text(max_size=20) | OBJECT,
                                          "thinking": OPTIONAL_TEXT})
METRICS = st.fixed_dictionaries({}, optional={
    "token_input": COUNT, "token_output": COUNT, "token_thinking": COUNT, "cost_usd": AMOUNT,
    "cost_thinking_usd": AMOUNT, "latency_first_token_ms": COUNT, "latency_last_token_ms": COUNT,
    "tokens_per_second": AMOUNT, "stream_chunks": COUNT, "stream_completed": st.none() | st.booleans(),
    "custom": OBJECT,
})
OUTPUT = st.fixed_dictionaries({}, optional={
    "final_answer": OPTIONAL_TEXT, "thinking": OPTIONAL_TEXT, "structured": st.none() | OBJECT,
    "tool_calls": st.lists(TOOL_CALL, max_size=3), "tool_results": st.lists(TOOL_RESULT, max_size=3),
    "messages": st.lists(MESSAGE, max_size=3), "metrics": METRICS, "extra": OBJECT,
})


class _Returning(SystemAdapter):
    """A system whose answer is a given dict, taken in as a python_function's is."""

    answer: dict[str, Any] = {}

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        return response_from_dict(self.answer)


def _written_line(answer: dict[str, Any], folder: Path, asked: dict[str, Any]) -> tuple[bytes, bytes]:
    """The sealed line the lean path wrote for ``answer``, and the line the model path gives."""
    variant = RunVariant(name="v", adapter="returning", config={})
    adapter = _Returning(variant, SystemContext(eval_dir=folder))
    adapter.answer = answer
    cell = Cell(EvalCase(id="c1", input=asked), variant, 0)
    stamps = {"case_hash": "a" * 16, "variant_hash": "b" * 16, "fixture_hash": "c" * 16}

    async def one() -> dict[str, Any]:
        deadlines = Deadlines()
        try:
            return await _run_cell(cell, "run", adapter, RetryPolicy(RetryConfig()), CostBudget(None), Pricer.for_path(None), stamps,
                                   deadlines)
        finally:
            deadlines.close()

    record = asyncio.run(one())
    assert record["error"] is None, record["error"]
    by_model, _ = trace_line(Trace.model_validate(record))
    line, error = record_line(record)
    assert error is None
    path = folder / "traces.jsonl"
    with traces_appender(path) as out:
        out.write(line)
    ((_, written),) = list(iter_lines(path))
    return written.rstrip("\n").encode("utf-8"), by_model + b"\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OUTPUT, OBJECT)
def test_a_written_trace_line_reads_back_through_the_model_unchanged(answer, asked):
    with tempfile.TemporaryDirectory() as tmp:
        line, by_model = _written_line(answer, Path(tmp), asked)
    read = Trace.model_validate_json(line)
    assert read.__pydantic_serializer__.to_json(read) == line
    assert read.trace_hash is not None
    assert TRACES.seal(by_model)[0] == line + b"\n"  # the bytes the model path writes
