"""cli: run an argv command per cell (never a shell), read stdout, kill the process group on timeout."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.systems.base import AdapterError, SystemContext, SystemResponse, Workspace
from evalh_pipeline.systems.cli import CliConfig, CliSystem
from tests.support.evals import write_eval

CASE = EvalCase(id="c1", input={"question": "What's $HOME; rm -rf / `x`?", "n": 3})


def script(folder: Path, source: str, name: str = "tool.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def adapter(folder: Path, command: list[str], **config) -> CliSystem:
    variant = RunVariant(name="v1", adapter="cli", config={"command": command, **config})
    return CliSystem(variant, SystemContext(eval_dir=folder))


async def _run(the_adapter: CliSystem, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
    await the_adapter.start()
    try:
        return await the_adapter.run(case, workspace)
    finally:
        await the_adapter.close()


def run_one(folder: Path, source: str, *args: str, case: EvalCase = CASE, workspace: Workspace | None = None,
            **config) -> SystemResponse:
    path = script(folder, source)
    return asyncio.run(_run(adapter(folder, [sys.executable, str(path), *args], **config), case, workspace))


def alive(pid: int) -> bool:
    """Running, not just a zombie: an orphan is reaped by PID 1, which some containers never do."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_text_output_is_the_stripped_final_answer_with_exit_code_and_argv_in_extra(tmp_path):
    response = run_one(tmp_path, "print('  Paris\\n')\n")
    assert response.output.final_answer == "Paris"
    assert response.extra["exit_code"] == 0
    assert response.extra["argv"] == [sys.executable, str(tmp_path / "tool.py")]
    assert "stderr" not in response.extra


def test_json_output_is_read_like_a_python_function_return_value(tmp_path):
    response = run_one(tmp_path, """
        import json, sys
        print("working...", file=sys.stderr)
        print(json.dumps({"final_answer": "Paris", "structured": {"city": "Paris"},
                          "tool_calls": [{"id": "t1", "name": "lookup", "input": {"q": "capital"}}],
                          "tool_results": [{"tool_call_id": "t1", "name": "lookup", "content": {"ok": True}}],
                          "metrics": {"token_input": 12, "cost_usd": 0.01},
                          "extra": {"trace_id": "abc"}}))
    """, output_format="json")
    assert response.output.final_answer == "Paris" and response.output.structured == {"city": "Paris"}
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("lookup", {"q": "capital"})]
    assert response.tool_results[0].content == {"ok": True}
    assert response.metrics.token_input == 12 and response.metrics.cost_usd == 0.01
    assert response.extra["trace_id"] == "abc" and response.extra["exit_code"] == 0
    assert response.extra["stderr"] == "working...\n"


def test_argv_templates_render_each_value_as_exactly_one_argument(tmp_path):
    response = run_one(tmp_path, "import json, sys\nprint(json.dumps(sys.argv[1:]))\n",
                       "--q", "{{ case.input.question }}", "n={{case.input.n}}", "{{ case.id }}")
    assert json.loads(response.output.final_answer) == ["--q", CASE.input["question"], "n=3", "c1"]


def test_stdin_template_is_rendered_and_delivered(tmp_path):
    response = run_one(tmp_path, "import sys\nprint(sys.stdin.read())\n",
                       stdin_template="Q: {{ case.input.question }}\nCASE: {{ case_json }}")
    question, case_json = response.output.final_answer.split("\n", 1)
    assert question == f"Q: {CASE.input['question']}"
    assert json.loads(case_json.removeprefix("CASE: "))["input"] == CASE.input


def test_large_stdin_is_delivered_whole(tmp_path):
    case = EvalCase(id="big", input={"text": "x" * 1_000_000})
    response = run_one(tmp_path, "import sys\nprint(len(sys.stdin.read()))\n", case=case,
                       stdin_template="{{ case.input.text }}")
    assert response.output.final_answer == "1000000"


def test_runaway_stdout_is_killed_and_fails_the_cell(tmp_path, monkeypatch):
    monkeypatch.setattr("evalh_pipeline.systems.cli.STDOUT_LIMIT_BYTES", 100_000)
    started = time.monotonic()
    with pytest.raises(AdapterError, match="more than .* to stdout"):
        run_one(tmp_path, "while True:\n    print('y' * 1000)\n")
    assert time.monotonic() - started < 30  # killed, not left to run: loaded CI needs room


def test_eval_harness_stdin_template_forms_render_like_eval_harness(tmp_path):
    case = EvalCase(id="c7", input={"question": 'say "hi"', "n": 3}, metadata={"lang": "en"})
    response = run_one(tmp_path, "import sys\nprint(sys.stdin.read())\n", case=case,
                       stdin_template='{{ input.question }}|{{ input.question | json }}|{{ case_id }}|'
                                      '{{ case.metadata.lang }}|{{ input.n }}|{{ input.nope }}|{{ input.nope | json }}')
    assert response.output.final_answer == 'say "hi"|"say \\"hi\\""|c7|en|3||null'


def test_parse_stdout_as_json_keeps_the_whole_object_as_structured(tmp_path):
    response = run_one(tmp_path, "import json\nprint(json.dumps({'final_answer': 'Paris', 'score': 3}))\n",
                       parse_stdout_as="json")
    assert response.output.final_answer == "Paris"
    assert response.output.structured == {"final_answer": "Paris", "score": 3}
    listed = run_one(tmp_path, "print('[1, 2]')\n", parse_stdout_as="json")
    assert listed.output.structured == {"value": [1, 2]} and listed.output.final_answer is None


def test_parse_stdout_as_text_keeps_leading_space_and_drops_trailing_newlines(tmp_path):
    response = run_one(tmp_path, "print('  Paris \\n')\n", parse_stdout_as="text")
    assert response.output.final_answer == "  Paris "


def test_without_stdin_template_stdin_is_empty(tmp_path):
    response = run_one(tmp_path, "import sys\nprint(repr(sys.stdin.read()))\n")
    assert response.output.final_answer == "''"


def test_a_template_path_the_case_lacks_fails_the_cell(tmp_path):
    with pytest.raises(AdapterError, match=r"case 'c1' has no field for template \{\{ case.input.nope \}\}"):
        run_one(tmp_path, "print('unreachable')\n", "{{ case.input.nope }}")


def test_unknown_template_is_a_config_error(tmp_path):
    with pytest.raises(ValidationError, match="unknown template"):
        adapter(tmp_path, ["prog", "{{ inputs.question }}"])


def test_non_zero_exit_is_an_adapter_error_with_the_stderr_tail_and_partial_stdout(tmp_path):
    with pytest.raises(AdapterError) as info:
        run_one(tmp_path, """
            import sys
            print("half an answer")
            sys.stderr.write("x" * 10000 + "\\nTraceback: the real cause\\n")
            sys.exit(3)
        """)
    err = info.value
    assert err.type == "adapter_error"
    assert "exit code 3" in str(err) and "the real cause" in str(err)
    assert len(str(err)) < 4096 + 200  # only the tail of stderr
    assert err.partial.output.final_answer == "half an answer"
    assert err.partial.extra["exit_code"] == 3 and err.partial.extra["stderr"].endswith("the real cause\n")


def test_invalid_json_is_an_adapter_error_showing_stdout(tmp_path):
    with pytest.raises(AdapterError, match="stdout is not valid JSON.*not json at all") as info:
        run_one(tmp_path, "print('not json at all')\n", output_format="json")
    assert info.value.type == "adapter_error" and info.value.partial.extra["exit_code"] == 0


def test_json_that_is_not_an_object_is_an_adapter_error(tmp_path):
    with pytest.raises(AdapterError, match="system returned list, expected a dict"):
        run_one(tmp_path, "print('[1, 2]')\n", output_format="json")


def test_missing_program_is_an_adapter_error(tmp_path):
    the_adapter = adapter(tmp_path, ["evalh-no-such-program-xyz"])
    with pytest.raises(AdapterError, match="cannot start command 'evalh-no-such-program-xyz'"):
        asyncio.run(_run(the_adapter, CASE, None))


def test_timeout_kills_the_whole_process_group_and_propagates(tmp_path):
    pids = tmp_path / "pids.txt"
    path = script(tmp_path, f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open({str(pids)!r}, "w") as f:
            f.write(f"{{os.getpid()}} {{child.pid}}")
        print("started", flush=True)
        time.sleep(60)
    """)
    the_adapter = adapter(tmp_path, [sys.executable, str(path)])

    async def go():
        await the_adapter.start()
        # The cell's timeout expires once the command has started its grandchild (however long
        # that takes on a loaded machine), never before: both are then there to be killed.
        async with asyncio.timeout(None) as deadline:
            expire = asyncio.create_task(_expire_when_written(pids, deadline))
            try:
                await the_adapter.run(CASE, None)
            finally:
                expire.cancel()

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(go())
    assert time.monotonic() - started < 30  # long before the command's own 60 s
    command_pid, grandchild_pid = map(int, pids.read_text().split())
    # The command was our child: it is reaped, not left a zombie.
    assert not alive(command_pid) and not Path(f"/proc/{command_pid}").exists()
    deadline = time.monotonic() + 2
    while alive(grandchild_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild_pid)


async def _expire_when_written(path: Path, deadline: asyncio.Timeout) -> None:
    """Expire ``deadline`` now once ``path`` holds two pids."""
    while not (path.exists() and len(path.read_text().split()) == 2):
        await asyncio.sleep(0.02)
    deadline.reschedule(asyncio.get_running_loop().time())


def test_a_leftover_child_holding_stdout_does_not_keep_the_cell_running(tmp_path):
    pids = tmp_path / "pids.txt"
    started = time.monotonic()
    response = run_one(tmp_path, f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pids)!r}, "w").write(str(child.pid))
        print("done")
    """)
    assert response.output.final_answer == "done" and time.monotonic() - started < 10
    grandchild = int(pids.read_text())
    deadline = time.monotonic() + 2
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_host_environment_is_not_inherited_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALH_CLI_HOST_SECRET", "hunter2")
    response = run_one(tmp_path, "import json, os\nprint(json.dumps(dict(os.environ)))\n",
                       env={"GREETING": "hi-from-eval", "N": 3})
    env = json.loads(response.output.final_answer)
    assert "EVALH_CLI_HOST_SECRET" not in env
    assert env["GREETING"] == "hi-from-eval" and env["N"] == "3"
    assert env["PATH"] == os.environ["PATH"]  # PATH alone passes through
    assert "hi-from-eval" not in json.dumps(response.extra)  # env values never reach the trace


def test_env_path_overrides_the_host_path(tmp_path):
    response = run_one(tmp_path, "import os\nprint(os.environ['PATH'])\n", env={"PATH": "/opt/only"})
    assert response.output.final_answer == "/opt/only"


def test_inherit_env_layers_env_on_top_of_the_host_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALH_CLI_HOST_VAR", "from host")
    monkeypatch.setenv("EVALH_CLI_OVERRIDDEN", "host value")
    response = run_one(tmp_path, "import json, os\nprint(json.dumps(dict(os.environ)))\n",
                       inherit_env=True, env={"EVALH_CLI_OVERRIDDEN": "eval value"})
    env = json.loads(response.output.final_answer)
    assert env["EVALH_CLI_HOST_VAR"] == "from host" and env["EVALH_CLI_OVERRIDDEN"] == "eval value"


def test_string_command_is_rejected_by_the_config_model():
    with pytest.raises(ValidationError, match="must be a list of arguments.*never run through a shell"):
        CliConfig.model_validate({"command": "python agent.py --q 'x'"})


def test_cwd_defaults_to_the_eval_folder_and_is_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evals = tmp_path / "evals" / "mine"
    (evals / "sub").mkdir(parents=True)
    source = "import os\nprint(os.getcwd())\n"
    assert run_one(evals, source).output.final_answer == str(evals.resolve())
    assert run_one(evals, source, cwd="sub").output.final_answer == str((evals / "sub").resolve())


def test_missing_cwd_fails_at_start(tmp_path):
    with pytest.raises(AdapterError, match="cwd 'absent' is not a directory"):
        asyncio.run(adapter(tmp_path, ["prog"], cwd="absent").start())


def test_workspace_path_is_the_cwd(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "sub").mkdir()
    response = run_one(tmp_path, "import os\nprint(os.getcwd())\n", cwd="sub", workspace=Workspace(path=workspace))
    assert response.output.final_answer == str(workspace.resolve())


def test_secret_flag_values_and_url_credentials_are_masked_in_the_recorded_argv(tmp_path):
    response = run_one(tmp_path, "print('ok')\n", "--api-key", "sk-123", "--token=abc",
                       "https://user:pw@example.com/x", "--max-tokens", "5")
    assert response.extra["argv"][2:] == ["--api-key", "***MASKED***", "--token=***MASKED***",
                                          "https://***MASKED***@example.com/x", "--max-tokens", "5"]


def test_known_secret_values_passed_as_bare_arguments_are_masked_in_the_recorded_argv(tmp_path):
    path = script(tmp_path, "print('ok')\n")
    variant = RunVariant(name="v1", adapter="cli", config={"command": [sys.executable, str(path), "sk-live-42"]})
    system = CliSystem(variant, SystemContext(eval_dir=tmp_path, secret_values=frozenset({"sk-live-42"})))
    response = asyncio.run(_run(system, CASE, None))
    assert response.extra["argv"][2] == "***MASKED***"


CLI_SYSTEM = """
  - name: base
    adapter: cli
    timeout_seconds: 5
    command: [{python}, tool.py, "{{{{ case.id }}}}"]
    output_format: json
"""


def test_end_to_end_every_case_is_a_trace_and_a_failing_case_is_an_adapter_error(tmp_path):
    folder = tmp_path / "toy"
    script(folder, """
        import json, sys
        case_id = sys.argv[1]
        if case_id == "case_2":
            sys.exit("no answer for case_2")
        print(json.dumps({"final_answer": f"answer for {case_id} Paris",
                          "tool_calls": [{"name": "lookup", "arguments": {"q": case_id}}]}))
    """)
    path = write_eval(folder, cases=4, systems=CLI_SYSTEM.format(python=json.dumps(sys.executable)))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    traces = {t["case_id"]: t for t in (json.loads(line) for _, line in iter_lines(info.run_dir.traces))}
    assert stats.cells_run == 4 and stats.cells_errored == 1
    assert sorted(traces) == [f"case_{i}" for i in range(4)]
    assert traces["case_2"]["error"]["type"] == "adapter_error"
    assert "exit code 1" in traces["case_2"]["error"]["message"]
    assert "no answer for case_2" in traces["case_2"]["error"]["message"]
    assert traces["case_2"]["extra"]["exit_code"] == 1
    ok = traces["case_0"]
    assert ok["error"] is None and ok["output"]["final_answer"] == "answer for case_0 Paris"
    assert ok["tool_calls"][0]["name"] == "lookup" and ok["extra"]["argv"][-1] == "case_0"
