"""python_function: call module:callable once per cell, sync or async, and shape its answer."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems.base import AdapterError, SystemContext, SystemResponse
from evalh_pipeline.systems.python_function import PythonFunctionSystem

PREFIX = "evalh_pf_test_"


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch):
    """The adapter edits sys.path and imports modules: undo both after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m.startswith(PREFIX)]:
        del sys.modules[name]


def module(folder: Path, source: str, name: str | None = None) -> str:
    name = name or f"{PREFIX}{uuid.uuid4().hex}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def adapter(folder: Path, target: str, **config) -> PythonFunctionSystem:
    variant = RunVariant(name="v1", adapter="python_function", config={"target": target, **config})
    return PythonFunctionSystem(variant, SystemContext(eval_dir=folder))


def run_cases(the_adapter: PythonFunctionSystem, *cases: EvalCase) -> list[SystemResponse]:
    async def go():
        await the_adapter.start()
        try:
            return [await the_adapter.run(c, None) for c in cases]
        finally:
            await the_adapter.close()
    return asyncio.run(go())


def run_one(folder: Path, source: str, case: EvalCase | None = None, **config) -> SystemResponse:
    name = module(folder, source)
    fn = config.pop("fn", "run")
    return run_cases(adapter(folder, f"{name}:{fn}", **config), case or EvalCase(id="c1", input={"q": "hi"}))[0]


def test_sync_target_gets_case_and_variant_as_plain_dicts(tmp_path):
    response = run_one(tmp_path, """
        def run(case, variant):
            return {"final_answer": f"{case['input']['q']} from {variant['name']} "
                                    f"t={variant['config']['temperature']}"}
    """, temperature=0.2)
    assert response.output.final_answer == "hi from v1 t=0.2"


def test_sync_target_runs_in_a_worker_thread(tmp_path):
    response = run_one(tmp_path, """
        import threading
        def run(case, variant):
            return {"final_answer": threading.current_thread().name}
    """)
    assert response.output.final_answer.startswith("evalh-v1")


def test_sync_target_is_called_exactly_once_per_cell(tmp_path):
    name = module(tmp_path, """
        CALLS = []
        def run(case, variant):
            CALLS.append(case["id"])
            return {"final_answer": "ok"}
    """)
    run_cases(adapter(tmp_path, f"{name}:run"), *(EvalCase(id=f"c{i}") for i in range(3)))
    assert sys.modules[name].CALLS == ["c0", "c1", "c2"]


def test_async_target_is_awaited(tmp_path):
    response = run_one(tmp_path, """
        import asyncio
        async def run(case, variant):
            await asyncio.sleep(0)
            return {"final_answer": "async " + case["id"]}
    """)
    assert response.output.final_answer == "async c1"


def test_async_target_runs_on_the_runners_thread_by_default(tmp_path):
    response = run_one(tmp_path, """
        import asyncio, threading
        async def run(case, variant):
            await asyncio.sleep(0)
            return {"final_answer": threading.current_thread().name}
    """)
    assert response.output.final_answer == "MainThread"


def test_async_target_with_thread_isolation_runs_on_a_loop_of_its_own_call(tmp_path):
    """On a daemon thread, on an event loop that ends with the call: what the target left
    running there is cancelled then, not left for a later call."""
    name = module(tmp_path, """
        import asyncio, threading
        SEEN = []
        async def linger():
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                SEEN.append("cancelled")
                raise
        async def run(case, variant):
            asyncio.get_running_loop().create_task(linger())
            await asyncio.sleep(0)
            return {"final_answer": threading.current_thread().name, "extra": {"loop": id(asyncio.get_running_loop())}}
    """)
    first, second = run_cases(adapter(tmp_path, f"{name}:run", isolation="thread"), EvalCase(id="a"), EvalCase(id="b"))
    assert first.output.final_answer.startswith("evalh-v1") and second.output.final_answer.startswith("evalh-v1")
    assert sys.modules[name].SEEN == ["cancelled", "cancelled"]


def test_a_timed_out_async_call_with_thread_isolation_is_cancelled_on_its_loop(tmp_path):
    name = module(tmp_path, """
        import asyncio, threading
        ENDED = threading.Event()
        async def run(case, variant):
            try:
                await asyncio.Event().wait()
            finally:
                ENDED.set()
    """)
    the_adapter = adapter(tmp_path, f"{name}:run", isolation="thread")

    async def go():
        await the_adapter.start()
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await the_adapter.run(EvalCase(id="a"), None)
        finally:
            await the_adapter.close()

    asyncio.run(go())
    assert sys.modules[name].ENDED.wait(30)


def test_callable_class_with_init_kwargs_and_async_call(tmp_path):
    response = run_one(tmp_path, """
        class Agent:
            def __init__(self, greeting):
                self.greeting = greeting
            async def __call__(self, case, variant):
                return {"final_answer": self.greeting}
    """, fn="Agent", init_kwargs={"greeting": "bonjour"})
    assert response.output.final_answer == "bonjour"


def test_eval_folder_is_importable_from_any_working_directory(tmp_path, monkeypatch):
    evals = tmp_path / "evals" / "mine"
    helper = module(evals, "ANSWER = 'from helper'\n")
    monkeypatch.chdir(tmp_path)
    response = run_one(evals, f"""
        from {helper} import ANSWER
        def run(case, variant):
            return {{"final_answer": ANSWER}}
    """)
    assert response.output.final_answer == "from helper"


def test_target_returning_a_non_dict_is_an_adapter_error(tmp_path):
    with pytest.raises(AdapterError, match="system returned str, expected a dict") as info:
        run_one(tmp_path, "def run(case, variant):\n    return 'just text'\n")
    assert info.value.type == "adapter_error"


def test_malformed_response_is_an_adapter_error(tmp_path):
    with pytest.raises(AdapterError, match="malformed response"):
        run_one(tmp_path, "def run(case, variant):\n    return {'tool_calls': [{'arguments': {}}]}\n")


def test_import_error_in_target_module_is_an_adapter_error_at_start(tmp_path):
    name = module(tmp_path, "import evalh_no_such_module_xyz\ndef run(case, variant):\n    return {}\n")
    the_adapter = adapter(tmp_path, f"{name}:run")
    with pytest.raises(AdapterError, match=f"cannot import module '{name}'"):
        asyncio.run(the_adapter.start())


def test_missing_module_or_callable_is_an_adapter_error_at_start(tmp_path):
    with pytest.raises(AdapterError, match="cannot import module"):
        asyncio.run(adapter(tmp_path, f"{PREFIX}absent:run").start())
    name = module(tmp_path, "VALUE = 1\n")
    with pytest.raises(AdapterError, match="has no callable 'VALUE'"):
        asyncio.run(adapter(tmp_path, f"{name}:VALUE").start())


def test_target_that_is_not_module_colon_callable_is_rejected_by_config(tmp_path):
    with pytest.raises(ValidationError):
        adapter(tmp_path, "no_colon_here")


def test_trace_shaped_dict_with_output_is_accepted(tmp_path):
    response = run_one(tmp_path, """
        def run(case, variant):
            return {"output": {"final_answer": "Paris", "thinking": "hmm", "structured": {"city": "Paris"}},
                    "metrics": {"token_input": 7, "cost_usd": 0.5, "not_a_metric": 1},
                    "extra": {"trace_id": "t-1"}}
    """)
    assert response.output.final_answer == "Paris" and response.output.thinking == "hmm"
    assert response.output.structured == {"city": "Paris"}
    assert response.metrics.token_input == 7 and response.metrics.cost_usd == 0.5
    assert response.extra == {"trace_id": "t-1"}


def test_flat_dict_fields_are_mapped_and_non_string_answers_become_text(tmp_path):
    response = run_one(tmp_path, """
        def run(case, variant):
            return {"final_answer": 42, "thinking": "t", "structured": {"n": 42},
                    "messages": [{"role": "user", "content": "q"}],
                    "tool_results": [{"name": "lookup", "content": {"ok": True}}]}
    """)
    assert response.output.final_answer == "42" and response.output.structured == {"n": 42}
    assert response.messages[0].role == "user" and response.tool_results[0].content == {"ok": True}


def test_tool_calls_accept_input_as_an_alias_of_arguments(tmp_path):
    response = run_one(tmp_path, """
        def run(case, variant):
            return {"tool_calls": [{"name": "lookup", "input": {"q": "Paris"}},
                                   {"id": "2", "name": "fetch", "arguments": {"url": "u"}}]}
    """)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("lookup", {"q": "Paris"}), ("fetch", {"url": "u"})]


def test_a_cell_does_not_see_variant_config_changes_made_by_an_earlier_cell(tmp_path):
    name = module(tmp_path, """
        def run(case, variant):
            seen = variant["config"].setdefault("seen", [])
            seen.append(case["id"])
            return {"final_answer": ",".join(seen)}
    """)
    responses = run_cases(adapter(tmp_path, f"{name}:run"), EvalCase(id="a"), EvalCase(id="b"))
    assert [r.output.final_answer for r in responses] == ["a", "b"]


def test_two_evals_with_same_target_module_name_each_call_their_own(tmp_path):
    name = f"{PREFIX}agent_{uuid.uuid4().hex}"
    module(tmp_path / "eval_a", "def run(case, variant):\n    return {'final_answer': 'A'}\n", name=name)
    module(tmp_path / "eval_b", "def run(case, variant):\n    return {'final_answer': 'B'}\n", name=name)
    first = run_cases(adapter(tmp_path / "eval_a", f"{name}:run"), EvalCase(id="c"))[0]
    second = run_cases(adapter(tmp_path / "eval_b", f"{name}:run"), EvalCase(id="c"))[0]
    assert (first.output.final_answer, second.output.final_answer) == ("A", "B")
