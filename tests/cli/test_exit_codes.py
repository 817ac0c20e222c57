"""The exit codes the README promises, one contract each, as a person meets them: `evalh` on
a real pseudo-terminal. "Exit codes: `0` done, `1` invalid input or usage (a bad option, a
folder where the eval file belongs), `2` infrastructure failure, `130` interrupted."

Each test quotes the README sentence it holds `evalh` to. Exit codes other tests check at
length stay there: Ctrl-C (130) and an unwritable runs folder (2) in test_on_a_terminal.py,
`--fail-on-gate` in test_read_only_commands.py, a run no system answered in
test_no_answer_on_a_terminal.py, the regression gates in test_promote_and_drift.py.
"""

from __future__ import annotations

import pytest

from evalh_pipeline.cli.group import EXIT_CONFIG, EXIT_INFRA, EXIT_OK, _EvalhGroup
from evalh_pipeline.errors import UserError
from evalh_pipeline.store.locking import hold_run_directory
from tests.cli.support import GOOD, make_run
from tests.support.evalh_process import EVALH
from tests.support.evals import write_eval
from tests.support.pty_terminal import run_on_terminal

pytestmark = pytest.mark.integration


def _evalh(args, env, cwd):
    return run_on_terminal([*EVALH, *map(str, args)], env=env, cwd=cwd)


@pytest.fixture(scope="module")
def made_run(tmp_path_factory):
    """A judged, summarized run made in this process (no Dagster), and its eval folder."""
    folder = tmp_path_factory.mktemp("exit_codes") / "toy"
    return make_run(folder, GOOD, "r1_good", cases=3), folder


def test_a_read_only_command_that_did_its_work_exits_0(made_run, env, tmp_path):
    run, _ = made_run
    session = _evalh(["inspect", run], env, tmp_path)
    assert session.returncode == EXIT_OK, session.text


def test_an_invalid_config_exits_1_with_one_line_per_problem_and_writes_nothing(env, tmp_path):
    # "`1` the config or dataset is invalid (nothing is written under `runs/`)"
    path = write_eval(tmp_path / "bad", cases=2, evaluators="""
  - name: nope
    type: no_such_evaluator
""")
    session = _evalh(["run", path], env, tmp_path)
    assert session.returncode == EXIT_CONFIG, session.text
    assert "no_such_evaluator" in session.text and "Traceback" not in session.text
    assert not (tmp_path / "bad" / "runs").exists()


def test_a_dry_run_that_finds_a_problem_exits_1_and_writes_nothing(env, tmp_path):
    # "Each problem is one line, `eval.yaml:LINE systems[i].KEY: …`, and the dry run exits `1`."
    path = write_eval(tmp_path / "typo", cases=2, systems="""
  - name: base
    adapter: python_function
    target: stub_agnet:run
""")
    session = _evalh(["run", path, "--dry-run"], env, tmp_path)
    assert session.returncode == EXIT_CONFIG, session.text
    assert "eval.yaml:" in session.text and "systems[0]" in session.text and "Traceback" not in session.text
    assert not (tmp_path / "typo" / "runs").exists()


def test_an_instance_folder_that_is_not_a_folder_exits_2_before_the_system_is_called(env, tmp_path):
    # "a `DAGSTER_HOME` that is not a folder … ends the command with one line saying what and
    # where (exit `2`), before the system is called."
    home = tmp_path / "not_a_folder"
    home.write_text("a file where the Dagster instance belongs")
    path = write_eval(tmp_path / "toy", cases=2)
    session = _evalh(["run", path], {**env, "DAGSTER_HOME": str(home)}, tmp_path)
    assert session.returncode == EXIT_INFRA, session.text
    assert str(home) in session.text.replace("\n", "") and "Traceback" not in session.text
    assert not (tmp_path / "calls.log").exists()  # the stub agent logs every call it gets


def test_a_second_writer_of_a_run_exits_2_naming_the_holder(made_run, env, tmp_path):
    # "a second one on the same run exits `2` naming the holder (`… is being written by
    # another process (pid 4242: evalh run --resume, since …)`)"
    run, _ = made_run
    with hold_run_directory(run, "evalh re-evaluate (this test)"):
        session = _evalh(["re-evaluate", run], env, tmp_path)
    assert session.returncode == EXIT_INFRA, session.text
    assert "is being written by another process" in session.text and "this test" in session.text


def test_a_folder_that_is_not_a_run_exits_2(made_run, env, tmp_path):
    # "a folder that is not a run exits `2`"
    run, _ = made_run
    session = _evalh(["compare", tmp_path, run], env, tmp_path)
    assert session.returncode == EXIT_INFRA, session.text
    assert "Traceback" not in session.text


def test_bad_input_no_command_reported_is_one_error_line_and_exit_1(capfd):
    # Any UserError that reaches the group: one `error:` line, no traceback, exit 1.
    group = _EvalhGroup(name="evalh")

    @group.command()
    def broken() -> None:
        raise UserError("cases.jsonl:3 input: expected an object")

    with pytest.raises(SystemExit) as ended:
        group.main(["broken"], prog_name="evalh")
    assert ended.value.code == EXIT_CONFIG
    assert capfd.readouterr().err.strip() == "error: cases.jsonl:3 input: expected an object"
