"""The fixture sensor reads the user's repository while the user commits in it: no commit of
theirs may fail for it.

A real repository of 20,000 files (the eval's ``copy_from`` tree), a real ``git add -A`` /
``git commit`` loop as the user runs it, and beside it the sensor's own evaluation (its real
``git rev-parse``, ``ls-tree``, ``status`` and ``log``) tick after tick. A ``git status``
that refreshed the index would hold ``.git/index.lock`` and make the user's command fail
with ``Unable to create '.../index.lock': File exists``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import dagster as dg
import pytest

from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.runner.loading import load_eval
from tests.support.evals import write_eval

pytestmark = pytest.mark.integration

FILES = 20_000
COMMITS = 40
USER = ("-c", "user.name=user", "-c", "user.email=user@example.com", "-c", "commit.gpgsign=false")

# The user's side: commit after commit of a file no eval names; every failure is counted and
# its message kept, the loop goes on.
USER_LOOP = textwrap.dedent("""
    import subprocess, sys
    repo, commits, user = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    failures = []
    for i in range(commits):
        with open(f"{repo}/NOTES.md", "a") as notes:
            notes.write(f"note {i}\\n")
        for args in (["add", "-A"], ["commit", "-q", "-m", f"note {i}"]):
            done = subprocess.run(["git", "-C", repo, *user, *args], capture_output=True, text=True)
            if done.returncode != 0:
                failures.append(f"git {args[0]}: {done.stderr.strip()}")
                break
    print("\\n".join(failures))
    sys.exit(1 if failures else 0)
""")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *USER, *args], check=True, capture_output=True, timeout=120)


def _large_repository(repo):
    """An eval whose copy_from tree holds FILES files, all committed."""
    write_eval(repo / "toy", extra_yaml="workspace:\n  type: tempdir_snapshot\n  copy_from: fixture\n")
    fixture = repo / "toy" / "fixture"
    for folder in range(FILES // 100):
        (fixture / f"d{folder}").mkdir(parents=True)
        for name in range(100):
            (fixture / f"d{folder}" / f"f{name}.txt").write_text(f"{folder} {name}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "eval and its fixture")


def test_the_users_commits_never_fail_while_the_fixture_sensor_reads_their_repository(tmp_path, instance):
    repo = tmp_path / "repo"
    repo.mkdir()
    _large_repository(repo)
    spec = load_eval(repo / "toy" / "eval.yaml")
    defs, _ = build_definitions([spec])
    sensor = defs.resolve_sensor_def("toy__fixtures_changed")
    first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, definitions=defs))
    assert first.cursor, first.skip_message

    user = subprocess.Popen([sys.executable, "-c", USER_LOOP, str(repo), str(COMMITS), *USER],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ticks = []
    try:
        while user.poll() is None:
            context = dg.build_sensor_context(instance=instance, cursor=first.cursor, definitions=defs)
            ticks.append(sensor.evaluate_tick(context))
        output, _ = user.communicate(timeout=60)
    finally:
        if user.poll() is None:
            user.kill()
            user.wait()

    assert user.returncode == 0, f"the user's git failed beside the sensor:\n{output}"
    # The sensor did read the repository meanwhile, and its commits touch no input of the eval.
    assert ticks and all(t.run_requests == [] and t.cursor == first.cursor for t in ticks)
    assert all("fixtures unchanged" in (t.skip_message or "") for t in ticks), ticks[-1].skip_message
