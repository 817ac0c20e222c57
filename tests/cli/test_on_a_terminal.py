"""Every `evalh` command as a person runs it: on a real pseudo-terminal, and in a CI log.

On a terminal: exit code, the final table, and the cursor shown again after the progress
bars hid it (on success, on error and on Ctrl-C). Off a terminal: no ANSI codes, no
truncated names. Text from the system under test never reaches the terminal raw.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH, run_evalh

from tests.support.evals import write_eval

from tests.support.paths import REPO
from tests.support.pty_terminal import HIDE_CURSOR, run_on_terminal

pytestmark = pytest.mark.integration

LONG_VARIANT = "candidate_with_a_rather_long_variant_name"

SYSTEMS = f"""
  - name: base
    adapter: python_function
    target: stub_agent:run
  - name: {LONG_VARIANT}
    adapter: python_function
    target: stub_agent:run
    break_every: 3
"""

HOSTILE_AGENT = '''
async def run(case, variant):
    # An answer that tries to retitle, clear and recolour the terminal and plant a link.
    return {"final_answer": "Paris \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x1b]8;;http://evil.example\\x07link",
            "tool_calls": [{"name": "look\\x1b[2Jup", "arguments": {}}]}
'''


def _evalh(args, env, cwd, **kwargs):
    return run_on_terminal([*EVALH, *map(str, args)], env=env, cwd=cwd, **kwargs)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A toy eval with two variants, one named long, and a Dagster home; runs made on a pty."""
    root = tmp_path_factory.mktemp("terminal")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "EVALH_TEST_CALL_LOG": str(root / "calls.log")}
    path = write_eval(root / "toy", cases=6, systems=SYSTEMS)
    first = _evalh(["run", path], env, root)
    runs = sorted(p for p in (root / "toy" / "runs").iterdir() if not p.name.startswith("."))
    return {"root": root, "env": env, "eval": path, "first": first, "run": runs[0]}


def test_run_draws_bars_prints_the_whole_table_and_shows_the_cursor_again(workspace):
    session = workspace["first"]
    assert session.returncode == 0, session.text
    assert HIDE_CURSOR in session.raw, "no progress bars were drawn on the terminal"
    assert session.cursor_left_visible
    assert LONG_VARIANT in session.text  # never cut to `candidate_with…`
    assert "pass rate" in session.text and "run directory:" in session.text
    assert " pp," in session.text and "%," not in session.text


def test_run_says_why_a_caught_regression_and_a_noise_verdict_both_hold(workspace):
    lines = [line.strip() for line in workspace["first"].text.splitlines()]
    verdict = next(i for i, line in enumerate(lines) if "p = 0.5: not distinguishable from noise" in line)
    # One line, right under the verdict: the count-based gate and the test answer different questions.
    assert lines[verdict + 1] == (
        "both hold: the regression gates count cases that went from pass to fail (2 here; any one fails them), "
        "the significance test asks whether 6 cases are enough to rule out chance (p = 0.5: they are not)")
    assert any(line.startswith("gate failed: toy/summary: no_regressions_vs_baseline_variant") for line in lines)


def test_run_without_a_baseline_prints_the_promote_command_for_this_run(workspace):
    line = next(x.strip() for x in workspace["first"].text.splitlines() if x.strip().startswith("drift: no promoted"))
    assert line == f"drift: no promoted baseline (evalh promote toy/runs/{workspace['run'].name})"


def test_dry_run_on_a_terminal(workspace):
    session = _evalh(["run", workspace["eval"], "--dry-run"], workspace["env"], workspace["root"])
    assert session.returncode == 0, session.text
    assert "(6 cases × 2 variants × 1 sample)" in session.text
    assert session.cursor_left_visible


def test_re_evaluate_on_a_terminal_draws_bars_as_its_dagster_steps_judge(workspace):
    session = _evalh(["re-evaluate", "--all", workspace["run"]], workspace["env"], workspace["root"])
    assert session.returncode == 0, session.text
    assert HIDE_CURSOR in session.raw, "no progress bars were drawn on the terminal"
    assert LONG_VARIANT in session.text and "run directory:" in session.text
    assert "background" not in session.text  # the Dagster run is done when the command returns
    assert session.cursor_left_visible


def test_retry_failed_on_a_terminal(workspace):
    session = _evalh(["retry-failed", workspace["run"]], workspace["env"], workspace["root"])
    assert session.returncode == 0, session.text
    assert "retried 0 cells" in session.text
    assert session.cursor_left_visible


def test_compare_inspect_promote_and_drift_on_a_terminal(workspace):
    env, root, run = workspace["env"], workspace["root"], workspace["run"]
    compare = _evalh(["compare", run, run], env, root)
    assert compare.returncode == 0, compare.text
    assert LONG_VARIANT in compare.text and "+0.0 pp" in compare.text

    inspect = _evalh(["inspect", run, "--limit", "1"], env, root)
    assert inspect.returncode == 0, inspect.text
    assert "matching cells in" in inspect.text

    promote = _evalh(["promote", run], env, root)
    assert promote.returncode == 0, promote.text
    assert f"baseline of toy is now {run.name}" in promote.text
    assert promote.cursor_left_visible

    drift = _evalh(["drift", run, "--exit-nonzero-on-regression"], env, root)
    assert drift.returncode == 0, drift.text
    assert "0 regression(s)" in drift.text
    for session in (compare, inspect, drift):
        assert session.cursor_left_visible


def test_help_and_usage_errors_on_a_terminal(workspace):
    env, root = workspace["env"], workspace["root"]
    assert _evalh(["--help"], env, root).returncode == 0
    folder = _evalh(["run", workspace["eval"].parent], env, root)
    assert folder.returncode == 1
    assert "is a folder: give the eval's YAML file" in folder.text
    bad_option = _evalh(["run", workspace["eval"], "--no-such-option"], env, root)
    assert bad_option.returncode == 1 and "No such option" in bad_option.text


def test_ctrl_c_during_a_run_exits_130_and_shows_the_cursor_again(tmp_path, env):
    # Cases from case_8 on wait for a gate that never opens: ^C lands while the run is going.
    env = {**env, "EVALH_TEST_GATE": str(tmp_path / "gate")}
    path = write_eval(tmp_path / "slow", cases=200, systems="""
  - name: base
    adapter: python_function
    target: stub_agent:run
    delay: 0.2
    hold_from: 8
""")
    session = _evalh(["run", path], env, tmp_path, interrupt_when=b"/200")
    assert session.returncode == 130, session.text
    assert "interrupted." in session.text and "--resume" in session.text
    assert session.cursor_left_visible


def test_an_error_on_a_terminal_shows_the_cursor_again(tmp_path, env):
    path = write_eval(tmp_path / "broken", cases=2)
    (tmp_path / "broken" / "runs").write_text("a file where the runs folder belongs")
    session = _evalh(["run", path], env, tmp_path, columns=100)
    assert session.returncode == 2, session.text
    assert "error:" in session.text
    assert session.cursor_left_visible


def _eval_with_error_at_line_100(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "cases.jsonl").write_text('{"id": "a", "input": {"q": "x"}}\n')
    (folder / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    head = textwrap.dedent("""\
        eval:
          name: line_hundred
        dataset:
          type: jsonl
          path: cases.jsonl
        systems:
          - name: base
            adapter: python_function
            target: agent:run
        evaluators:
          - name: says_x
            type: contains_text
        run:
        """)
    lines = head.splitlines()
    lines += ["  # padding"] * (99 - len(lines))
    lines.append("  max_concurrency: [not, a, number]")
    path = folder / "eval.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.read_text().splitlines()[99].startswith("  max_concurrency")
    return path


def _dataset_with_error_at_line_100(folder: Path) -> Path:
    path = write_eval(folder, cases=99)
    with (folder / "cases.jsonl").open("a") as f:
        f.write('{"id": "broken", "input": [unclosed\n')
    return path


@pytest.mark.parametrize("make", [_eval_with_error_at_line_100, _dataset_with_error_at_line_100],
                         ids=["eval.yaml", "cases.jsonl"])
def test_an_error_at_line_100_keeps_its_line_number_on_and_off_a_terminal(tmp_path, env, make):
    path = make(tmp_path / "e")
    name = "eval.yaml" if make is _eval_with_error_at_line_100 else "cases.jsonl"
    session = _evalh(["run", path], env, tmp_path)
    assert session.returncode == 1, session.text
    assert f"{name}:100" in session.text, session.text
    assert "💯" not in session.text
    logged = run_evalh(["run", str(path)], env, tmp_path)
    assert logged.returncode == 1
    assert f"{name}:100" in logged.stderr and "💯" not in logged.stderr


def test_run_in_a_ci_log_prints_progress_lines_no_ansi_and_whole_names(workspace):
    env = {**workspace["env"], "COLUMNS": "40"}  # a narrow log must not cut names either
    proc = subprocess.run([*EVALH, "run", str(workspace["eval"])], env=env, cwd=workspace["root"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr
    assert LONG_VARIANT in proc.stdout and "…" not in proc.stdout
    assert "starting run" in proc.stderr and "traces: done" in proc.stderr
    assert " pp," in proc.stdout


def test_inspect_shows_control_sequences_from_the_system_escaped(tmp_path, env):
    path = write_eval(tmp_path / "hostile", cases=1, systems="""
  - name: base
    adapter: python_function
    target: hostile_agent:run
""")
    (tmp_path / "hostile" / "hostile_agent.py").write_text(HOSTILE_AGENT)
    assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (run,) = [p for p in (tmp_path / "hostile" / "runs").iterdir() if not p.name.startswith(".")]

    session = _evalh(["inspect", run], env, tmp_path)
    assert session.returncode == 0, session.text
    for raw in (b"\x1b]0;pwned", b"\x1b[2J", b"\x1b]8;;http", b"\x07"):
        assert raw not in session.raw
    assert "\\x1b]0;pwned\\x07" in session.text and "look\\x1b[2Jup" in session.text

    logged = run_evalh(["inspect", str(run)], env, tmp_path)
    assert "\x1b" not in logged.stdout and "\\x1b]0;pwned" in logged.stdout


def test_compare_of_runs_of_two_evals_says_why_nothing_is_compared(tmp_path, env):
    first = write_eval(tmp_path / "one", cases=2)
    second = write_eval(tmp_path / "two", cases=2, systems="""
  - name: other
    adapter: python_function
    target: stub_agent:run
""", extra_yaml="")
    second.write_text(second.read_text().replace("baseline_variant: base", "baseline_variant: other"))
    for path in (first, second):
        assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (a,) = [p for p in (tmp_path / "one" / "runs").iterdir() if not p.name.startswith(".")]
    (b,) = [p for p in (tmp_path / "two" / "runs").iterdir() if not p.name.startswith(".")]
    proc = run_evalh(["compare", str(a), str(b)], env, tmp_path)
    assert proc.returncode == 1
    assert "different evals (A: one, B: two)" in proc.stderr
    assert "no variant is in both runs" in proc.stderr


@pytest.mark.parametrize("server", [
    [sys.executable, "-m", "tests.support.fake_judge_server"],
    [sys.executable, str(REPO / "evals" / "http_agent" / "service.py")],
], ids=["judge", "http_agent"])
def test_a_taken_port_is_a_one_line_error(server, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([*server, "--port", str(port)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr


def test_the_bundled_judge_and_http_service_default_to_different_ports():
    import importlib.util

    from tests.support import fake_judge_server as fake_server

    spec = importlib.util.spec_from_file_location("http_agent_service", REPO / "evals" / "http_agent" / "service.py")
    service = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(service)
    assert service.DEFAULT_PORT != fake_server.DEFAULT_PORT


def _one_async_system(folder: Path, body: str, cases: int) -> Path:
    """An eval of one async python_function system, ``async def run`` with ``body``, on ``cases`` cases."""
    folder.mkdir()
    (folder / "agent_under_test.py").write_text(
        "import asyncio, time\nasync def run(case, variant):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        + "    await asyncio.sleep(0)\n    return {'final_answer': 'ok'}\n")
    (folder / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": {{}}}}\n' for i in range(cases)))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""
        eval: {{name: {folder.name}}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems: [{{name: base, adapter: python_function, target: "agent_under_test:run"}}]
        evaluators: [{{name: ok, type: contains_text, config: {{any_of: [ok]}}}}]
        output: [{{type: local_files, path: runs}}]
    """))
    return folder / "eval.yaml"


def test_ctrl_c_while_an_async_system_runs_on_the_runs_loop_stops_the_run(tmp_path, env):
    # The terminal's ^C stops the run, whatever the system's code is doing at that moment;
    # it is never taken for an exception of the system's for one cell. Cases from c20 on
    # never end (busy, yielding between slices): ^C lands while the run is going.
    path = _one_async_system(tmp_path / "busy", """
        while True:
            until = time.thread_time() + 0.05
            while time.thread_time() < until:  # busy on the CPU: it stays on the run's loop
                pass
            if int(case["id"][1:]) < 20:
                break
            await asyncio.sleep(0)
    """, 400)
    session = _evalh(["run", path], env, tmp_path, interrupt_when=b"/400")
    assert session.returncode == 130, session.text
    assert "interrupted." in session.text
    assert session.cursor_left_visible
    # It stopped there, rather than taking the ^C for one cell's error and running on (the
    # held cases would then keep it going until the terminal's timeout). A ^C that lands
    # before the first trace is written leaves no traces file at all.
    traces = [line for found in tmp_path.glob("**/traces.jsonl") for line in found.read_text().splitlines()]
    assert len(traces) <= 20
    assert not any("KeyboardInterrupt" in line for line in traces)
