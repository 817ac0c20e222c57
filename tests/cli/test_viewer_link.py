"""`evalh run` prints the run's page in `evalh view` when a viewer is running, and nothing when none is."""

from __future__ import annotations

import subprocess
import urllib.request

import pytest

from evalh_pipeline.view.links import VIEWER_URL_ENV
from tests.support.evalh_process import EVALH, run_evalh
from tests.support.evals import write_eval
from tests.support.readiness import wait_until_answering
from tests.support.http_server import free_port

pytestmark = pytest.mark.e2e

# How long a cold `evalh view` may take to answer /healthz on a loaded machine (a bound, not a pace).
STARTUP_TIMEOUT_S = 120


def _started_run_id(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("starting run ")]
    return line.split()[2]


def test_run_prints_the_viewer_url_when_a_viewer_runs(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=1)
    runs = path.parent / "runs"
    runs.mkdir()
    url = f"http://127.0.0.1:{free_port()}"
    env = {**env, VIEWER_URL_ENV: url}
    log = tmp_path / "view.log"
    with log.open("w") as out:
        viewer = subprocess.Popen([*EVALH, "view", str(runs), "--port", url.rsplit(":", 1)[1]], cwd=tmp_path, env=env,
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until_answering(viewer, f"{url}/healthz", log, what="evalh view", timeout_s=STARTUP_TIMEOUT_S)
        proc = run_evalh(["run", str(path)], env, tmp_path)
        assert proc.returncode == 0, proc.stderr
        run_id = _started_run_id(proc.stderr)
        (printed,) = [line for line in proc.stdout.splitlines() if line.startswith("viewer: ")]
        assert printed == f"viewer: {url}/runs/{run_id}"
        # The printed page is the run's page of the viewer that answered.
        with urllib.request.urlopen(printed.removeprefix("viewer: "), timeout=60) as page:
            assert page.status == 200 and run_id in page.read().decode()
    finally:
        viewer.terminate()
        viewer.wait(timeout=60)


def test_run_prints_no_viewer_url_when_none_answers(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=1)
    env = {**env, VIEWER_URL_ENV: f"http://127.0.0.1:{free_port()}"}

    proc = run_evalh(["run", str(path)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "viewer:" not in proc.stdout
